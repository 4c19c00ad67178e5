"""Waiting for a booked slot: for callers that make one request at a time and may simply await
its start (header probes, one-off commands), unlike the crawl engine's timers.

A booking refused for maximum lead is retried when it can succeed; a slot whose start the
caller wakes too late for is forfeited (it stays consumed) and booked again, exactly as the
engine does, so a late wake-up never bunches requests.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Sequence

from courtier.politeness.gcra import Limit, Refusal, Slot
from courtier.politeness.limiter.base import Limiter

Sleep = Callable[[float], Awaitable[None]]


async def wait_for_slot(
    limiter: Limiter,
    limits: Sequence[Limit],
    cost: float,
    *,
    max_lead: float = math.inf,
    sleep: Sleep = asyncio.sleep,
) -> Slot:
    """Book ``cost`` on ``limits`` and return once the slot has started (inside it)."""
    clock = limiter.clock
    while True:
        booking = await limiter.book(limits, cost, max_lead=max_lead)
        if isinstance(booking, Refusal):
            await sleep(max(0.0, booking.not_before - clock()))
            continue
        await sleep(max(0.0, booking.start - clock()))
        if not booking.is_missed(clock()):
            return booking
