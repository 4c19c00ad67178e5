"""``courtier rank --store PATH [--promote K] [--top N] [--dry-run] [--json]``: one ranking cycle.

Builds the host graph from the store (``host_links``, ``site_states``), runs PageRank and the
promotion rules of ``courtier.graph.promotion`` and prints the top N hosts. With
``--promote K``, up to K horizon hosts that pass every rule enter the seed: the root URL
``http://<site>/`` is queued at depth 0, then the site's state becomes ``seed``, in the same
store. Each promotion is logged with its score (logger ``courtier.graph``) and printed.

Rules (beyond those of ``courtier.graph.promotion``: trust flows only from the seed, nothing
is promoted for being linked once, a link farm never rises):
- **Media hosts are never promoted.** Object-store endpoints and buckets
  (``courtier.url.object_store``) and the CDN and image-service hosts
  (``courtier.politeness.keys.KeyRules``) serve other sites' media and are fetched under their
  own limit keys; their root is not a site to crawl, however often seed pages embed them.
  They keep their place in the graph (they still absorb rank) but are not candidates.
- **Address literals are never promoted.** A host named by its IP address has no owner to
  judge by (no registrable domain), is the usual shape of SSRF bait (every spelling of one
  address, linked from every page) and is no site a user would name. Ranked, not a candidate.
- Root URL first, state second: an interruption in between leaves an inert queued URL, which
  the next cycle's promotion writes again harmlessly, never a seed site with nothing to fetch.
- The engine reads the seed at start-up, so promoted hosts are crawled from the next start.
- Output: the text table, or with ``--json`` one object per line, each with a ``type``:
  ``host`` (the top N), ``promoted``, ``held_back`` (outranked the last promoted host but
  failed a rule) and a final ``summary``.
"""

from __future__ import annotations

import argparse
import logging
import time
from collections.abc import Mapping
from pathlib import Path

from courtier.cli.seed import UsageError, emit, fail, open_store
from courtier.frontier.base import NewUrl, SiteState
from courtier.frontier.sqlite_store import SqliteFrontier
from courtier.graph.pagerank import GraphError
from courtier.graph.promotion import (
    CANDIDATE_STATE,
    HostLink,
    PromotionDecision,
    PromotionRound,
    PromotionRules,
    plan_promotions,
)
from courtier.pipeline.crawler import host_of_site
from courtier.politeness.keys import KeyRules
from courtier.url import UrlError, is_ip_address, object_store, parse_url

log = logging.getLogger("courtier.graph")

MEDIA_STATE = "media"
"""Stands in for ``horizon`` in the ranking's view of a media host: ranked, never a candidate."""
ADDRESS_STATE = "address"
"""Likewise for a host that is an IP address literal."""
_BUCKET_PROBE = "/courtier-probe/key"
"""A path that addresses a bucket on a path-style endpoint, so its host is recognised too."""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "rank",
        help="rank the host graph; promote the best horizon hosts to the seed",
        description="Run PageRank over the host graph in the frontier store (trust flows "
        "from the seed only) and print the top hosts. With --promote K, up to K horizon "
        "hosts that pass the promotion rules (linked from at least 2 seed hosts of 2 "
        "domains) enter the seed; the crawl fetches them from its next start.",
    )
    parser.add_argument("--store", type=Path, required=True, help="the crawl's frontier store")
    parser.add_argument(
        "--promote", type=_count, default=0, metavar="K", help="promote up to K horizon hosts"
    )
    parser.add_argument(
        "--top", type=_count, default=20, metavar="N", help="show the N best hosts (default 20)"
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="show what --promote would do, change nothing"
    )
    parser.add_argument("--json", action="store_true", help="one JSON object per line on stdout")
    parser.set_defaults(handler=run_rank)


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def is_media_host(site: str, rules: KeyRules | None = None) -> bool:
    """True for object-store endpoints and buckets, CDN and image-service hosts."""
    rules = rules or KeyRules()
    host = host_of_site(site)
    if host in rules.cdn_hosts or host in rules.imgsvc_hosts:
        return True
    try:
        return any(object_store(f"http://{site}{path}") for path in ("/", _BUCKET_PROBE))
    except UrlError:
        return False


