"""A scale-out worker's refills lease each site under its shard's fence, as the worker holds
it at the moment it asks: the store then refuses a site whose shard was taken over (its URLs
were released by the new holder once, at the take; leased again by the old holder they would
stay leased by nobody). The store's side is tested in tests/frontier/test_store_contract.py."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from courtier.config import Config
from courtier.frontier.base import LeasedUrl, UrlLane
from courtier.frontier.surface import SurfacePolicy
from courtier.pipeline.cluster.membership import Cluster, ClusterSpec
from courtier.pipeline.cluster.shards import shard_of
from courtier.pipeline.feed.frontier_io import FrontierIO
from courtier.pipeline.lanes.seeding import SeedSites
from courtier.pipeline.lanes.site import SiteLane
from courtier.pipeline.scheduling.clocks import KeyClocks
from courtier.pipeline.scheduling.send_spacing import SendSpacing
from courtier.pipeline.stats import CrawlStats
from courtier.politeness.keys import LimitPolicy
from courtier.politeness.limiter import MemoryLimiter
from courtier.politeness.limiter.base import Fence

SHARDS = 64


class RecordingStore:
    """Hands out what ``due`` says, and records every lease call with its fences."""

    def __init__(self, due: dict[str, list[LeasedUrl]], queued: list[LeasedUrl]) -> None:
        self.due = due
        self.queued = queued
        self.calls: list[tuple[str, object, object]] = []

    def lease_due(
        self,
        limit_per_host: int,
        hosts: Sequence[str],
        now: float,
        fences: Mapping[str, Fence] | None = None,
    ) -> dict[str, list[LeasedUrl]]:
        self.calls.append(("lease_due", list(hosts), None if fences is None else dict(fences)))
        served = hosts if fences is None else [h for h in hosts if h in fences]
        return {h: list(self.due[h]) for h in served if self.due.get(h)}

    def lease(
        self, site: str, limit: int, now: float | None = None, fence: Fence | None = None
    ) -> list[LeasedUrl]:
        self.calls.append(("lease", site, fence))
        return list(self.queued)

    def close(self) -> None:
        pass


def _url(n: int, site: str, lane: UrlLane) -> LeasedUrl:
    return LeasedUrl(n, f"http://{site}/{n}", site, 1, 0, lane)


class Lanes:
    """The site lanes and page scheduler a shard's take and loss touch, recording them."""

    def __init__(self) -> None:
        self.spacing = SendSpacing(KeyClocks(MemoryLimiter(), LimitPolicy()))
        self.refilled: list[str] = []
        self.dropped: list[str] = []

    def request_refill(self, lane: SiteLane) -> None:
        self.refilled.append(lane.site)

    def drop(self, lane: SiteLane) -> None:
        self.dropped.append(lane.site)


class Timer:
    def now(self) -> float:
        return 0.0


def _cluster(frontier: FrontierIO, lanes: Lanes | None = None) -> Cluster:
    """A worker's cluster with nothing started: only its keeper's table of held shards."""
    stand_in: Any = None
    lanes = lanes or Lanes()
    seed = SeedSites(Config(), SurfacePolicy(), lambda: 0.0, shared=True)
    seed.scope.update({"a.test", "b.test"})
    return Cluster(
        ClusterSpec("postgresql://unused", "w-a", shards=SHARDS),
        Config(),
        seed=seed,
        site_lanes=lanes,  # type: ignore[arg-type]
        pages=lanes,  # type: ignore[arg-type]
        frontier=frontier,
        timer=Timer(),  # type: ignore[arg-type]
        stats=CrawlStats(),
        flush=stand_in,
    )


async def test_a_refill_leases_each_site_under_the_fence_its_worker_holds_now() -> None:
    assert shard_of("a.test", SHARDS) != shard_of("b.test", SHARDS)
    due = {"a.test": [_url(1, "a.test", UrlLane.REFRESH), _url(2, "a.test", UrlLane.REFRESH)]}
    queued = [_url(3, "a.test", UrlLane.DISCOVERY)]
    store = RecordingStore(due, queued)
    frontier = FrontierIO(store, queue_per_site=2)  # type: ignore[arg-type]
    cluster = _cluster(frontier)
    cluster.keeper.held[shard_of("a.test", SHARDS)] = 7  # b.test's shard is not held
    fence = Fence(shard_of("a.test", SHARDS), "w-a", 7)

    frontier.want("a.test")
    frontier.want("b.test")
    leased = await frontier.next_refill()

    assert [u.id for u in leased["a.test"]] == [1, 2, 3]
    assert leased["b.test"] == []
    # One lease for both sites, a.test under its fence, b.test with none (so not served);
    # the top-up of queued URLs beside a batch full of refresh work is fenced too.
    assert store.calls == [
        ("lease_due", ["a.test", "b.test"], {"a.test": fence}),
        ("lease", "a.test", fence),
    ]

    # The shard taken over (the keeper learns it at its next heartbeat): nothing is leased
    # under the old token any more, whatever the lane still believes.
    del cluster.keeper.held[fence.shard]
    frontier.want("a.test")
    assert await frontier.next_refill() == {"a.test": []}
    assert store.calls[-1] == ("lease_due", ["a.test"], {})
    await frontier.close()


