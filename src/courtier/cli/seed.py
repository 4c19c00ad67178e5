"""``courtier seed``: the hosts a controlled crawl may fetch, and the pages it must keep fresh.

- ``seed add --store PATH HOST...`` requests hosts by name: each enters the store in state
  ``requested`` (crawled like a seed) with its root URL ``<scheme>://<site>/`` queued at depth
  0. A horizon host moves to ``requested``; a seed host stays seed; a suspended host stays
  suspended (resuming is an operator's decision, not a side effect) and the command exits 1.
- ``seed flag --store PATH URL...`` marks pages critical: the shortest refresh floor and
  ceiling (``courtier.frontier.refresh``). A flagged page not yet in the store is queued at
  depth 0 when its site is in the seed; a page of a site outside the seed is refused.
- ``seed remove --store PATH HOST...`` takes hosts out of the seed (``courtier site drop``).
- ``seed list --store PATH [--state S ...] [--json]`` lists sites and their state (default:
  seed, requested and suspended).

Rules shared by the commands of the controlled crawl (``seed``, ``rank``, ``recrawl``):
- Every host and URL from the user goes through ``courtier.url`` (a bare host is read as
  ``http://HOST/``); any invalid one is reported and nothing is written (exit 2).
- Only ``seed add`` may create a store; the other commands need an existing one (exit 2), so
  a mistyped ``--store`` never yields an empty answer that looks real.
- A running crawl takes ``seed add``, ``seed remove``, ``recrawl`` and ``rank --promote``
  within seconds, on either store: each is logged as an action its workers read
  (``courtier.cli.actions``); importance changes (``flag``, ``popular``) apply as URLs are
  next leased and fetched.
- Machine output (``--json``) is one JSON object per line on stdout; messages go to stderr.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from courtier.cli.actions import log_action
from courtier.cli.options import fraction
from courtier.cli.site import run_site
from courtier.cli.store_input import (
    IN_SCOPE,
    UsageError,
    emit,
    fail,
    open_store,
    out_of_scope,
    parse_host,
    parse_page_urls,
)
from courtier.frontier.base import NewUrl, SiteState
from courtier.frontier.refresh import Importance, popular_threshold
from courtier.url import Url

LISTED_BY_DEFAULT = (
    SiteState.SEED,
    SiteState.REQUESTED,
    SiteState.SUSPENDED,
    SiteState.OPTED_OUT,
)
ALL_STATES = (
    SiteState.SEED,
    SiteState.REQUESTED,
    SiteState.SUSPENDED,
    SiteState.HORIZON,
    SiteState.OPTED_OUT,
)


# -- the commands ---------------------------------------------------------------------------


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "seed",
        help="request hosts for the crawl, flag critical pages, list the seed",
        description="Manage the seed of a controlled crawl in its frontier store. A running "
        "crawl takes added and removed hosts within seconds.",
    )
    commands = parser.add_subparsers(dest="seed_command", metavar="SUBCOMMAND", required=True)

    add = commands.add_parser(
        "add",
        help="request hosts by name (state requested, root URL queued)",
        description="Request hosts: each enters the store as 'requested' (crawled like a "
        "seed) with its root URL queued at depth 0. Creates the store if it does not exist. "
        "Exits 1 if a host is suspended (it stays suspended).",
    )
    add.add_argument("hosts", nargs="+", metavar="HOST", help="host, host:port or URL")
    _store_and_json(add)
    add.set_defaults(handler=run_add)

    flag = commands.add_parser(
        "flag",
        help="flag pages as critical (shortest refresh interval)",
        description="Flag pages as critical: their refresh interval is kept between 1 hour "
        "and 7 days. A page not yet known is queued when its site is in the seed.",
    )
    flag.add_argument("urls", nargs="+", metavar="URL", help="page URLs")
    _store_and_json(flag)
    flag.set_defaults(handler=run_flag)

    popular = commands.add_parser(
        "popular",
        help="feed retrieval counts: the most-retrieved pages get shorter refresh floors",
        description="Read a feed of retrieval counts (lines 'URL COUNT', '#' comments) and mark "
        "the pages in its top fraction popular: their refresh interval is kept between 6 hours "
        "and 30 days. Pages not in the store are reported and skipped.",
    )
    popular.add_argument("--counts", type=Path, required=True, help="the feed file ('-': stdin)")
    popular.add_argument(
        "--top-fraction",
        type=fraction,
        default=0.1,
        help="share of the feed's pages that count as popular (default 0.1)",
    )
    _store_and_json(popular)
    popular.set_defaults(handler=run_popular)

    remove = commands.add_parser(
        "remove",
        help="take hosts out of the seed (as 'courtier site drop')",
        description="Take hosts out of the seed: state horizon, and a running crawl stops "
        "crawling them within seconds. Seeding them again brings them back.",
    )
    remove.add_argument("hosts", nargs="+", metavar="HOST", help="host, host:port or URL")
    _store_and_json(remove)
    remove.set_defaults(handler=run_remove)

    listing = commands.add_parser(
        "list",
        help="list sites and their state",
        description="List sites and their state (default: seed, requested, suspended).",
    )
    listing.add_argument(
        "--state",
        dest="states",
        action="append",
        choices=ALL_STATES,
        help="list sites in this state (repeatable)",
    )
    _store_and_json(listing)
    listing.set_defaults(handler=run_list)


def _store_and_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store",
        required=True,
        metavar="PATH",
        help="the crawl's store: a SQLite file or a PostgreSQL URL",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object per line on stdout")


def run_add(args: argparse.Namespace) -> int:
    try:
        roots = list({url.site: url for url in (parse_host(h) for h in args.hosts)}.values())
        store = open_store(args.store, create=True)
    except UsageError as exc:
        return fail("seed add", str(exc))
    try:
        now = time.time()
        # Root URLs first, then the state: an interruption in between leaves an inert URL
        # (its site is not in scope yet) rather than a requested site with nothing to fetch.
        store.write_batch([NewUrl(u.canonical, u.fetch_url, u.site, 0) for u in roots], [], [], now)
        store.add_sites([u.site for u in roots], SiteState.REQUESTED, now)
        states = store.site_states()
        for url in roots:  # a running crawl takes the site within seconds
            if states.get(url.site) in IN_SCOPE:
                log_action(store, "seed add", url.site, {"scheme": url.scheme}, now)
    finally:
        store.close()
    blocked = 0
    for url in roots:
        state = states.get(url.site, "unknown")
        in_scope = state in IN_SCOPE
        blocked += not in_scope
        if args.json:
            emit(
                {"site": url.site, "state": state, "root_url": url.fetch_url, "in_scope": in_scope}
            )
        elif in_scope:
            print(f"{url.site}\t{state}\t{url.fetch_url}")
        else:
            print(f"{url.site}\t{state}\tnot requested: the site is {state}")
    return 1 if blocked else 0


def run_remove(args: argparse.Namespace) -> int:
    args.sites, args.site_command, args.opt_out, args.reason = args.hosts, "drop", False, ""
    return run_site(args)


def run_flag(args: argparse.Namespace) -> int:
    try:
        urls = list({u.canonical: u for u in parse_page_urls(args.urls)}.values())
        store = open_store(args.store)
    except UsageError as exc:
        return fail("seed flag", str(exc))
    try:
        now = time.time()
        known = {u.canonical for u in urls if store.schedule_of(u.canonical) is not None}
        unknown = [u for u in urls if u.canonical not in known]
        refused = out_of_scope(unknown, store.site_states())
        if refused:
            listed = ", ".join(u.canonical for u in refused)
            return fail(
                "seed flag",
                f"not in the store and their site is not in the seed: {listed} "
                "(add the site with 'courtier seed add' first); nothing flagged",
                1,
            )
        store.write_batch(
            [NewUrl(u.canonical, u.fetch_url, u.site, 0) for u in unknown], [], [], now
        )
        missing = store.set_importance([u.canonical for u in urls], Importance.CRITICAL, now)
    finally:
        store.close()
    if missing:  # written a moment ago: only a concurrent eviction could remove them
        return fail("seed flag", f"vanished from the store: {', '.join(missing)}", 1)
    for url in urls:
        queued = url.canonical not in known
        if args.json:
            emit({"url": url.canonical, "importance": Importance.CRITICAL.value, "queued": queued})
        else:
            print(f"{url.canonical}\tcritical" + ("\t(queued)" if queued else ""))
    return 0


def _read_counts(path: Path) -> list[tuple[Url, int]]:
    text = sys.stdin.read() if str(path) == "-" else path.read_text(encoding="utf-8")
    rows: list[tuple[Url, int]] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        words = line.split()
        if len(words) != 2 or not words[1].isdigit():
            raise UsageError(f"{path}:{number}: expected 'URL COUNT', got {raw.strip()!r}")
        (url,) = parse_page_urls([words[0]])
        rows.append((url, int(words[1])))
    return rows


def run_popular(args: argparse.Namespace) -> int:
    try:
        rows = _read_counts(args.counts)
        threshold = popular_threshold([count for _url, count in rows], args.top_fraction)
        store = open_store(args.store)
    except (UsageError, ValueError, OSError) as exc:
        return fail("seed popular", str(exc))
    chosen = [url for url, count in rows if threshold is not None and count >= threshold]
    try:
        missing = set(
            store.set_importance([u.canonical for u in chosen], Importance.POPULAR, time.time())
        )
    finally:
        store.close()
    for url in chosen:
        known = url.canonical not in missing
        if args.json:
            emit({"url": url.canonical, "importance": Importance.POPULAR.value, "known": known})
        else:
            print(f"{url.canonical}\tpopular" + ("" if known else "\tnot in the store: skipped"))
    return 0


def run_list(args: argparse.Namespace) -> int:
    wanted = tuple(args.states or LISTED_BY_DEFAULT)
    try:
        store = open_store(args.store)
    except UsageError as exc:
        return fail("seed list", str(exc))
    try:
        states = store.site_states()
    finally:
        store.close()
    rows = sorted((site, state) for site, state in states.items() if state in wanted)
    for site, state in rows:
        if args.json:
            emit({"site": site, "state": state})
        else:
            print(f"{site}\t{state}")
    if not args.json:
        print(f"{len(rows)} sites", file=sys.stderr)
    return 0
