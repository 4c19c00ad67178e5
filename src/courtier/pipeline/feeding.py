"""Keeping the site lanes fed: leases in from the store, what was found out to it.

Rules:
- A lane whose queue ran dry asks for a refill; one ``lease_due`` call serves every lane
  that asked since the last one (``FrontierIO.next_refill``). URLs leased for a site this
  worker no longer holds (its shard went meanwhile) go straight back.
- Every ``crawl.flush_interval`` seconds, outcomes and discoveries are written in one
  transaction and the document sink is flushed; a site that had run dry and just received
  new URLs is refilled at once.
- Every ``crawl.due_recheck`` seconds, sites whose store had nothing due look again: refresh
  work falls due with time, and ``courtier recrawl`` (fastlane) adds work from outside.
"""

from __future__ import annotations

import asyncio

from courtier.config import Config
from courtier.pipeline.discovery import Discovery
from courtier.pipeline.frontier_io import FrontierIO
from courtier.pipeline.pages import SiteLanes
from courtier.pipeline.scheduler import Scheduler
from courtier.pipeline.site import SiteLane
from courtier.pipeline.stats import CrawlStats
from courtier.sinks.documents import Sink


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
    ) -> None:
        self.config = config
        self.frontier = frontier
        self.sites = sites
        self.site_lanes = site_lanes
        self.pages = pages
        self.discovery = discovery
        self.sink = sink
        self.stats = stats

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
                lane.queue.extend(items)
                self.pages.arm(lane)

    async def _give_back(self, ids: list[int]) -> None:
        await self.frontier.call(lambda: self.frontier.store.release_leases(ids=ids))

    async def due_loop(self) -> None:
        while True:
            await asyncio.sleep(self.config.crawl.due_recheck)
            for lane in list(self.sites.values()):
                if lane.store_empty:
                    self.site_lanes.look_again(lane)

    async def flush_loop(self) -> None:
        while True:
            await asyncio.sleep(self.config.crawl.flush_interval)
            await self.flush()

    async def flush(self) -> None:
        written, fed = await self.frontier.flush(self.discovery.drain)
        self.sink.flush()
        self.stats.new_urls += written
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