def ranking_states(states: Mapping[str, str]) -> dict[str, str]:
    """The site states as the promotion rules should see them: media hosts and address
    literals in the horizon are not candidates."""
    return {site: _ranking_state(site, state) for site, state in states.items()}


def _ranking_state(site: str, state: str) -> str:
    if state != CANDIDATE_STATE:
        return state
    if is_ip_address(host_of_site(site)):
        return ADDRESS_STATE
    return MEDIA_STATE if is_media_host(site) else state


def promote(store: SqliteFrontier, decisions: tuple[PromotionDecision, ...], now: float) -> None:
    """Queue each promoted host's root URL, then move the hosts into the seed."""
    roots = [parse_url(f"http://{d.host}/") for d in decisions]
    store.write_batch([NewUrl(u.canonical, u.fetch_url, u.site, 0) for u in roots], [], [], now)
    store.add_sites([d.host for d in decisions], SiteState.SEED, now)
    for decision in decisions:
        log.info(
            "promoted %s to the seed: score %.6g, rank %d among horizon hosts, linked from "
            "%d seed hosts of %d domains",
            decision.host,
            decision.score,
            decision.rank,
            decision.seed_sources,
            decision.source_domains,
        )


def run_rank(args: argparse.Namespace) -> int:
    try:
        store = open_store(args.store)
    except UsageError as exc:
        return fail("rank", str(exc))
    try:
        links = [HostLink(e.src, e.dst, e.links) for e in store.host_links()]
        states = store.site_states()
        seen = ranking_states(states)
        try:
            cycle = plan_promotions(links, seen, PromotionRules(promote=args.promote))
        except GraphError as exc:
            return fail("rank", f"cannot rank the host graph: {exc}", 1)
        if cycle.promoted and not args.dry_run:
            promote(store, cycle.promoted, time.time())
    finally:
        store.close()
    _report(args, cycle, seen, len(links))
    return 0


def _report(
    args: argparse.Namespace, cycle: PromotionRound, states: Mapping[str, str], n_links: int
) -> None:
    ranking = cycle.ranking
    top = sorted(ranking.scores.items(), key=lambda item: (-item[1], item[0]))[: args.top]
    verb = "would promote" if args.dry_run else "promoted"
    summary: dict[str, object] = {
        "type": "summary",
        "hosts": len(ranking.scores),
        "links": n_links,
        "iterations": ranking.iterations,
        "converged": ranking.converged,
        "promote": args.promote,
        "promoted": [d.host for d in cycle.promoted],
        "dry_run": args.dry_run,
    }
    if args.json:
        for position, (host, score) in enumerate(top, start=1):
            emit(
                {
                    "type": "host",
                    "position": position,
                    "host": host,
                    "state": states.get(host, "unknown"),
                    "score": score,
                }
            )
        for decision in cycle.promoted:
            emit({"type": "promoted", "dry_run": args.dry_run, **decision.log_fields()})
        for decision in cycle.held_back:
            emit({"type": "held_back", **decision.log_fields()})
        emit(summary)
        return
    print(f"{'#':>4}  {'score':>10}  {'state':<9}  host")
    for position, (host, score) in enumerate(top, start=1):
        print(f"{position:>4}  {score:>10.6f}  {states.get(host, 'unknown'):<9}  {host}")
    for decision in cycle.promoted:
        print(
            f"{verb} {decision.host}: score {decision.score:.6g}, rank {decision.rank}, "
            f"{decision.seed_sources} seed hosts, {decision.source_domains} domains"
        )
    for decision in cycle.held_back:
        print(f"held back {decision.host}: score {decision.score:.6g}, {decision.reason}")
    if args.promote and not cycle.promoted:
        print("no horizon host passed the promotion rules")
    print(
        f"{summary['hosts']} hosts, {n_links} host links, {ranking.iterations} iterations"
        + ("" if ranking.converged else " (not converged)")
    )
