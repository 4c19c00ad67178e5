"""``courtier fresh list --store S``: the fast sources of a crawl, and why each is one.

Read from the store only (SQLite or PostgreSQL), so it works while the crawl runs or after.
Each watched page (``frontier.fresh``) with its state (``hand``: the configured list;
``source``: found moving, in the freshlane; ``probing``: a candidate being learned), its
interval, the evidence that made it a candidate, how many of its looks found news, and when
it last changed. Pages that were watched and went quiet are counted, and listed with
``--all``.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import asdict
from typing import Any

from courtier.cli.store_input import UsageError, emit, fail, open_store
from courtier.frontier.fresh import FreshSource, FreshState

_ORDER = {FreshState.HAND: 0, FreshState.SOURCE: 1, FreshState.PROBING: 2, FreshState.QUIET: 3}


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "fresh",
        help="the crawl's fast sources: found automatically or listed by hand",
        description="Fast sources are pages looked at as often as once a minute because they "
        "keep bringing new links (home pages, feeds, recent sitemaps, critical or popular "
        "pages); the crawl finds them itself, and [frontier] freshlane lists them by hand.",
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = actions.add_parser("list", help="list the fast sources and their evidence")
    listing.add_argument(
        "--store", required=True, metavar="STORE", help="the crawl's store (SQLite path or URL)"
    )
    listing.add_argument("--all", action="store_true", help="also the pages that went quiet")
    listing.add_argument("--json", action="store_true", help="one JSON object on stdout")
    listing.set_defaults(handler=run_list)


def run_list(args: argparse.Namespace) -> int:
    try:
        store = open_store(args.store)
    except UsageError as exc:
        return fail("fresh list", str(exc))
    try:
        sources = store.fresh_sources()
    finally:
        store.close()
    quiet = [s for s in sources if s.state is FreshState.QUIET]
    shown = sorted(
        (s for s in sources if args.all or s.state is not FreshState.QUIET),
        key=lambda s: (_ORDER[s.state], s.interval, s.url),
    )
    if args.json:
        emit({"sources": [_document(s) for s in shown], "quiet": len(quiet)})
        return 0
    now = time.time()
    if not shown:
        print("no fast sources" + (f" ({len(quiet)} pages watched went quiet)" if quiet else ""))
        return 0
    print(f"{'state':<8} {'every':>7} {'news':>7}  {'changed':>9}  evidence / URL")
    for s in shown:
        changed = "-" if s.last_change is None else _ago(now - s.last_change)
        news = f"{s.productive}/{s.visits}"
        print(f"{s.state.value:<8} {_every(s.interval):>7} {news:>7}  {changed:>9}  {s.url}")
        print(f"{'':>36}{s.evidence}")
    if quiet and not args.all:
        print(f"{len(quiet)} pages watched went quiet (--all lists them)")
    return 0


def _document(source: FreshSource) -> dict[str, Any]:
    document = asdict(source)
    document["state"] = source.state.value
    document.pop("fingerprint")
    return document


def _every(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _ago(seconds: float) -> str:
    return f"{_every(max(0.0, seconds))} ago"
