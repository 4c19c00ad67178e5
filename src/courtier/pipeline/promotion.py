"""The controlled crawl's cycle while a crawl runs: rank the host graph, promote the best
horizon hosts into the seed, and crawl them from then on (scope, origin, robots.txt and all).

Every ``[frontier] rank_every`` seconds, when ``[frontier] promote`` > 0: what the crawl has
seen is written first (the graph is ranked as seen, not as still buffered), then
``graph.cycle.ranking_cycle`` runs on the store thread and each promoted host is admitted.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from courtier.config import Config
from courtier.graph.cycle import ranking_cycle
from courtier.graph.pagerank import GraphError
from courtier.pipeline.frontier_io import FrontierIO
from courtier.pipeline.stats import CrawlStats

log = logging.getLogger("courtier.pipeline.engine")


async def rank_loop(
    config: Config,
    frontier: FrontierIO,
    stats: CrawlStats,
    *,
    flush: Callable[[], Awaitable[None]],
    admit: Callable[[str], None],
) -> None:
    k = config.frontier.promote
    if k <= 0:
        return
    while True:
        await asyncio.sleep(config.frontier.rank_every)
        await flush()
        try:
            cycle, _seen, _n = await frontier.call(ranking_cycle, frontier.store, k, time.time())
        except GraphError as exc:
            log.warning("ranking cycle skipped: %s", exc)
            continue
        for decision in cycle.promoted:
            admit(decision.host)
            stats.promoted.append((decision.host, decision.score))
