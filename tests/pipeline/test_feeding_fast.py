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
from courtier.pipeline.stats import CrawlStats


class Frontier:
    def __init__(self) -> None:
        self.refills: asyncio.Queue[dict[str, list[LeasedUrl]]] = asyncio.Queue()
        self.fed: list[str] = []
        self.flushes = 0
        self.flushed = asyncio.Event()

    async def next_refill(self) -> dict[str, list[LeasedUrl]]:
        return await self.refills.get()

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


def _feeder(lane: SiteLane, config: Config | None = None) -> tuple[Feeder, Frontier, SiteLanes]:
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
    feeder, frontier, _ = _feeder(new_lane("a.test", config), config)
    loop = asyncio.create_task(feeder.flush_loop())
    try:
        await asyncio.sleep(HURRY_GAP)
        assert frontier.flushes == 0  # nothing asked: the next flush is a minute away
        for _ in range(10):  # pages of many sites, parsed together
            feeder.hurry()
        await asyncio.wait_for(frontier.flushed.wait(), 10)  # not 60 s
        await asyncio.sleep(3 * HURRY_GAP)
        assert frontier.flushes == 1  # one transaction for the burst
        frontier.flushed.clear()
        feeder.hurry()  # a later page: a flush of its own
        await asyncio.wait_for(frontier.flushed.wait(), 10)
        assert frontier.flushes == 2
    finally:
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)
