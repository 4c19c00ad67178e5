"""A shared limiter's round trips gathered: floors after real sends, reads of others' sends."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from lane_harness import FleetLimiter

from courtier.pipeline.scheduling.clocks import PRIVATE_GATHER, SENT, KeyClocks
from courtier.pipeline.scheduling.send_spacing import SendSpacing
from courtier.pipeline.scheduling.timer import FakeTimer
from courtier.politeness.gcra import KeyParams, Limit, Slot
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


def gathering() -> tuple[FakeTimer, CountingLimiter, KeyClocks]:
    """A worker's clocks on a shared limiter, timed by a fake clock (writes gather)."""
    timer = FakeTimer(NOW)
    limiter = CountingLimiter(MemoryLimiter(clock=timer.now))
    return timer, limiter, KeyClocks(limiter, LimitPolicy(), timer=timer)


async def test_what_only_this_worker_books_is_written_together_a_moment_later() -> None:
    timer, limiter, clocks = gathering()
    clocks.raise_floors_soon({"site:a.test": NOW + 1})
    clocks.note_sent({"origin:site:a.test": NOW + 1}, urgent=False)
    await timer.advance(PRIVATE_GATHER / 2)
    clocks.raise_floors_soon({"site:b.test": NOW + 2})
    assert limiter.floor_writes == []
    await timer.advance(PRIVATE_GATHER / 2)
    assert limiter.floor_writes == [
        {"site:a.test": NOW + 1, "site:b.test": NOW + 2, SENT + "origin:site:a.test": NOW + 1}
    ]


async def test_a_send_another_worker_may_read_is_written_at_once_with_what_waited() -> None:
    timer, limiter, clocks = gathering()
    clocks.raise_floors_soon({"site:a.test": NOW + 1})
    await timer.settle()
    clocks.note_sent({"origin:platform": NOW + 0.5})
    await timer.settle()  # no time passes
    assert limiter.floor_writes == [{"site:a.test": NOW + 1, SENT + "origin:platform": NOW + 0.5}]


async def test_a_booking_on_a_key_with_a_floor_waiting_writes_it_first() -> None:
    timer, limiter, clocks = gathering()
    clocks.raise_floors_soon({"site:a.test": NOW + 3, "site:b.test": NOW + 3})
    await timer.settle()
    slot = await clocks.book([Limit("site:a.test", KeyParams(1.0))], 1.0, max_lead=60.0)
    assert isinstance(slot, Slot) and slot.start >= NOW + 3  # a hop waits for the send's floor
    assert limiter.floor_writes == [{"site:a.test": NOW + 3, "site:b.test": NOW + 3}]


async def test_a_stop_writes_what_waits_at_once() -> None:
    timer, limiter, clocks = gathering()
    clocks.raise_floors_soon({"site:a.test": NOW + 1})
    await clocks.flush_sent()
    assert limiter.floor_writes == [{"site:a.test": NOW + 1}]
    assert timer.now() == NOW


async def test_a_send_is_urgent_unless_every_key_is_private() -> None:
    timer, limiter, clocks = gathering()
    spacing = SendSpacing(clocks)
    spacing.private = lambda key: key in ("origin:site:a.test", "site:a.test")
    spacing.sent(["site:a.test", "origin:site:a.test"], 1.0, NOW, launched=False)
    await timer.settle()
    assert limiter.floor_writes == []
    spacing.sent(["site:b.test", "origin:platform"], 1.0, NOW, launched=False)
    await timer.settle()
    assert len(limiter.floor_writes) == 1
    assert set(limiter.floor_writes[0]) == {
        SENT + key
        for key in ("site:a.test", "origin:site:a.test", "site:b.test", "origin:platform")
    }
