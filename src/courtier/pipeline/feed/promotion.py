"""The controlled crawl's cycle while a crawl runs: rank the host graph, promote the best
horizon hosts into the seed, and crawl them from then on (scope, origin, robots.txt and all).

Every ``[frontier] rank_every`` seconds, when ``[frontier] promote`` > 0: what the crawl has
seen is written first (the graph is ranked as seen, not as still buffered), then
``graph.cycle.ranking_cycle`` runs on the store thread and each promoted host is admitted.
The ranking (numpy, scipy) is imported there too, at the first cycle: a crawl that never
ranks, the default, does not pay for it before its first request.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from courtier.config import Config
from courtier.pipeline.feed.frontier_io import FrontierIO
from courtier.pipeline.scheduling.timer import Timer, sleep_until
from courtier.pipeline.stats import CrawlStats

if TYPE_CHECKING:
    from courtier.frontier.base import FrontierStore
    from courtier.graph.promotion import PromotionRound

log = logging.getLogger(__name__)


async def rank_loop(
    config: Config,
    frontier: FrontierIO,
    stats: CrawlStats,
    *,
    flush: Callable[[], Awaitable[None]],
    admit: Callable[[str], object],
    timer: Timer,
) -> None:
    k = config.frontier.promote
    if k <= 0:
        return
    while True:
        await sleep_until(timer, timer.now() + config.frontier.rank_every)
        await flush()
        cycle = await frontier.call(_ranked, frontier.store, k, timer.now())
        if isinstance(cycle, str):
            log.warning("ranking cycle skipped: %s", cycle)
            continue
        for decision in cycle.promoted:
            admit(decision.host)
            stats.promoted.append((decision.host, decision.score))
        if cycle.promoted:  # the other workers of a shared crawl admit them too
            await frontier.call(_log_promotions, frontier.store, cycle, timer.now())


def _log_promotions(store: FrontierStore, cycle: PromotionRound, now: float) -> None:
    from courtier.frontier.controls import ControlAction
    from courtier.runtime.processes import process_tag

    for decision in cycle.promoted:
        detail = {"score": decision.score}
        action = ControlAction("promote", decision.host, detail, "crawl", process_tag(), now)
        store.record_control(action)


def _ranked(store: FrontierStore, k: int, now: float) -> PromotionRound | str:
    """One ranking cycle on the store thread; why it was skipped, for a graph that cannot be
    ranked."""
    from courtier.graph.cycle import ranking_cycle
    from courtier.graph.pagerank import GraphError

    try:
        return ranking_cycle(store, k, now)[0]
    except GraphError as exc:
        return str(exc)