async def test_a_crawl_of_one_machine_leases_unfenced() -> None:
    store = RecordingStore({"a.test": [_url(1, "a.test", UrlLane.DISCOVERY)]}, [])
    frontier = FrontierIO(store, queue_per_site=2)  # type: ignore[arg-type]
    frontier.want("a.test")
    assert [u.id for u in (await frontier.next_refill())["a.test"]] == [1]
    assert store.calls == [("lease_due", ["a.test"], None)]
    await frontier.close()


class ShardStore(RecordingStore):
    """What a shard's take reads and writes: nothing saved yet."""

    def release_leases(self, *_args: Any, **_kwargs: Any) -> int:
        return 0

    def load_robots(self, now: float, sites: Sequence[str] | None = None) -> dict[str, Any]:
        return {}

    def site_sizes(self, sites: Sequence[str] | None = None) -> dict[str, tuple[int, int]]:
        return {}


async def test_the_origin_of_a_site_alone_is_read_by_nobody_else_while_its_shard_is_held() -> None:
    """A start on a key only this worker sends on reads no other worker's sends first: the
    origin of a site alone on it (``origin:site:<host>``) and the site's own key, while this
    worker holds the site."""
    frontier = FrontierIO(ShardStore({}, []), queue_per_site=2)  # type: ignore[arg-type]
    lanes = Lanes()
    cluster = _cluster(frontier, lanes)
    private = lanes.spacing.private
    shard = shard_of("a.test", SHARDS)
    assert not private("origin:site:a.test") and not private("site:a.test")  # not held yet
    cluster.keeper.held[shard] = 3
    await cluster.acquired(shard, 3)
    assert lanes.refilled == ["a.test"]
    assert private("origin:site:a.test") and private("site:a.test")
    assert not private("origin:site:b.test") and not private("site:b.test")  # another's
    assert not private("origin:cname:edge.test")
    del cluster.keeper.held[shard]
    await cluster.lost(shard, graceful=False)
    assert lanes.dropped == ["a.test"]
    assert not private("origin:site:a.test") and not private("site:a.test")
    await frontier.close()


async def test_a_shard_taken_for_the_first_time_starts_its_sites_at_once() -> None:
    """A shard's first holder ever (token 1) follows nobody: its sites start at once. A
    shard that had a holder (token 2 on) waits one interval: that holder's last request is
    unknown, so it is taken to be now."""
    frontier = FrontierIO(ShardStore({}, []), queue_per_site=2)  # type: ignore[arg-type]
    cluster = _cluster(frontier)
    first, again = shard_of("a.test", SHARDS), shard_of("b.test", SHARDS)
    cluster.keeper.held.update({first: 1, again: 2})
    await cluster.acquired(first, 1)
    await cluster.acquired(again, 2)
    a, b = cluster.sites["a.test"], cluster.sites["b.test"]
    assert a.next_start == 0.0
    assert b.next_start == b.interval > 0
    await frontier.close()


async def test_a_lost_fence_drops_every_lane_of_its_shard_from_the_scheduler_and_the_seed() -> None:
    """A booking of one site finds its shard's fence gone: the whole shard is another
    worker's, so every lane of it stops and leaves the seed at once (the sites stay in scope:
    links to them are still frontier work), another shard's lanes carry on, and the shard
    taken back later brings new lanes under its new fence."""
    lost = ["s0.test", "s36.test"]  # one shard
    kept = "s1.test"
    shard, other = shard_of(lost[0], SHARDS), shard_of(kept, SHARDS)
    assert shard_of(lost[1], SHARDS) == shard != other
    frontier = FrontierIO(ShardStore({}, []), queue_per_site=2)  # type: ignore[arg-type]
    lanes = Lanes()
    cluster = _cluster(frontier, lanes)
    cluster.scope.update([*lost, kept])
    cluster.keeper.held.update({shard: 3, other: 3})
    await cluster.acquired(shard, 3)
    await cluster.acquired(other, 3)
    before = cluster.sites[lost[0]]
    assert before.fence == Fence(shard, "w-a", 3)

    cluster.lease_lost(cluster.sites[lost[1]])
    for _ in range(3):
        await asyncio.sleep(0)
    assert sorted(lanes.dropped) == lost
    assert set(cluster.sites) == {kept}
    assert set(lost) <= cluster.scope
    assert cluster.held_hosts == {kept}

    cluster.keeper.held[shard] = 5
    await cluster.acquired(shard, 5)
    assert set(cluster.sites) == {*lost, kept}
    assert cluster.sites[lost[0]] is not before
    assert {cluster.sites[site].fence for site in lost} == {Fence(shard, "w-a", 5)}
    await frontier.close()
