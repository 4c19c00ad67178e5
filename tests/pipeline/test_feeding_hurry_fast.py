"""A site waiting for the URLs its page just found has them written soon, not at the next
regular flush; a burst of such pages shares one flush."""

from __future__ import annotations

import asyncio
from typing import Any

from courtier.config import Config, load
from courtier.pipeline.feeding import HURRY_GAP, Feeder
from courtier.pipeline.stats import CrawlStats


class Frontier:
    def __init__(self) -> None:
        self.flushes = 0
        self.flushed = asyncio.Event()

    async def flush(self, _drain: Any) -> tuple[int, list[str]]:
        self.flushes += 1
        self.flushed.set()
        return 0, []


class Sink:
    def flush(self) -> None:
        pass


class Discovery:
    def drain(self) -> None:
        pass


def _feeder(config: Config) -> tuple[Feeder, Frontier]:
    frontier = Frontier()
    feeder = Feeder(
        config,
        frontier=frontier,  # type: ignore[arg-type]
        sites={},
        site_lanes=None,  # type: ignore[arg-type]
        pages=None,  # type: ignore[arg-type]
        discovery=Discovery(),  # type: ignore[arg-type]
        sink=Sink(),  # type: ignore[arg-type]
        stats=CrawlStats(),
    )
    return feeder, frontier


async def test_a_hurried_flush_comes_long_before_the_interval() -> None:
    config = load(overrides=["crawl.flush_interval=60"])
    feeder, frontier = _feeder(config)
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
