"""``courtier recrawl --store PATH URL...``: the fastlane, an immediate one-off fetch on demand.

Rules:
- Each URL is made due now in the fastlane (``FrontierStore.recrawl``), which the due query
  serves before every other lane; after that one fetch the URL returns to its usual lane. It
  jumps the queue, never politeness: the request is booked like any other.
- Unknown URLs are inserted (depth 0). A URL already leased is being fetched and is left alone
  (it is not counted as scheduled).
- Every URL must parse and belong to a site in the seed (seed or requested); otherwise nothing
  is written: a bad URL exits 2, a URL outside the seed exits 1 (add its site with
  ``courtier seed add`` first).
- The store must exist (``courtier.cli.seed`` states the rules shared by these commands).
"""

from __future__ import annotations

import argparse
import sys

from courtier.cli.actions import actor, command_line
from courtier.cli.store_input import (
    UsageError,
    emit,
    fail,
    open_store,
    out_of_scope,
    parse_page_urls,
)
from courtier.frontier.fastlane import recrawl


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "recrawl",
        help="fetch these URLs again as soon as politeness allows (fastlane)",
        description="Schedule an immediate one-off fetch of each URL: it jumps the queue of "
        "its site but is booked like any request. URLs must belong to the seed.",
    )
    parser.add_argument("urls", nargs="+", metavar="URL", help="page URLs")
    parser.add_argument(
        "--store",
        required=True,
        metavar="PATH",
        help="the crawl's store: a SQLite file or a PostgreSQL URL",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    parser.set_defaults(handler=run_recrawl)


def run_recrawl(args: argparse.Namespace) -> int:
    try:
        urls = list({u.canonical: u for u in parse_page_urls(args.urls)}.values())
        store = open_store(args.store)
    except UsageError as exc:
        return fail("recrawl", str(exc))
    try:
        refused = out_of_scope(urls, store.site_states())
        if refused:
            sites = ", ".join(sorted({u.site for u in refused}))
            return fail(
                "recrawl",
                f"not in the seed: {sites} (add with 'courtier seed add' first); nothing scheduled",
                1,
            )
        scheduled = recrawl(store, urls, command=command_line(sys.argv[1:]), actor=actor())
    finally:
        store.close()
    if args.json:
        emit({"urls": len(urls), "scheduled": scheduled, "being_fetched": len(urls) - scheduled})
    else:
        print(f"{scheduled} of {len(urls)} URLs scheduled in the fastlane")
        if scheduled < len(urls):
            print(f"{len(urls) - scheduled} already being fetched, left alone")
    return 0
