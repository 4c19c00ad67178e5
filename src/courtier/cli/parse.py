"""``courtier parse FILE|URL``: read a page as a crawl reads it and run the parse hook on it.

A FILE (a page saved from anywhere) is read as if ``--url BASE`` had answered it with status
200 and its type (``--type``, else its name's extension, else its first bytes: a PDF, an RSS
or Atom feed, else HTML): decoded, redacted, parsed, its main text and language taken, the
hook run (``pipeline.one_url.reading``), its links judged against a seed of BASE's site. A
URL (``http://`` or ``https://``) is fetched first exactly as ``courtier fetch`` fetches it
(robots.txt, guard, booking).

Printed: the document a crawl would write, the hook's fields, the links (after the hook's
``HookResult``: those it added and dropped are listed, with the priority it gave the URLs
the page brings); a hook that raises is shown with its traceback. Exit status: 0 read, 1
the hook (or the reader) failed or the URL brought no answer, 2 bad input (no such file,
no ``--url`` for a file, a type a crawl does not parse, a bad hook name, a host the SSRF
guard refuses).
"""

from __future__ import annotations

import argparse
import mimetypes
from pathlib import Path
from typing import Any

from courtier.cli.fetch import (
    EXIT_ANSWERED,
    EXIT_NOT_FETCHED,
    add_fetch_arguments,
    fetch_and_read,
    guard_of,
    refused,
    show,
    target,
    with_hook,
)
from courtier.cli.options import load_config
from courtier.config import Config
from courtier.inputs import InputError

PARSED_TYPES = {
    "html": "text/html",
    "htm": "text/html",
    "xhtml": "application/xhtml+xml",
    "pdf": "application/pdf",
    "rss": "application/rss+xml",
    "atom": "application/atom+xml",
}
"""A FILE's type by its extension: what a crawl parses (``answers.verdict``)."""
SNIFF_BYTES = 1024


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "parse",
        help="read a saved page (or a URL) as a crawl would and run the parse hook on it",
        description="Read FILE as a crawl reads a page that --url BASE answered (decoding, "
        "redaction, parse, main text and language, the parse hook), or fetch URL as "
        "'courtier fetch' does and read it. Prints the document, the hook's fields (a "
        "hook's exception with its traceback), the links it added and dropped and the "
        "priority it gave, and the links. Exit status: 0 read, 1 the "
        "hook failed or no answer came, 2 bad input.",
    )
    parser.add_argument("source", metavar="FILE|URL")
    parser.add_argument(
        "--url",
        metavar="BASE",
        help="the URL a FILE was fetched from: links are resolved against it, its site is "
        "the seed (required with a FILE)",
    )
    parser.add_argument(
        "--type",
        dest="content_type",
        metavar="TYPE",
        help="a FILE's Content-Type, e.g. 'text/html; charset=windows-1252' (default: "
        "from its extension, else its first bytes)",
    )
    add_fetch_arguments(parser)
    parser.set_defaults(handler=handle)


def _is_url(text: str) -> bool:
    return text.strip().lower().startswith(("http://", "https://"))


def handle(args: argparse.Namespace) -> int:
    config = with_hook(load_config(args), args.hook)
    if _is_url(args.source):
        for name, value in (("--url", args.url), ("--type", args.content_type)):
            if value is not None:
                raise InputError(f"{name}: only with a FILE (a URL's answer says it)")
        url = target(args.source)
        guard = guard_of(args)
        verdict = guard.judge_name(url.host)
        if verdict is not None and not verdict.allowed:
            raise refused(url, verdict.reason, verdict.detail)
        out, code = fetch_and_read(config, url, guard, args)
        show(out, args)
        return code
    out, code = read_saved(config, args)
    show(out, args)
    return code


def read_saved(config: Config, args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    from courtier.cli.page_report import report
    from courtier.cli.store_input import open_store
    from courtier.frontier.base import SiteState
    from courtier.inputs import parse_networks
    from courtier.pipeline.one_url.reading import read_file

    path = Path(args.source)
    try:
        body = path.read_bytes()
    except OSError as exc:
        raise InputError(f"FILE {path}: {exc.strerror or exc}") from None
    if args.url is None:
        raise InputError(
            f"FILE {path}: needs --url BASE, the URL it was fetched from (links are "
            "resolved against it)"
        )
    base = target(args.url, "--url")
    content_type = args.content_type or guess_type(path, body)
    media = content_type.partition(";")[0].strip().lower()
    if media not in PARSED_TYPES.values():
        raise InputError(
            f"--type {content_type!r}: a crawl parses HTML, XHTML, PDF, RSS and Atom only "
            f"({', '.join(sorted(set(PARSED_TYPES.values())))})"
        )
    policy = parse_networks(args.allow_net)
    seed: set[str] = set()
    if args.store is not None:  # its seed is the seed the links are judged against
        store = open_store(args.store)
        try:
            seed = set(store.sites_in_state(SiteState.SEED, SiteState.REQUESTED))
        finally:
            store.close()
    reading = read_file(config, body, base, content_type, seed, policy)
    out = report(config, asked=base.fetch_url, reading=reading, extra={"file": str(path)})
    return out, EXIT_NOT_FETCHED if reading.failed else EXIT_ANSWERED


def guess_type(path: Path, body: bytes) -> str:
    """A FILE's type: its extension's, else what its first bytes look like, else HTML."""
    known = PARSED_TYPES.get(path.suffix.lower().lstrip("."))
    if known is not None:
        return known
    head = body[:SNIFF_BYTES].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if head.startswith(b"%pdf-"):
        return "application/pdf"
    if b"<rss" in head:
        return "application/rss+xml"
    if b"<feed" in head and b"http://www.w3.org/2005/atom" in head:
        return "application/atom+xml"
    guessed, _ = mimetypes.guess_type(path.name)
    return guessed if guessed is not None and guessed in PARSED_TYPES.values() else "text/html"
