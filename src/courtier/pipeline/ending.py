"""How a crawl ends: the reasons, the watch that ends it by itself, and the drain after.

A crawl ends for one reason, the first that comes (``CrawlStats.ended_by``):
- ``duration``: ``--duration`` ran out; ``signal``: SIGINT or SIGTERM; ``stopped``: asked
  from code (``Crawler.stop()``, a failing sink);
- ``max_requests``, ``max_pages``, ``max_bytes``: a budget is spent (``scheduling.budget``);
- ``until-done``: nothing is due before the refresh lane's next fetch.

"Done" (``--until-done``) means every URL of the frontier reachable inside the seed has been
fetched once, or finally failed or been refused, and the only work left is refreshes
scheduled in the future. Work is anything that will start without anything new arriving:
a URL due now (discovery, fastlane, a refresh fallen due), a URL leased to a lane, a retry
or a backoff's pause waiting, a robots.txt not in yet or unreachable for now (asked again at
``robots.retry_unreachable``), a robots.txt redirect hop, a render's request, a media URL
queued. What is not work: a site suspended for the run (``crawl-delay-too-long``, or by a
run of failures, ``politeness.suspend_after_errors``), a full site's new URLs
(``max_pages_per_site``), ranking cycles to come (``[frontier] promote``: a promotion is a
new seed, not work left). It is judged in two steps:
1. At rest (``at_rest``), looked at every ``LOOK_EVERY`` s: no task of the crawl running
   (fetches, parses, WARC captures, origin lookups: ``Engine.tasks``), no lane holding or
   booking work, every site lane's last refill short (``SiteLane.store_empty``) and none out,
   the discovery's and the store's buffers empty and no store call under way. It must hold,
   with no progress (bookings, requests, new URLs), for ``settle`` seconds (at least two
   flushes): a discovery still on its way from a parse to the store shows up meanwhile.
2. Then the store is asked (``due_sites``): a site with a URL due now that its lane has not
   seen (a refresh fallen due, a sitemap's lastmod) looks again, and the watch starts over.

A crawl ended by a budget or by ``until-done`` lets its requests in flight finish
(``grace``: up to the fetch's and the parse's own time limits); a signal or ``stop()``
gives them ``STOP_GRACE`` seconds.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable, Collection, Iterable, Mapping

from courtier.config import Config
from courtier.frontier.base import FrontierStore
from courtier.pipeline.feed.discovery import Discovery
from courtier.pipeline.feed.frontier_io import FrontierIO
from courtier.pipeline.lanes.media_lane import MediaLane
from courtier.pipeline.lanes.site import SiteLane
from courtier.pipeline.scheduling.budget import Budget, Budgets, Spend
from courtier.pipeline.scheduling.lanes import LaneState, Phase
from courtier.pipeline.scheduling.timer import sleep_until
from courtier.pipeline.stats import CrawlStats
from courtier.pipeline.wiring import Parts, Stages

log = logging.getLogger(__name__)

LOOK_EVERY = 0.2
"""Seconds between two looks at the crawl (budgets, rest)."""
SAVE_EVERY = 2.0
"""Seconds between two saves of the run's spend to the store (and at the end): a SIGKILL
loses at most this much of it."""
STOP_GRACE = 2.0
"""Seconds requests in flight get after a signal or ``stop()``."""
SELF_ENDED = frozenset({"until-done", "max_requests", "max_pages", "max_bytes"})
"""Reasons the crawl gave itself: its requests in flight finish (``grace``)."""


# -- the pure decision ------------------------------------------------------------------------


class DoneWatch:
    """Says "done" once the crawl has been seen at rest, with the same progress, for
    ``settle`` seconds and at least ``looks`` looks (time on the caller's clock)."""

    def __init__(self, settle: float, looks: int = 3) -> None:
        self.settle = settle
        self.looks = looks
        self._since: float | None = None
        self._seen = 0
        self._progress: object = None

    def look(self, now: float, at_rest: bool, progress: object) -> bool:
        if not at_rest or progress != self._progress or self._since is None:
            self._progress = progress
            self._since = now if at_rest else None
            self._seen = 1 if at_rest else 0
            return False
        self._seen += 1
        return self._seen >= self.looks and now - self._since >= self.settle

    def again(self) -> None:
        """Work turned up after all: start over."""
        self._since, self._seen = None, 0


def settle_of(config: Config) -> float:
    """How long the crawl must stay at rest: two flushes, and never under a second."""
    return max(1.0, 2 * config.crawl.flush_interval + LOOK_EVERY)


def grace(reason: str, config: Config, duration: float | None, left: float) -> float:
    """Seconds requests in flight get once the crawl stops for ``reason`` (``left``: of the
    duration, if there is one; a crawl ends within its duration whatever ended it)."""
    if reason in SELF_ENDED:
        wait = config.fetch.total_timeout + config.crawl.parse_timeout
        return wait if duration is None else max(0.2, min(wait, left))
    if duration is not None:
        return min(STOP_GRACE, max(0.2, duration * 0.05))
    return STOP_GRACE


# -- looking at the crawl ---------------------------------------------------------------------


def _idle(state: LaneState[object]) -> bool:
    if state.phase is Phase.DROPPED:
        return True
    return state.phase is Phase.IDLE and state.work is None and not state.in_flight


def site_at_rest(lane: SiteLane, hops: bool) -> bool:
    """The lane holds no work and will take none from its store until something changes
    (``hops``: robots.txt redirect hops wait for it)."""
    if lane.sched.phase is Phase.DROPPED:
        return True
    if lane.suspended_reason is not None or lane.backoff.suspended:
        return not lane.sched.in_flight  # suspended for the run: what it holds is no work
    return (
        _idle(lane.sched)
        and not lane.queue
        and not lane.renders
        and not lane.rendering
        and not lane.refill_requested
        and lane.store_empty
        and not hops
    )


def media_at_rest(lane: MediaLane, suspended: bool) -> bool:
    if suspended or lane.backoff.suspended:
        return not lane.sched.in_flight
    return _idle(lane.sched) and not lane.queue


def at_rest(
    stages: Stages,
    sites: Iterable[SiteLane],
    tasks: Collection[object],
    frontier: FrontierIO,
    discovery: Discovery,
) -> bool:
    """Nothing of the crawl runs, waits to start, or waits to be written (module rules)."""
    if tasks or not frontier.quiet or discovery.new_urls:
        return False
    hops = stages.site_lanes.robots_hops.queued
    if not all(site_at_rest(lane, bool(hops.get(lane.name))) for lane in sites):
        return False
    media = stages.media
    if media is None:
        return True
    return all(
        media_at_rest(lane, media.hosts[lane.site].suspended_reason is not None)
        for lane in media.lanes.values()
    )


def due_sites(
    store: FrontierStore, sites: list[str], full: Collection[str], now: float, limit: int
) -> list[str]:
    """The sites of ``sites`` with a URL due at ``now`` that their lane may fetch (a full
    site's new URLs are not; ``limit``: URLs read per full site)."""
    open_sites = [site for site in sites if site not in full]
    due = list(store.due(1, open_sites, now)) if open_sites else []
    capped = [site for site in sites if site in full]
    if capped:
        found = store.due(limit, capped, now)
        due += [site for site, urls in found.items() if any(u.fetched_at for u in urls)]
    return sorted(due)


# -- the watch --------------------------------------------------------------------------------


class EndWatch:
    """Ends the crawl by itself (``stop(reason)``) when a budget is spent or, with
    ``until_done``, when it is done; saves the run's spend to the store as it goes."""

    def __init__(
        self, parts: Parts, stages: Stages, until_done: bool, stop: Callable[[str], None]
    ) -> None:
        self.config, self.stages, self.until_done, self.stop = (
            parts.config,
            stages,
            until_done,
            stop,
        )
        self.sites: Mapping[str, SiteLane] = parts.seed.lanes
        self.tasks: Collection[object] = parts.tasks
        self.frontier, self.discovery = parts.frontier, parts.discovery
        self.stats, self.timer, self.budget = parts.stats, parts.timer, parts.budget

    def progress(self) -> tuple[int, ...]:
        stats = self.stats
        return (stats.slots, stats.requests, stats.new_urls, sum(stats.refused.values()))

    async def run(self) -> None:
        done = DoneWatch(settle_of(self.config))
        saved_at = self.timer.now()
        while True:
            await sleep_until(self.timer, self.timer.now() + LOOK_EVERY)
            now = self.timer.now()
            if self.budget is not None:
                reason = self.budget.exhausted()
                if reason is not None:
                    self.stop(reason)
                    return
                if now - saved_at >= SAVE_EVERY:
                    saved_at = now
                    await self.save()
            if not self.until_done:
                continue
            rest = at_rest(
                self.stages, self.sites.values(), self.tasks, self.frontier, self.discovery
            )
            if not done.look(now, rest, self.progress()):
                continue
            if await self._found_due(now):
                done.again()
                continue
            log.info("nothing is due before the refresh lane's next fetch: the crawl ends")
            self.stop("until-done")
            return

    async def _found_due(self, now: float) -> bool:
        """The store has work for a lane that thought it had none: it looks again."""
        lanes = [
            lane
            for lane in self.sites.values()
            if lane.sched.phase is not Phase.DROPPED
            and lane.suspended_reason is None
            and not lane.backoff.suspended
        ]
        budget = self.budget
        full = {lane.site for lane in lanes if budget is not None and budget.site_full(lane.site)}
        store, limit = self.frontier.store, self.config.crawl.queue_per_site
        sites = [lane.site for lane in lanes]
        found = await self.frontier.call(due_sites, store, sites, full, now, limit)
        for site in found:
            log.info("%s has work due in the store: it looks again", site)
            self.stages.site_lanes.look_again(self.sites[site])
        return bool(found)

    async def finish(self) -> None:
        """The run ends: its spend saved, a full site's new URLs set aside given back."""
        await self.save()
        lanes = self.stages.feeder.budget
        if lanes is not None and lanes.set_aside:
            ids, lanes.set_aside = lanes.set_aside, []
            store = self.frontier.store
            await self.frontier.call(lambda: store.release_leases(ids=ids))

    async def save(self) -> None:
        """Add the run's spend since the last save to the store's."""
        budget = self.budget
        if budget is None:
            return
        added = budget.saving()
        if added != Spend():
            totals = await self.frontier.call(self.frontier.store.add_spent, added.as_dict())
            budget.saved(added, Spend.of(totals))
        self.stats.spent = budget.total.as_dict()


async def wait_for_end(
    stopped: asyncio.Event, duration: float | None, stop: Callable[[str], None]
) -> float:
    """Until the crawl is stopped, or its ``duration`` (less room for in-flight requests and
    the final flush) runs out; the ``time.monotonic()`` by which the duration wants the
    requests in flight done (inf: no duration)."""
    if duration is None:
        await stopped.wait()
        return math.inf
    room = min(5.0, max(0.5, duration * 0.1))
    ends_at = time.monotonic() + duration - room / 2
    try:
        await asyncio.wait_for(stopped.wait(), max(0.0, duration - room))
    except TimeoutError:
        stop("duration")
    return ends_at


async def drain(tasks: set[asyncio.Task[None]], seconds: float) -> None:
    """Give the tasks in flight ``seconds`` to end, then cancel the rest."""
    if not tasks:
        return
    _done, pending = await asyncio.wait(set(tasks), timeout=seconds)
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.gather(*pending, return_exceptions=True)


async def open_budget(
    config: Config, frontier: FrontierIO, stats: CrawlStats, stop: Callable[[str], object]
) -> Budget | None:
    """The crawl's budgets (``[crawl] max_*``) with what the store recorded; None: none set.
    A budget spent calls ``stop`` with its name, soon (never inside a start)."""
    crawl = config.crawl
    budgets = Budgets(
        crawl.max_requests, crawl.max_pages, crawl.max_bytes, crawl.max_pages_per_site
    )
    if not (budgets.ends_crawl or budgets.max_pages_per_site):
        return None
    spent = Spend.of(await frontier.call(frontier.store.spent))
    pages: dict[str, int] = {}
    if budgets.max_pages_per_site:
        pages = await frontier.call(frontier.store.fetched_per_site)
    log.info("budgets: %s; spent by earlier runs: %s", budgets, spent)
    loop = asyncio.get_running_loop()

    def ended(reason: str) -> None:
        loop.call_soon(stop, reason)

    return Budget(budgets, spent, pages, run_bytes=lambda: stats.bytes, ended=ended)
