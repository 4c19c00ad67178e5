"""Waiting for a booked slot, and header probes booked like ordinary requests."""

from __future__ import annotations

import asyncio

from courtier.cli.origins import booked_probe_requests
from courtier.config import Config
from courtier.politeness.gcra import KeyParams, Limit, Slot
from courtier.politeness.limiter.memory import MemoryLimiter
from courtier.politeness.waiting import wait_for_slot


class FakeTime:
    """A clock that sleeping moves, optionally oversleeping by ``late`` seconds once."""

    def __init__(self, late: float = 0.0) -> None:
        self.now = 100.0
        self.late = late
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds + self.late
        self.late = 0.0


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


def test_requests_on_one_key_start_one_interval_apart() -> None:
    time = FakeTime()
    limiter = MemoryLimiter(time.clock)
    limits = [Limit("site:a.test", KeyParams(interval=1.0))]

    async def three() -> list[float]:
        starts = []
        for _ in range(3):
            await wait_for_slot(limiter, limits, 1.0, sleep=time.sleep)
            starts.append(time.now)
        return starts

    assert run(three()) == [100.0, 101.0, 102.0]


def test_a_late_wake_up_forfeits_the_slot_and_books_again() -> None:
    time = FakeTime()
    limiter = MemoryLimiter(time.clock)
    limits = [Limit("site:a.test", KeyParams(interval=1.0, slot_width=0.25))]

    async def two() -> tuple[Slot, Slot, float]:
        first = await wait_for_slot(limiter, limits, 1.0, sleep=time.sleep)
        time.late = 0.5  # the next wake-up comes 0.5 s after its slot's start
        second = await wait_for_slot(limiter, limits, 1.0, sleep=time.sleep)
        return first, second, time.now

    first, second, now = run(two())
    assert second.start > first.start + 1.0  # the missed slot stayed consumed
    assert second.start <= now <= second.deadline


def test_probes_of_tenants_on_one_address_share_its_origin_budget() -> None:
    time = FakeTime()
    book = booked_probe_requests(Config(), clock=time.clock, sleep=time.sleep)
    shared = ("127.0.0.9",)

    async def probe_three_tenants() -> list[float]:
        starts = []
        for host in ("a.test", "b.test", "c.test"):
            await book(host, shared, "/")  # a home page: an index page, 4 units
            starts.append(time.now)
        return starts

    starts = run(probe_three_tenants())
    # Different sites, one address set: the origin (2 units/s) spaces them 2 s apart.
    assert starts == [100.0, 102.0, 104.0]


def test_the_two_probes_of_one_site_are_spaced_by_its_site_key() -> None:
    time = FakeTime()
    book = booked_probe_requests(Config(), clock=time.clock, sleep=time.sleep)

    async def one_site() -> list[float]:
        starts = []
        for path in ("/robots-free-path", "/missing"):
            await book("a.test", (), path)  # no addresses: the site key alone
            starts.append(time.now)
        return starts

    first, second = run(one_site())
    assert second - first >= 1.0
