"""A caller that awaits its slot, refused for maximum lead, waits until a booking can succeed
and then until the slot's start: never more, so a probe starts exactly on its slot."""

from __future__ import annotations

import asyncio

from test_wait_for_slot import FakeTime

from courtier.politeness.gcra import KeyParams, Limit
from courtier.politeness.limiter.memory import MemoryLimiter
from courtier.politeness.waiting import wait_for_slot


def test_a_refused_booking_waits_until_it_can_book_then_until_its_slot() -> None:
    time = FakeTime()
    limiter = MemoryLimiter(time.clock)
    limits = [Limit("site:a.test", KeyParams(interval=1.0))]

    async def two() -> list[float]:
        first = await wait_for_slot(limiter, limits, 1.0, max_lead=0.5, sleep=time.sleep)
        second = await wait_for_slot(limiter, limits, 1.0, max_lead=0.5, sleep=time.sleep)
        return [first.start, second.start]

    assert asyncio.run(two()) == [100.0, 101.0]
    # No wait for the first; the second is refused until 100.5, then waits for 101.0.
    assert time.sleeps == [0.0, 0.5, 0.5]
    assert time.now == 101.0
