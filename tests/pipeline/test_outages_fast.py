"""A store or a limiter whose server is away for a while (a PostgreSQL restart): the crawl
waits for the store and gives up only after ``[crawl] store_outage``; nothing is booked while
the limiter is away, and what could not be written to it meanwhile (a floor, a late charge)
is written before the next booking."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

import pytest

from courtier.frontier.base import FrontierError, FrontierUnavailable
from courtier.pipeline.feed import frontier_io
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


class _FakeTime:
    """Monotonic time and ``asyncio.sleep`` for ``frontier_io`` alone: a sleep is recorded
    and moves the time on at once."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        await _real_sleep(0)


_real_sleep = asyncio.sleep


class _AsyncioWithSleep:
    def __init__(self, clock: _FakeTime) -> None:
        self.sleep = clock.sleep

    def __getattr__(self, name: str) -> Any:
        return getattr(asyncio, name)


@pytest.fixture
def fake_time(monkeypatch: pytest.MonkeyPatch) -> _FakeTime:
    clock = _FakeTime()
    monkeypatch.setattr(frontier_io, "time", SimpleNamespace(monotonic=clock.monotonic))
    monkeypatch.setattr(frontier_io, "asyncio", _AsyncioWithSleep(clock))
    return clock


class CountedStore(FlakyStore):
    """Unreachable for its first ``down`` calls, each taking a millisecond; called more than
    ``most`` times, it fails the test (a retry loop that does not wait hammers it)."""

    def __init__(self, down: int, clock: _FakeTime, most: int = 1000) -> None:
        super().__init__(down)
        self.clock, self.most = clock, most

    def counts(self) -> dict[str, int]:
        self.clock.now += 0.001
        assert self.calls < self.most, "the store was called again and again without a wait"
        return super().counts()


def _check_backoff(sleeps: list[float]) -> None:
    """0.25 s after the first failure, twice as long after each next up to 5 s, each wait
    drawn from the upper half of its delay (jitter: a fleet's workers do not ask in step)."""
    for n, slept in enumerate(sleeps):
        delay = min(0.25 * 2**n, 5.0)
        assert delay / 2 <= slept <= delay, (n, sleeps)


async def test_a_store_is_asked_again_ever_less_often_until_it_is_back(
    fake_time: _FakeTime,
) -> None:
    store = CountedStore(down=7, clock=fake_time)
    frontier = FrontierIO(store, queue_per_site=4)  # type: ignore[arg-type]
    try:
        assert await frontier.call(store.counts) == {"queued": 1}
        assert store.calls == 8 and len(fake_time.sleeps) == 7 and frontier.outages == 1
        _check_backoff(fake_time.sleeps)
        assert fake_time.sleeps[-1] >= 2.5  # the seventh wait reached the 5 s cap
    finally:
        await frontier.close()


async def test_a_store_away_past_the_outage_limit_is_given_up_on_at_that_limit(
    fake_time: _FakeTime,
) -> None:
    store = CountedStore(down=10**6, clock=fake_time)
    frontier = FrontierIO(store, queue_per_site=4, outage=300.0)  # type: ignore[arg-type]
    try:
        with pytest.raises(FrontierError, match=r"unreachable for 30\d s"):
            await frontier.call(store.counts)
        _check_backoff(fake_time.sleeps)
        assert 300.0 < fake_time.now <= 306.0  # not before the limit, nor a wait after it
        assert 60 <= store.calls <= 125, store.calls  # about one call in 2.5-5 s
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
