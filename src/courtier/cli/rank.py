"""``courtier rank --store PATH [--promote K] [--top N] [--dry-run] [--json]``: one ranking cycle.

Builds the host graph from the store (``host_links``, ``site_states``), runs PageRank and the
promotion rules of ``courtier.graph.promotion`` and prints the top N hosts. With
``--promote K``, up to K horizon hosts that pass every rule enter the seed: the root URL
``http://<site>/`` is queued at depth 0, then the site's state becomes ``seed``, in the same
store. Each promotion is logged with its score (logger ``courtier.graph``) and printed.

The ranking rules (media hosts and address literals are never promoted, root URL first) are
in ``courtier.graph.cycle``, which the crawl also runs on its own cadence.

Output: the text table, or with ``--json`` one object per line, each with a ``type``:
  ``host`` (the top N), ``promoted``, ``held_back`` (outranked the last promoted host but
  failed a rule) and a final ``summary``.
"""

from __future__ import annotations

import argparse
import logging
import time
from collections.abc import Mapping

from courtier.cli.actions import log_action
from courtier.cli.store_input import UsageError, emit, fail, open_store
from courtier.graph.cycle import ranking_cycle
from courtier.graph.pagerank import GraphError
from courtier.graph.promotion import PromotionRound

log = logging.getLogger("courtier.graph")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "rank",
        help="rank the host graph; promote the best horizon hosts to the seed",
        description="Run PageRank over the host graph in the frontier store (trust flows "
        "from the seed only) and print the top hosts. With --promote K, up to K horizon "
        "hosts that pass the promotion rules (linked from at least 2 seed hosts of 2 "
        "domains) enter the seed; a running crawl fetches them within seconds.",
    )
    parser.add_argument(
        "--store",
        required=True,
        metavar="PATH",
        help="the crawl's store: a SQLite file or a PostgreSQL URL",
    )
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


def run_rank(args: argparse.Namespace) -> int:
    try:
        store = open_store(args.store)
    except UsageError as exc:
        return fail("rank", str(exc))
    try:
        now = time.time()
        try:
            cycle, seen, n_links = ranking_cycle(store, args.promote, now, dry_run=args.dry_run)
        except GraphError as exc:
            return fail("rank", f"cannot rank the host graph: {exc}", 1)
        if not args.dry_run:
            for decision in cycle.promoted:  # running workers crawl it from now on
                log_action(store, "promote", decision.host, {"score": decision.score}, now)
    finally:
        store.close()
    _report(args, cycle, seen, n_links)
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
