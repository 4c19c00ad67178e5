"""What the commands on a frontier store share (``seed``, ``site``, ``rank``, ``recrawl``):
hosts and URLs read from the user, the store opened, and what happened said.

The rules they follow are ``courtier.cli.seed``'s: every host and URL goes through
``courtier.url``; only ``seed add`` may create a store; ``--json`` prints one object per line.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from courtier.frontier.base import FrontierError, FrontierStore, SiteState
from courtier.frontier.sqlite_store import SqliteFrontier
from courtier.inputs import (
    InputError,
    PostgresStore,
    check_sqlite_store,
    parse_store,
    prepare_directory,
)
from courtier.url import Url, UrlError, parse_url

IN_SCOPE = frozenset({SiteState.SEED, SiteState.REQUESTED})


class UsageError(InputError):
    """Bad input from the user: reported on stderr, exit code 2, nothing written."""


# -- helpers shared with ``courtier rank`` and ``courtier recrawl`` -------------------------


def open_store(store: Path | str, *, create: bool = False) -> FrontierStore:
    """Open the frontier ``--store`` names: a SQLite file (a missing one is a usage error
    unless ``create``, and so is a file that is not a SQLite database) or a PostgreSQL URL
    (the store of a crawl's workers: they take what is written within a refill)."""
    spec = parse_store(store)
    if isinstance(spec, PostgresStore):
        from courtier.frontier.postgres_store import PostgresFrontier

        try:
            return PostgresFrontier(spec.conninfo)
        except FrontierError as exc:
            raise UsageError(f"--store: {exc}") from exc
    try:
        check_sqlite_store(spec.path, create=create)
        if create:
            prepare_directory(spec.path.parent, name="--store")
    except InputError as exc:
        raise UsageError(str(exc)) from None
    try:
        return SqliteFrontier(spec.path)
    except FrontierError as exc:
        raise UsageError(str(exc)) from exc


def parse_host(text: str) -> Url:
    """A host (``example.com``, ``example.com:8080``) or URL, as the root URL of its site."""
    raw = text.strip()
    if not raw:
        raise UsageError("empty host")
    try:
        url = parse_url(raw if "://" in raw else f"http://{raw}/")
        return parse_url(f"{url.scheme}://{url.site}/")
    except UrlError as exc:
        raise UsageError(f"bad host {text!r}: {exc}") from exc


def parse_page_urls(texts: Iterable[str]) -> list[Url]:
    """Parse every URL; all errors are collected into one UsageError."""
    urls: list[Url] = []
    errors: list[str] = []
    for text in texts:
        try:
            urls.append(parse_url(text.strip()))
        except UrlError as exc:
            errors.append(f"bad URL {text!r}: {exc}")
    if errors:
        raise UsageError("; ".join(errors))
    return urls


def out_of_scope(urls: Sequence[Url], states: dict[str, str]) -> list[Url]:
    """The URLs whose site the crawl would never fetch (not seed or requested)."""
    return [url for url in urls if states.get(url.site) not in IN_SCOPE]


def emit(document: dict[str, object]) -> None:
    print(json.dumps(document, ensure_ascii=False))


def fail(command: str, message: str, code: int = 2) -> int:
    print(f"courtier {command}: {message}", file=sys.stderr)
    return code
