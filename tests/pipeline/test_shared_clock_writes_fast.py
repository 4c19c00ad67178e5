"""A shared limiter's round trips gathered: floors after real sends, reads of others' sends."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from lane_harness import FleetLimiter

from courtier.pipeline.scheduling.clocks import SENT, KeyClocks
from courtier.politeness.keys import LimitPolicy
from courtier.politeness.limiter.base import LimiterUnavailable
from courtier.politeness.limiter.memory import MemoryLimiter

NOW = 1000.0


class CountingLimiter(FleetLimiter):
    """A shared limiter whose every call takes a turn of the loop, counted."""

    def __init__(self, shared: MemoryLimiter) -> None:
        super().__init__(shared)
        self.floor_writes: list[dict[str, float]] = []
        self.reads: list[list[str]] = []
        self.away = False

    async def raise_floor(self, floors: Mapping[str, float]) -> None:
        await asyncio.sleep(0)
        if self.away:
            raise LimiterUnavailable("server restarting")
        self.floor_writes.append(dict(floors))
        await super().raise_floor(floors)

    async def tats(self, keys: Sequence[str]) -> dict[str, float]:
        self.reads.append(list(keys))
        await asyncio.sleep(0)
        return await super().tats(keys)


def clocks_on(limiter: Any) -> KeyClocks:
    return KeyClocks(limiter, LimitPolicy())


async def test_floors_asked_while_a_write_is_out_go_together_in_the_next() -> None:
    limiter = CountingLimiter(MemoryLimiter(clock=lambda: NOW))
    clocks = clocks_on(limiter)
    clocks.raise_floors_soon({"site:a.test": NOW + 1})
    await asyncio.sleep(0)  # the first write is out
    clocks.raise_floors_soon({"site:b.test": NOW + 2})
    clocks.raise_floors_soon({"site:b.test": NOW + 3, "site:c.test": NOW + 1})
    clocks.raise_floors_soon({"site:b.test": NOW + 2.5})  # a floor never moves earlier
    await clocks.flush_sent()
    assert limiter.floor_writes == [
        {"site:a.test": NOW + 1},
        {"site:b.test": NOW + 3, "site:c.test": NOW + 1},
    ]
    assert await limiter.tats(["site:a.test", "site:b.test", "site:c.test"]) == {
        "site:a.test": NOW + 1,
        "site:b.test": NOW + 3,
        "site:c.test": NOW + 1,
    }


async def test_floors_the_limiter_could_not_take_are_written_before_the_next_booking() -> None:
    limiter = CountingLimiter(MemoryLimiter(clock=lambda: NOW))
    clocks = clocks_on(limiter)
    limiter.away = True
    clocks.raise_floors_soon({"site:a.test": NOW + 5})
    await clocks.flush_sent()
    assert limiter.floor_writes == []
    limiter.away = False
    await clocks.book_many([])  # any booking writes what was kept first
    assert await limiter.tats(["site:a.test"]) == {"site:a.test": NOW + 5}


async def test_launches_asking_while_a_read_is_out_share_the_next_read() -> None:
    limiter = CountingLimiter(MemoryLimiter(clock=lambda: NOW))
    await limiter.raise_floor({SENT + "origin:o": NOW + 2, SENT + "origin:p": NOW + 4})
    clocks = clocks_on(limiter)
    first = asyncio.ensure_future(clocks.refresh_sent(["origin:o"]))
    await asyncio.sleep(0)  # the first read is out
    later = [clocks.refresh_sent([key]) for key in ("origin:p", "origin:o", "origin:q")]
    await asyncio.gather(first, *later)
    assert limiter.reads == [
        [SENT + "origin:o"],
        [SENT + k for k in ("origin:o", "origin:p", "origin:q")],
    ]
    assert clocks.sent_ready("origin:o") == NOW + 2
    assert clocks.sent_ready("origin:p") == NOW + 4
    assert clocks.sent_ready("origin:q") is None
