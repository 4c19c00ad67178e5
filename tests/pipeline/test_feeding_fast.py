"""The Feeder: a refill that comes back short does not hide URLs written while it was out;
a site waiting for the URLs its page just found has them written soon, not at the next
regular flush, and a burst of such pages shares one flush.

The race was seen as a flaky end-to-end test (a bare seed redirecting to www.: the new
www. lane asked the store for work, the redirect's URL was written while that refill was
out, the refill came back empty and the lane waited for ``due_recheck``, 30 s, past the
crawl's end)."""

from __future__ import annotations

import asyncio
from typing import Any

from courtier.config import Config, load
from courtier.frontier.base import LeasedUrl
from courtier.pipeline.lanes.feeding import HURRY_GAP, Feeder
from courtier.pipeline.lanes.seeding import new_lane
from courtier.pipeline.lanes.site import SiteLane
from courtier.pipeline.scheduling.timer import FakeTimer
from courtier.pipeline.stats import CrawlStats


class Frontier:
    def __init__(self) -> None:
        self.refills: asyncio.Queue[dict[str, list[LeasedUrl]]] = asyncio.Queue()
        self.fed: list[str] = []
        self.flushes = 0
        self.flushed = asyncio.Event()

    async def next_refill(self) -> dict[str, list[LeasedUrl]]:
        return await self.refills.get()

    def take_urgent(self) -> set[str]:
        return set()

    async def flush(self, _drain: Any) -> tuple[int, list[str]]:
        self.flushes += 1
        self.flushed.set()
        fed, self.fed = self.fed, []
        return len(fed), fed


class SiteLanes:
    def __init__(self) -> None:
        self.asked: list[str] = []

    def request_refill(self, lane: SiteLane) -> None:
        lane.refill_requested = True
        self.asked.append(lane.site)


class Pages:
    def arm(self, lane: SiteLane) -> None:
        pass


class Sink:
    def flush(self) -> None:
        pass


class Discovery:
    def drain(self) -> None:
        pass


def _feeder(
    lane: SiteLane, config: Config | None = None, timer: FakeTimer | None = None
) -> tuple[Feeder, Frontier, SiteLanes]:
    frontier, lanes = Frontier(), SiteLanes()
    feeder = Feeder(
        config or Config(),
        frontier=frontier,  # type: ignore[arg-type]
        sites={lane.site: lane},
        site_lanes=lanes,  # type: ignore[arg-type]
        pages=Pages(),  # type: ignore[arg-type]
        discovery=Discovery(),  # type: ignore[arg-type]
        sink=Sink(),  # type: ignore[arg-type]
        stats=CrawlStats(),
        timer=timer or FakeTimer(),
    )
    return feeder, frontier, lanes


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_urls_written_while_a_refill_is_out_keep_the_store_not_empty() -> None:
    lane = new_lane("www.a.test", Config())
    feeder, frontier, lanes = _feeder(lane)
    lanes.request_refill(lane)  # the new lane asks: the store has nothing of it yet
    frontier.fed = [lane.site]  # the redirect's URL is written meanwhile
    await feeder.flush()
    refills = asyncio.create_task(feeder.refill_loop())
    frontier.refills.put_nowait({lane.site: []})  # the refill looked before the write
    await _settle()
    refills.cancel()
    assert lane.store_empty is False  # so the lane asks again when it looks for work
    assert not lane.fed_while_refilling and not lane.refill_requested


async def test_urls_written_after_a_short_refill_make_the_lane_ask_again() -> None:
    lane = new_lane("www.a.test", Config())
    feeder, frontier, lanes = _feeder(lane)
    lanes.request_refill(lane)
    refills = asyncio.create_task(feeder.refill_loop())
    frontier.refills.put_nowait({lane.site: []})
    await _settle()
    assert lane.store_empty is True
    frontier.fed = [lane.site]
    await feeder.flush()
    refills.cancel()
    assert lane.store_empty is False and lanes.asked == [lane.site, lane.site]


async def test_a_hurried_flush_comes_long_before_the_interval() -> None:
    config = load(overrides=["crawl.flush_interval=60"])
    timer = FakeTimer()
    feeder, frontier, _ = _feeder(new_lane("a.test", config), config, timer)
    loop = asyncio.create_task(feeder.flush_loop())
    try:
        await timer.advance(HURRY_GAP)
        assert frontier.flushes == 0  # nothing asked: the next flush is a minute away
        for _ in range(10):  # pages of many sites, parsed together
            feeder.hurry()
        await timer.advance(HURRY_GAP / 2)
        assert frontier.flushes == 1  # at once: the last flush is more than HURRY_GAP ago
        feeder.hurry()  # a page parsed right after: waits for HURRY_GAP since that flush
        await timer.advance(HURRY_GAP / 4)
        assert frontier.flushes == 1
        await timer.advance(HURRY_GAP)
        assert frontier.flushes == 2  # a flush of its own, not 60 s later
    finally:
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)


async def test_without_hurry_the_store_is_written_every_flush_interval() -> None:
    config = load(overrides=["crawl.flush_interval=2"])
    timer = FakeTimer()
    feeder, frontier, _ = _feeder(new_lane("a.test", config), config, timer)
    loop = asyncio.create_task(feeder.flush_loop())
    try:
        await timer.advance(1.9)
        assert frontier.flushes == 0
        await timer.advance(0.2)
        assert frontier.flushes == 1
        await timer.advance(2.0)
        assert frontier.flushes == 2
    finally:
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)


async def test_a_site_whose_store_looked_empty_asks_again_every_due_recheck() -> None:
    config = load(overrides=["crawl.due_recheck=30"])
    timer = FakeTimer()
    lane = new_lane("a.test", config)
    lane.store_empty = True
    feeder, _frontier, lanes = _feeder(lane, config, timer)
    lanes.look_again = lambda lane: lanes.asked.append(lane.site)  # type: ignore[attr-defined]
    loop = asyncio.create_task(feeder.due_loop())
    try:
        await timer.advance(29.0)
        assert lanes.asked == []
        await timer.advance(2.0)
        assert lanes.asked == ["a.test"]  # refresh work falls due with time
    finally:
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)
