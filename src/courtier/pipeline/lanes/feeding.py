"""Keeping the site lanes fed: leases in from the store, what was found out to it.

Rules:
- A lane whose queue ran dry asks for a refill; one ``lease_due`` call serves every lane
  that asked since the last one (``FrontierIO.next_refill``). URLs leased for a site this
  worker no longer holds (its shard went meanwhile) go straight back.
- Every ``crawl.flush_interval`` seconds, outcomes and discoveries are written in one
  transaction and the document sink is flushed; a site that had run dry and just received
  new URLs is refilled at once. A page that gave new URLs to a site with nothing to fetch
  and nothing due in the store (a seed site after its home page, above all) brings the
  flush forward, to ``HURRY_GAP`` after the last one: the site's next request no longer
  waits up to a whole interval for its links to reach the store.
- Every ``crawl.due_recheck`` seconds, sites whose store had nothing due look again: refresh
  work falls due with time, and ``courtier recrawl`` (fastlane) adds work from outside.
- The priority path: a site that received fastlane or freshlane URLs (a fast source's fresh
  links, an operator's recrawl) leases them at once, even while it holds other URLs; the
  lease serves them first and ``next_url`` takes them before anything the site held. So
  fresh work overtakes a backlog in memory (priority changes the order, never the spacing).
  A site holds at most twice ``crawl.queue_per_site`` URLs this way.
- A site with ``[crawl] max_pages_per_site`` URLs fetched takes no new URL from a refill
  (``page_budget``).
"""

from __future__ import annotations

import asyncio
from typing import Final

from courtier.config import Config
from courtier.pipeline.feed.discovery import Discovery
from courtier.pipeline.feed.frontier_io import FrontierIO
from courtier.pipeline.lanes.page_budget import LaneBudget
from courtier.pipeline.lanes.pages import SiteLanes
from courtier.pipeline.lanes.site import SiteLane
from courtier.pipeline.scheduling.scheduler import Scheduler
from courtier.pipeline.scheduling.timer import Timer, sleep_until, wait_until
from courtier.pipeline.stats import CrawlStats
from courtier.sinks.documents import Sink

HURRY_GAP: Final = 0.1
"""The soonest a flush follows the last one when a site waits for what a page found."""


class Feeder:
    def __init__(
        self,
        config: Config,
        *,
        frontier: FrontierIO,
        sites: dict[str, SiteLane],
        site_lanes: SiteLanes,
        pages: Scheduler[SiteLane, object],
        discovery: Discovery,
        sink: Sink,
        stats: CrawlStats,
        timer: Timer,
    ) -> None:
        self.config = config
        self.timer = timer
        self.frontier = frontier
        self.sites = sites
        self.site_lanes = site_lanes
        self.pages = pages
        self.discovery = discovery
        self.sink = sink
        self.stats = stats
        self._hurried = asyncio.Event()
        self.budget: LaneBudget | None = None
        """The crawl's budgets, with ``[crawl] max_pages_per_site`` (wiring)."""

    async def refill_loop(self) -> None:
        while True:
            leased = await self.frontier.next_refill()
            for site, items in leased.items():
                lane = self.sites.get(site)
                if lane is None:
                    await self._give_back([item.id for item in items])
                    continue
                lane.refill_requested = False
                short = len(items) < self.config.crawl.queue_per_site
                lane.store_empty = short and not lane.fed_while_refilling
                lane.fed_while_refilling = False
                if self.budget is not None:  # a full site's new URLs wait for another run
                    items = self.budget.keep(lane, items)
                lane.queue.extend(items)
                self.pages.arm(lane)

    async def _give_back(self, ids: list[int]) -> None:
        await self.frontier.call(lambda: self.frontier.store.release_leases(ids=ids))

    async def due_loop(self) -> None:
        while True:
            await sleep_until(self.timer, self.timer.now() + self.config.crawl.due_recheck)
            for lane in list(self.sites.values()):
                if lane.store_empty:
                    self.site_lanes.look_again(lane)

    def lease_urgent(self, lane: SiteLane) -> None:
        """Urgent URLs of ``lane``'s site are in the store: lease them now (the priority
        path), unless a refill is out already or the site holds two queues' worth."""
        if lane.refill_requested:
            lane.fed_while_refilling = True
            return
        if len(lane.queue) < 2 * self.config.crawl.queue_per_site:
            lane.store_empty = False
            self.site_lanes.request_refill(lane)

    def hurry(self) -> None:
        """A site waits for URLs a page just found: flush within ``HURRY_GAP``."""
        self._hurried.set()

    async def flush_loop(self) -> None:
        timer = self.timer
        interval = self.config.crawl.flush_interval
        last = timer.now()
        while True:
            await wait_until(timer, self._hurried, last + interval)
            # Hurried or not, never sooner than HURRY_GAP after the last flush: the pages
            # parsed meanwhile share one transaction.
            await sleep_until(timer, last + min(HURRY_GAP, interval))
            self._hurried.clear()
            await self.flush()
            last = timer.now()

    async def flush(self) -> None:
        written, fed = await self.frontier.flush(self.discovery.drain)
        self.sink.flush()
        self.stats.new_urls += written
        for site in self.frontier.take_urgent():
            lane = self.sites.get(site)
            if lane is not None:
                self.lease_urgent(lane)
        for site in fed:
            lane = self.sites.get(site)
            if lane is None:
                continue
            if lane.refill_requested:
                lane.fed_while_refilling = True  # the refill out now may miss them
            elif lane.store_empty:
                lane.store_empty = False
                if not lane.queue:
                    self.site_lanes.request_refill(lane)
