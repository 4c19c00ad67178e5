"""A store or a limiter whose server is away for a while (a PostgreSQL restart): the crawl
waits for the store and gives up only after ``[crawl] store_outage``; nothing is booked while
the limiter is away, and what could not be written to it meanwhile (a floor, a late charge)
is written before the next booking."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from courtier.frontier.base import FrontierError, FrontierUnavailable
from courtier.pipeline.feed.frontier_io import FrontierIO
from courtier.pipeline.scheduling.clocks import KeyClocks
from courtier.politeness.gcra import Booking, KeyParams, Limit, Slot
from courtier.politeness.keys import LimitPolicy
from courtier.politeness.limiter.base import Fence, LimiterUnavailable
from courtier.politeness.limiter.memory import MemoryLimiter


class FlakyStore:
    """Unreachable for its first ``down`` calls."""

    def __init__(self, down: int) -> None:
        self.down = down
        self.calls = 0

    def counts(self) -> dict[str, int]:
        self.calls += 1
        if self.calls <= self.down:
            raise FrontierUnavailable("server restarting")
        return {"queued": 1}

    def close(self) -> None:
        pass


async def test_a_store_call_waits_for_the_server_to_come_back() -> None:
    store = FlakyStore(down=3)
    frontier = FrontierIO(store, queue_per_site=4)  # type: ignore[arg-type]
    try:
        assert await frontier.call(store.counts) == {"queued": 1}
        assert store.calls == 4 and frontier.outages == 1
    finally:
        await frontier.close()


async def test_a_store_away_longer_than_the_outage_limit_stops_the_crawl() -> None:
    store = FlakyStore(down=10**6)
    frontier = FrontierIO(store, queue_per_site=4, outage=0.3)  # type: ignore[arg-type]
    try:
        with pytest.raises(FrontierError, match=r"unreachable for .* store_outage"):
            await frontier.call(store.counts)
    finally:
        await frontier.close()


class AwayLimiter(MemoryLimiter):
    """A memory limiter that can be made unreachable, as a shared one's server can."""

    away = False

    def _check(self) -> None:
        if self.away:
            raise LimiterUnavailable("server restarting")

    async def book(
        self,
        limits: Sequence[Limit],
        cost: float,
        *,
        max_lead: float,
        fence: Fence | None = None,
        start_after: float | None = None,
    ) -> Booking:
        self._check()
        return await super().book(
            limits, cost, max_lead=max_lead, fence=fence, start_after=start_after
        )

    async def raise_floor(self, floors: Mapping[str, float]) -> None:
        self._check()
        await super().raise_floor(floors)

    async def charge(self, limit: Limit, cost: float) -> float:
        self._check()
        return await super().charge(limit, cost)


async def test_floors_and_charges_kept_while_the_limiter_is_away_go_first() -> None:
    now = 1000.0
    limiter = AwayLimiter(clock=lambda: now)
    clocks = KeyClocks(limiter, LimitPolicy())
    site = Limit("site:a.test", KeyParams(1.0, 0.0, 0.25, weighted=False))
    origin = Limit("origin:p", KeyParams(0.5, 0.0, 0.25, weighted=True))
    limiter.away = True
    await clocks.raise_floors({"site:a.test": now + 30.0}, durable=False)  # a Retry-After
    await clocks.charge(origin, 4.0)
    await clocks.charge(origin, 2.0)
    with pytest.raises(LimiterUnavailable):
        await clocks.book([site], 1.0, max_lead=60.0)
    assert limiter.snapshot() == {}  # nothing was written, nothing booked
    limiter.away = False
    # The late charges (6 units at 0.5 s each) reached the origin's clock before the slot.
    slot = await clocks.book([origin], 1.0, max_lead=60.0)
    assert isinstance(slot, Slot) and slot.start >= now + 3.0
    slot = await clocks.book([site], 1.0, max_lead=60.0)
    assert isinstance(slot, Slot) and slot.start >= now + 30.0  # the kept Retry-After holds
