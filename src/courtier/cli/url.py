"""``courtier url explain``: print the canonical URL, host, site key, registrable domain and
object-store fields of each URL, or its error.

URLs come from the arguments or, when there are none, from standard input (one per line,
blank lines skipped), so thousands can be checked in one process. A bad URL prints its error
and the command goes on. Exit code: 0 if every URL parsed, 1 if any did not.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Iterator
from typing import TextIO

from courtier.url.explain import explain


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "url",
        help="inspect how Courtier canonicalises URLs",
        description="Tools for URL and host canonicalisation.",
    )
    commands = parser.add_subparsers(dest="url_command", metavar="SUBCOMMAND", required=True)
    explain_parser = commands.add_parser(
        "explain",
        help="show the canonical URL, host, site key, registrable domain and object store",
        description="Show what Courtier makes of each URL: the canonical (deduplication) URL, "
        "the URL fetched, the canonical host, the site key, the registrable domain and the "
        "object-store bucket, or the error. With no URL arguments, reads URLs from standard "
        "input, one per line. Exits 1 if any URL is invalid.",
    )
    explain_parser.add_argument("urls", nargs="*", metavar="URL", help="URLs to explain")
    explain_parser.add_argument(
        "--json", action="store_true", help="one JSON object per line on stdout"
    )
    explain_parser.set_defaults(handler=run_explain)


def _stdin_urls(stream: TextIO) -> Iterator[str]:
    # Bytes that are not UTF-8 must not stop a batch: they become lone surrogates, which
    # parse_url reports as an error for that one line.
    buffer = getattr(stream, "buffer", None)
    lines: Iterable[str] = (
        stream
        if buffer is None
        else (line.decode("utf-8", errors="surrogateescape") for line in buffer)
    )
    for line in lines:
        text = line.strip()
        if text:
            yield text


def _json_line(document: dict[str, object]) -> str:
    text = json.dumps(document, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates from undecodable input: escape them
        text = json.dumps(document)
    return text + "\n"


def run_explain(args: argparse.Namespace) -> int:
    urls: Iterable[str] = args.urls if args.urls else _stdin_urls(sys.stdin)
    failed = False
    out = sys.stdout
    for raw in urls:
        explanation = explain(raw)
        failed = failed or explanation.error is not None
        if args.json:
            out.write(_json_line(explanation.to_json()))
        else:
            out.write(explanation.to_text() + "\n")
    out.flush()
    return 1 if failed else 0
