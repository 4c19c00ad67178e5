"""A worker of a scale-out crawl: which seed sites it crawls, as its shard leases come and go.

Rules (the leases themselves: ``shards.py``):
- Every worker knows the whole seed (its scope: links to any seed site are frontier work)
  but keeps lanes only for the sites of the shards it holds.
- Taking a shard: the leases its sites' URLs still have (a dead worker's) are released, the
  sites' saved robots.txt answers are adopted, and each site starts no earlier than one
  interval from now: the last request of the shard's previous holder is unknown, so it is
  taken to be now. A shard taken for the first time ever (token 1) had no holder: its sites
  start at once (a fleet's first start lost a second). Every booking of those sites carries
  the shard's fence.
- Giving a shard back (rebalancing, a clean stop): its sites start nothing new, their work in
  flight finishes (bounded by the fetch timeout), outcomes are written, and every URL still
  leased for them goes back to the store (under the shard's fence: not if the shard is
  another worker's by then); only then is the lease released.
- Losing a shard (the fence failed, a lease taken over): its sites stop at once; their
  queued URLs are left leased for the new holder to release. Leasing is fenced too
  (``FrontierIO.fence_leases``): a worker that lost a shard cannot lease its sites' URLs after
  the new holder released them, which nobody would ever release again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from courtier.config import Config
from courtier.origins.cluster import own_origin
from courtier.pipeline.answers.robots_fetch import rules_from_stored
from courtier.pipeline.cluster.shards import ShardKeeper, shard_of
from courtier.pipeline.feed.frontier_io import FrontierIO
from courtier.pipeline.lanes.pages import SiteLanes
from courtier.pipeline.lanes.seeding import SeedSites
from courtier.pipeline.lanes.site import SiteLane
from courtier.pipeline.scheduling.scheduler import Scheduler
from courtier.pipeline.scheduling.timer import Timer
from courtier.pipeline.stats import CrawlStats
from courtier.politeness.keys import origin_key, site_key
from courtier.politeness.limiter.base import Fence

log = logging.getLogger(__name__)

_OWN_ORIGINS = origin_key(own_origin(""))
"""The start of the key of every origin of one site alone (``origin:site:``)."""
_SITE_KEYS = site_key("")


@dataclass(frozen=True, slots=True)
class ClusterSpec:
    """How this worker joins a scale-out crawl on PostgreSQL."""

    conninfo: str
    worker_id: str
    shards: int = 64
    ttl: float = 15.0
    """Seconds a lease lives without a heartbeat (heartbeats every ttl / 3)."""


class Cluster:
    def __init__(
        self,
        spec: ClusterSpec,
        config: Config,
        *,
        seed: SeedSites,
        site_lanes: SiteLanes,
        pages: Scheduler[SiteLane, object],
        frontier: FrontierIO,
        timer: Timer,
        stats: CrawlStats,
        flush: Callable[[], Awaitable[None]],
    ) -> None:
        self.spec = spec
        self.config = config
        self.seed = seed
        self.scope = seed.scope
        self.sites = seed.lanes
        self.site_lanes = site_lanes
        self.pages = pages
        self.frontier = frontier
        self.timer = timer
        self.stats = stats
        self.flush = flush
        self._losing: set[asyncio.Task[None]] = set()
        """Shards being given up after a failed fence: held here (the loop keeps only a weak
        reference to a task, and one nobody holds may be collected before it ends)."""
        self.keeper = ShardKeeper(
            spec.conninfo,
            spec.worker_id,
            shards=spec.shards,
            ttl=spec.ttl,
            on_acquired=self.acquired,
            on_lost=self.lost,
            requests=lambda: stats.requests,
        )
        frontier.fence_leases(self.fence_of)
        seed.fence_of = self.fence_of
        self.held_hosts: set[str] = set()
        """Hosts of the sites whose shards this worker holds now."""
        pages.spacing.private = self.sends_alone_on

    def sends_alone_on(self, key: str) -> bool:
        """No other worker sends on ``key``: the origin of a site alone on it (named after
        its host, ``own_origin``) whose shard this worker holds, so no other books the site;
        or the ``site:`` key of a site crawled here (and of its ``www.`` twin in the seed,
        which books on it), where only another worker's robots.txt hop may go, and that hop
        reads this worker's sends first. A start there reads no other worker's real sends
        first: one round trip fewer."""
        if key.startswith(_SITE_KEYS):
            site = key[len(_SITE_KEYS) :]
            www = "www." + site
            return site in self.sites and (www not in self.scope or www in self.sites)
        return key.startswith(_OWN_ORIGINS) and key[len(_OWN_ORIGINS) :] in self.held_hosts

    def fence_of(self, site: str) -> Fence | None:
        """The lease this worker holds on ``site``'s shard now (None: not held)."""
        return self.keeper.fence(shard_of(site, self.spec.shards))

    def holds(self, site: str) -> bool:
        return shard_of(site, self.spec.shards) in self.keeper.held

    def shard_sites(self, shard: int) -> list[str]:
        return sorted(s for s in self.scope if shard_of(s, self.spec.shards) == shard)

    async def acquired(self, shard: int, token: int) -> None:
        sites = [s for s in self.shard_sites(shard) if s not in self.sites]
        store = self.frontier.store
        released = await self.frontier.call(lambda: store.release_leases(sites=sites))
        # The shard's sites only: a worker joining a fleet takes dozens of shards at once,
        # and every one of them read the whole of both tables.
        stored = await self.frontier.call(store.load_robots, self.timer.now(), sites)
        sizes = await self.frontier.call(store.site_sizes, sites)
        fence = self.keeper.fence(shard)
        if fence is None:  # lost again while the store answered
            return
        for lane in self.seed.take(sites, fence, sizes):
            self.held_hosts.add(lane.host)
            if lane.site in stored:
                saved = stored[lane.site]
                rules = rules_from_stored(saved, self.config)
                self.site_lanes.adopt(lane, self.site_lanes.outcome_of(lane.site, rules, saved))
            self.site_lanes.request_refill(lane)
        self.stats.shards_taken += 1
        log.info(
            "shard %d taken (token %d): %d sites, %d leases released",
            shard,
            token,
            len(sites),
            released,
        )

    async def lost(self, shard: int, graceful: bool) -> None:
        lanes = [lane for lane in self.sites.values() if lane.fence and lane.fence.shard == shard]
        for lane in lanes:
            self.held_hosts.discard(lane.host)  # before anything is awaited
            self.pages.drop(lane)
        if graceful:
            running = {task for lane in lanes for task in lane.sched.running}
            if running:
                await asyncio.wait(running, timeout=self.config.fetch.total_timeout)
            # Outcomes first: a URL answered here must not fall due for the next holder; and
            # the floors its sends raised, for the next holder's first booking.
            await self.flush()
            await self.pages.clocks.flush_sent()
            sites = [lane.site for lane in lanes]
            # Under the shard's fence: a keeper whose session was ended gives its shards back
            # too, and one may be another worker's by now, its URLs leased by that worker.
            fence = lanes[0].fence if lanes else None
            await self.frontier.call(
                lambda: self.frontier.store.release_leases(sites=sites, fence=fence)
            )
        self.seed.drop(lanes)
        self.stats.shards_given += 1
        log.info("shard %d %s: %d sites", shard, "given back" if graceful else "lost", len(lanes))

    def lease_lost(self, lane: SiteLane) -> None:
        """A booking's fence failed: the whole shard is gone."""
        if lane.fence is not None and lane.fence.shard in self.keeper.held:
            del self.keeper.held[lane.fence.shard]
            task = asyncio.get_running_loop().create_task(self.lost(lane.fence.shard, False))
            self._losing.add(task)
            task.add_done_callback(self._losing.discard)
