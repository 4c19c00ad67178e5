"""One behavioural suite for every limiter backend: memory, SQLite and PostgreSQL.

PostgreSQL runs against a real server started for the session (tests/pg.py). The clock is
fake except in the multi-process tests, where processes cannot share one.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import multiprocessing
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from courtier.politeness.gcra import KeyParams, Limit, Refusal, Slot, book, charge_after
from courtier.politeness.limiter import Limiter, LimiterError, MemoryLimiter, SqliteLimiter
from courtier.politeness.limiter.base import BookingRequest, LeaseLost
from courtier.politeness.limiter.postgres import TABLE, PostgresLimiter
from pg import PostgresCluster, PostgresUnavailable, fresh_database

T0 = 1_800_000_000.0


class FakeClock:
    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class Backend:
    """Opens limiters that share one store (as processes would) and resets that store."""

    name: str
    path: Path
    dsn: str | None

    def __post_init__(self) -> None:
        self._memory: MemoryLimiter | None = None

    async def open(self, clock: Callable[[], float] = time.time) -> Limiter:
        if self.name == "memory":  # one process: every opener shares the one dict
            if self._memory is None:
                self._memory = MemoryLimiter(clock)
            return self._memory
        if self.name == "sqlite":
            return SqliteLimiter(self.path, clock=clock)
        assert self.dsn is not None
        return await PostgresLimiter.connect(self.dsn, clock=clock, connections=4)

    def reset(self) -> None:
        if self.name == "memory":
            self._memory = None
        elif self.name == "sqlite":
            with sqlite3.connect(self.path) as db:
                db.execute("DROP TABLE IF EXISTS limiter_tat")
        else:
            with psycopg.connect(str(self.dsn), autocommit=True) as conn:
                exists = conn.execute("SELECT to_regclass(%s)", (TABLE,)).fetchone()
                if exists is not None and exists[0] is not None:
                    conn.execute(f"TRUNCATE {TABLE}")

    @asynccontextmanager
    async def limiter(self, clock: Callable[[], float] = time.time) -> AsyncIterator[Limiter]:
        limiter = await self.open(clock)
        try:
            yield limiter
        finally:
            await limiter.close()


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    dsn = request.getfixturevalue("postgres_dsn") if request.param == "postgres" else None
    chosen = Backend(request.param, tmp_path / "limiter.sqlite", dsn)
    chosen.reset()
    yield chosen


@pytest.fixture(params=["sqlite", "postgres"])
def shared_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    dsn = request.getfixturevalue("postgres_dsn") if request.param == "postgres" else None
    chosen = Backend(request.param, tmp_path / "limiter.sqlite", dsn)
    chosen.reset()
    return chosen


def key(name: str, interval: float, burst: float = 0.0, width: float = 0.25) -> Limit:
    return Limit(name, KeyParams(interval, burst, width))


def slot(booking: Slot | Refusal) -> Slot:
    assert isinstance(booking, Slot), booking
    return booking


async def test_first_booking_on_a_key_starts_now(backend: Backend) -> None:
    clock = FakeClock()
    async with backend.limiter(clock) as limiter:
        assert isinstance(limiter, Limiter)
        first = slot(await limiter.book([key("site:a.test", 1.0)], 1))
    assert first == Slot(T0, T0 + 0.25, ("site:a.test",), 1)


async def test_bookings_on_one_key_are_spaced_by_the_interval(backend: Backend) -> None:
    clock = FakeClock()
    async with backend.limiter(clock) as limiter:
        starts = [slot(await limiter.book([key("site:a.test", 1.5)], 1)).start for _ in range(4)]
        assert await limiter.tats(["site:a.test"]) == {"site:a.test": T0 + 6.0}
    assert starts == [T0, T0 + 1.5, T0 + 3.0, T0 + 4.5]


async def test_an_idle_key_books_from_now_not_from_its_old_tat(backend: Backend) -> None:
    clock = FakeClock()
    async with backend.limiter(clock) as limiter:
        await limiter.book([key("site:a.test", 1.0)], 1)
        clock.advance(10.0)
        assert slot(await limiter.book([key("site:a.test", 1.0)], 1)).start == T0 + 10.0


async def test_cost_multiplies_the_interval_of_weighted_keys_only(backend: Backend) -> None:
    clock = FakeClock()
    site = Limit("site:a.test", KeyParams(1.0, weighted=False))
    origin = Limit("origin:o", KeyParams(0.5))
    async with backend.limiter(clock) as limiter:
        await limiter.book([site, origin], 4)
        tats = await limiter.tats(["site:a.test", "origin:o"])
    assert tats == {"site:a.test": T0 + 1.0, "origin:o": T0 + 2.0}


async def test_multi_key_booking_waits_for_the_busiest_key_and_moves_all(
    backend: Backend,
) -> None:
    clock = FakeClock()
    async with backend.limiter(clock) as limiter:
        for _ in range(3):  # origin:o booked up to T0 + 3
            await limiter.book([key("origin:o", 1.0)], 1)
        both = slot(await limiter.book([key("site:a.test", 1.0), key("origin:o", 1.0)], 1))
        tats = await limiter.tats(["site:a.test", "origin:o"])
    assert both.start == T0 + 3.0
    assert both.keys == ("site:a.test", "origin:o")
    assert tats == {"site:a.test": T0 + 4.0, "origin:o": T0 + 4.0}


async def test_burst_tolerance_lets_that_many_seconds_of_requests_start_at_once(
    backend: Backend,
) -> None:
    clock = FakeClock()
    bucket = key("bucket:simstore/b", 1.0, burst=2.0)
    async with backend.limiter(clock) as limiter:
        starts = [slot(await limiter.book([bucket], 1)).start for _ in range(5)]
    assert starts == [T0, T0, T0, T0 + 1.0, T0 + 2.0]


async def test_slot_width_is_the_narrowest_of_the_keys_unless_given(backend: Backend) -> None:
    clock = FakeClock()
    keys = [key("site:a.test", 1.0, width=0.5), key("origin:o", 1.0, width=0.1)]
    async with backend.limiter(clock) as limiter:
        narrow = slot(await limiter.book(keys, 1))
        given_slack = slot(await limiter.book(keys, 1, slack=0.75))
    assert narrow.deadline - narrow.start == pytest.approx(0.1)
    assert given_slack.deadline - given_slack.start == pytest.approx(0.75)


async def test_missed_slot_stays_consumed_and_the_rebooking_queues_behind_it(
    backend: Backend,
) -> None:
    clock = FakeClock()
    site = key("site:a.test", 1.0, width=0.2)
    async with backend.limiter(clock) as limiter:
        await limiter.book([site], 1)
        late = slot(await limiter.book([site], 1))  # [T0 + 1, T0 + 1.2]
        clock.advance(1.5)  # the fetcher wakes too late
        assert late.is_missed(clock())
        again = slot(await limiter.book([site], 1))
    assert again.start == T0 + 2.0  # after the forfeited slot, not at "now"
    assert not again.is_missed(clock())
    assert again.wait(clock()) == pytest.approx(0.5)


async def test_booking_beyond_max_lead_is_refused_and_consumes_nothing(
    backend: Backend,
) -> None:
    clock = FakeClock()
    site, origin = key("site:a.test", 1.0), key("origin:o", 2.0)
    async with backend.limiter(clock) as limiter:
        for _ in range(3):  # origin:o booked up to T0 + 6
            await limiter.book([origin], 1)
        refused = await limiter.book([site, origin], 1, max_lead=2.0)
        assert refused == Refusal(not_before=T0 + 4.0, start=T0 + 6.0, keys=("origin:o",))
        assert await limiter.tats(["site:a.test", "origin:o"]) == {"origin:o": T0 + 6.0}
        clock.advance(4.0)
        accepted = slot(await limiter.book([site, origin], 1, max_lead=2.0))
    assert accepted.start == T0 + 6.0


async def test_keys_with_separators_and_quotes_stay_distinct(backend: Backend) -> None:
    clock = FakeClock()
    names = ["origin:addr=10.0.0.1,10.0.0.2", 'origin:q"uote', "origin:back\\slash", "site:{x}"]
    async with backend.limiter(clock) as limiter:
        for offset, name in enumerate(names, start=1):
            await limiter.book([key(name, float(offset))], 1)
        assert await limiter.tats(names) == {
            name: T0 + offset for offset, name in enumerate(names, start=1)
        }


async def test_refusal_lists_every_saturated_key_in_the_callers_order(backend: Backend) -> None:
    clock = FakeClock()
    limits = [key("site:z.test", 5.0), key("origin:a", 5.0), key("site:m.test", 0.1)]
    async with backend.limiter(clock) as limiter:
        await limiter.book(limits, 1)
        refused = await limiter.book(limits, 1, max_lead=1.0)
    assert refused == Refusal(T0 + 4.0, T0 + 5.0, ("site:z.test", "origin:a"))


async def test_bad_requests_are_rejected_before_touching_the_store(backend: Backend) -> None:
    async with backend.limiter(FakeClock()) as limiter:
        with pytest.raises(ValueError, match="at least one"):
            await limiter.book([], 1)
        with pytest.raises(ValueError, match="distinct"):
            await limiter.book([key("site:a.test", 1.0), key("site:a.test", 2.0)], 1)
        with pytest.raises(ValueError, match="cost"):
            await limiter.book([key("site:a.test", 1.0)], 0)
        assert await limiter.tats(["site:a.test"]) == {}


async def test_prune_forgets_only_tats_older_than_the_margin(backend: Backend) -> None:
    clock = FakeClock()
    async with backend.limiter(clock) as limiter:
        await limiter.book([key("site:old.test", 1.0)], 1)
        clock.advance(100.0)
        await limiter.book([key("site:new.test", 1.0)], 1)
        assert await limiter.prune(margin=50.0) == 1
        assert await limiter.tats(["site:old.test", "site:new.test"]) == {
            "site:new.test": T0 + 101.0
        }


async def test_concurrent_tasks_get_distinct_evenly_spaced_slots(backend: Backend) -> None:
    clock = FakeClock()
    site = Limit("site:a.test", KeyParams(0.5, weighted=False))
    origin = key("origin:o", 0.25)  # cost 2: 0.5 s as well

    async with backend.limiter(clock) as limiter:

        async def worker() -> list[float]:
            return [slot(await limiter.book([site, origin], 2)).start for _ in range(10)]

        results = await asyncio.gather(*(worker() for _ in range(8)))
        tats = await limiter.tats(["site:a.test", "origin:o"])
    starts = sorted(start for result in results for start in result)
    assert starts == [T0 + 0.5 * i for i in range(80)]
    assert tats == {"site:a.test": T0 + 40.0, "origin:o": T0 + 40.0}


def _batch_requests() -> list[BookingRequest]:
    """Overlapping keys, keys first seen mid-batch, a burst key, weighted costs, a request
    refused for its lead, one with a slot width of its own, and two that start no sooner than
    a time (one of them past)."""
    site_a, site_b = key("site:a.test", 1.0), key("site:b.test", 0.5)
    origin = key("origin:o", 0.25)
    bucket = key("bucket:s3/b", 0.1, burst=0.3)
    return [
        BookingRequest((site_a, origin), 2),
        BookingRequest((site_b, origin), 4),
        BookingRequest((site_a, origin), 2),
        BookingRequest((bucket,), 1),
        BookingRequest((bucket, origin), 1, slack=0.05),
        BookingRequest((key("site:new.test", 2.0), origin), 2),
        BookingRequest((site_a, origin), 2, max_lead=0.5),  # both keys booked too far ahead
        BookingRequest((bucket,), 3),
        BookingRequest((site_b, origin), 1, max_lead=10.0),
        # Booked a moment before they may start: as if booked then.
        BookingRequest((key("site:c.test", 1.0), key("origin:p", 0.25)), 1, start_after=T0 + 0.4),
        BookingRequest((key("site:d.test", 1.0), key("origin:p", 0.25)), 1, start_after=T0),
    ]


async def test_a_batch_books_exactly_as_bookings_one_after_another(backend: Backend) -> None:
    requests = _batch_requests()
    answers = {}
    for how in ("one by one", "batch"):
        backend.reset()
        clock = FakeClock()
        async with backend.limiter(clock) as limiter:
            await limiter.book([key("site:b.test", 0.5)], 1)  # an earlier booking
            clock.advance(0.1)
            if how == "batch":
                got = await limiter.book_many(requests)
            else:
                got = [
                    await limiter.book(
                        r.limits,
                        r.cost,
                        max_lead=r.max_lead,
                        slack=r.slack,
                        start_after=r.start_after,
                    )
                    for r in requests
                ]
            keys = sorted({limit.key for r in requests for limit in r.limits})
            answers[how] = (got, await limiter.tats(keys))
    assert answers["batch"] == answers["one by one"]
    bookings, _ = answers["batch"]
    assert isinstance(bookings[6], Refusal) and bookings[6].keys == ("site:a.test", "origin:o")
    assert sum(isinstance(b, Slot) for b in bookings) == 10
    assert slot(bookings[9]).start == T0 + 0.4  # its own time, the keys being free then
    assert slot(bookings[10]).start == T0 + 0.4 + 0.25  # the clock's time had passed


async def test_a_booking_made_before_its_start_books_as_if_made_then(backend: Backend) -> None:
    clock = FakeClock()
    site, origin = key("site:a.test", 1.0), key("origin:o", 0.5)
    async with backend.limiter(clock) as limiter:
        early = slot(await limiter.book([site, origin], 1, start_after=T0 + 0.05))
        assert early.start == T0 + 0.05
        assert await limiter.tats(["site:a.test", "origin:o"]) == {
            "site:a.test": T0 + 1.05,
            "origin:o": T0 + 0.55,
        }
        other = slot(await limiter.book([key("site:b.test", 1.0), origin], 1))
        assert other.start == T0 + 0.55  # after it: the origin's clock ran from its start
        with pytest.raises(ValueError, match="start_after"):
            await limiter.book([site], 1, start_after=math.nan)


async def test_an_empty_batch_books_nothing(backend: Backend) -> None:
    async with backend.limiter(FakeClock()) as limiter:
        assert await limiter.book_many([]) == []


async def test_concurrent_postgres_batches_on_crossing_keys_never_overlap(
    postgres_dsn: str,
) -> None:
    """Batches from several sessions lock their keys in key order, whatever order their
    requests name them in: they queue, never deadlock, and no two slots on a key are
    closer than its interval, keys that another session creates meanwhile included (each
    round books a new key from every session at once)."""
    backend = Backend("postgres", Path("unused"), postgres_dsn)
    backend.reset()
    a, b, c = key("origin:a", 0.01), key("origin:b", 0.01), key("origin:c", 0.01)
    orders = [[(a, b), (b, c), (c, a)], [(c, b), (b, a), (a, c)], [(b,), (c, a), (a, b)]]
    fresh = [key(f"origin:new{n}", 0.01) for n in range(15)]
    limiters = [await backend.open() for _ in orders]
    try:

        async def session(limiter: Limiter, pairs: list[tuple[Limit, ...]]) -> list[Slot]:
            booked: list[Slot] = []
            for new in fresh:
                batch = [*pairs, (new, pairs[0][0]), (new,)]
                got = await limiter.book_many([BookingRequest(keys, 1) for keys in batch])
                booked += [slot(b) for b in got if not isinstance(b, LeaseLost)]
            return booked

        results = await asyncio.wait_for(
            asyncio.gather(
                *(session(lim, order) for lim, order in zip(limiters, orders, strict=True))
            ),
            60,
        )
    finally:
        for limiter in limiters:
            await limiter.close()
    slots = [s for got in results for s in got]
    assert len(slots) == len(fresh) * sum(len(order) + 2 for order in orders)
    for name in {k for s in slots for k in s.keys}:
        starts = sorted(s.start for s in slots if name in s.keys)
        assert min(y - x for x, y in itertools.pairwise(starts)) >= 0.01 - 1e-6, name


# --- clock adjustments: floors, late charges, busy keys ---


async def test_raise_floor_delays_the_next_booking_to_the_floor(backend: Backend) -> None:
    clock = FakeClock()
    async with backend.limiter(clock) as limiter:
        await limiter.raise_floor({"site:a.test": T0 + 30.0})
        assert await limiter.tats(["site:a.test"]) == {"site:a.test": T0 + 30.0}
        paused = slot(await limiter.book([key("site:a.test", 1.0)], 1))
        assert await limiter.tats(["site:a.test"]) == {"site:a.test": T0 + 31.0}
    assert paused.start == T0 + 30.0


async def test_raise_floor_only_raises_and_moves_every_key_at_once(backend: Backend) -> None:
    clock = FakeClock()
    async with backend.limiter(clock) as limiter:
        for _ in range(5):  # site:a.test booked up to T0 + 5
            await limiter.book([key("site:a.test", 1.0)], 1)
        await limiter.raise_floor(
            {"site:a.test": T0 + 2.0, "origin:o": T0 + 8.0, "site:b.test": T0 - 50.0}
        )
        tats = await limiter.tats(["site:a.test", "origin:o", "site:b.test"])
        assert tats == {"site:a.test": T0 + 5.0, "origin:o": T0 + 8.0, "site:b.test": T0 - 50.0}
        # a floor in the past holds nobody back
        assert slot(await limiter.book([key("site:b.test", 1.0)], 1)).start == T0
        await limiter.raise_floor({})  # nothing to do
        assert await limiter.tats(["origin:o"]) == {"origin:o": T0 + 8.0}


async def test_a_floor_counts_for_multi_key_bookings_and_refusals(backend: Backend) -> None:
    clock = FakeClock()
    site, origin = key("site:a.test", 1.0), key("origin:o", 1.0)
    async with backend.limiter(clock) as limiter:
        await limiter.raise_floor({"origin:o": T0 + 20.0})
        refused = await limiter.book([site, origin], 1, max_lead=5.0)
        assert refused == Refusal(T0 + 15.0, T0 + 20.0, ("origin:o",))
        assert await limiter.tats(["site:a.test"]) == {}
        both = slot(await limiter.book([site, origin], 1))
    assert both.start == T0 + 20.0


async def test_a_burst_key_may_start_its_tolerance_before_a_floor(backend: Backend) -> None:
    clock = FakeClock()
    bucket = key("bucket:simstore/b", 1.0, burst=3.0)
    async with backend.limiter(clock) as limiter:
        await limiter.raise_floor({bucket.key: T0 + 10.0})
        early = slot(await limiter.book([bucket], 1))
        await limiter.raise_floor({bucket.key: T0 + 40.0 + bucket.params.burst})  # a hard floor
        hard = slot(await limiter.book([bucket], 1))
    assert early.start == T0 + 7.0
    assert hard.start == T0 + 40.0


async def test_charge_adds_to_the_tat_from_now_and_returns_it(backend: Backend) -> None:
    clock = FakeClock()
    origin = key("origin:o", 0.5)  # 0.5 s per cost unit
    async with backend.limiter(clock) as limiter:
        assert await limiter.charge(origin, 2) == T0 + 1.0  # no TAT yet: from now
        assert await limiter.charge(origin, 4) == T0 + 3.0  # from the TAT, still ahead
        clock.advance(10.0)
        assert await limiter.charge(origin, 1) == T0 + 10.5  # an old TAT: from now
        assert await limiter.tats(["origin:o"]) == {"origin:o": T0 + 10.5}
        assert slot(await limiter.book([origin], 1)).start == T0 + 10.5


async def test_charge_of_an_unweighted_key_counts_one_request(backend: Backend) -> None:
    clock = FakeClock()
    site = Limit("site:a.test", KeyParams(2.0, weighted=False))
    async with backend.limiter(clock) as limiter:
        await limiter.book([site], 4)
        assert await limiter.charge(site, 4) == T0 + 4.0


async def test_charge_agrees_with_the_pure_function_exactly(backend: Backend) -> None:
    clock = FakeClock(T0 + 0.1)
    origin = key("origin:o", 0.3)
    model: dict[str, float] = {}
    async with backend.limiter(clock) as limiter:
        for step_cost, advance in [(1.0, 0.0), (2.0, 0.7), (4.0, 0.05), (1.0, 9.3)]:
            clock.advance(advance)
            expected = charge_after(model, clock(), origin, step_cost)
            model[origin.key] = expected
            assert await limiter.charge(origin, step_cost) == expected


async def test_keys_after_lists_exactly_the_keys_busy_after_a_time(backend: Backend) -> None:
    clock = FakeClock()
    async with backend.limiter(clock) as limiter:
        await limiter.book([key("site:a.test", 1.0)], 1)  # T0 + 1
        await limiter.book([key("site:b.test", 5.0)], 1)  # T0 + 5
        await limiter.raise_floor({"origin:o": T0 + 30.0, "site:old.test": T0 - 10.0})
        assert await limiter.keys_after(T0 + 1.0) == {
            "site:b.test": T0 + 5.0,
            "origin:o": T0 + 30.0,
        }
        assert set(await limiter.keys_after(T0 - 20.0)) == {
            "site:a.test",
            "site:b.test",
            "origin:o",
            "site:old.test",
        }
        assert await limiter.keys_after(T0 + 30.0) == {}


@pytest.mark.parametrize(
    ("floors", "message"),
    [
        ({"": T0}, "non-empty"),
        ({"site:a.test": math.nan}, "finite"),
        ({"site:a.test": math.inf}, "finite"),
        ({"site:a.test": True}, "finite"),
        ({"site:a.test": T0, "site:b.test": -math.inf}, "finite"),
    ],
)
async def test_bad_floors_are_rejected_before_touching_the_store(
    backend: Backend, floors: dict[str, float], message: str
) -> None:
    async with backend.limiter(FakeClock()) as limiter:
        with pytest.raises(ValueError, match=message):
            await limiter.raise_floor(floors)
        assert await limiter.tats(["site:a.test", "site:b.test"]) == {}


async def test_bad_charges_and_times_are_rejected_before_touching_the_store(
    backend: Backend,
) -> None:
    async with backend.limiter(FakeClock()) as limiter:
        for cost in (0, -1.0, math.inf, math.nan):
            with pytest.raises(ValueError, match="cost"):
                await limiter.charge(key("site:a.test", 1.0), cost)
        with pytest.raises(ValueError, match="Limit"):
            await limiter.charge("site:a.test", 1)  # type: ignore[arg-type]
        for when in (math.nan, math.inf):
            with pytest.raises(ValueError, match="when"):
                await limiter.keys_after(when)
        assert await limiter.tats(["site:a.test"]) == {}


async def test_floors_and_charges_are_shared_by_every_limiter_on_one_store(
    shared_backend: Backend,
) -> None:
    clock = FakeClock()
    async with shared_backend.limiter(clock) as first, shared_backend.limiter(clock) as second:
        await first.raise_floor({"site:a.test": T0 + 12.0})
        await first.charge(key("origin:o", 1.0), 3)
        assert await second.keys_after(T0) == {"site:a.test": T0 + 12.0, "origin:o": T0 + 3.0}
        assert slot(await second.book([key("site:a.test", 1.0)], 1)).start == T0 + 12.0


def test_memory_limiter_adjusts_clocks_synchronously() -> None:
    clock = FakeClock()
    limiter = MemoryLimiter(clock)
    limiter.raise_floor_now({"site:a.test": T0 + 4.0})
    assert limiter.charge_now(key("site:a.test", 1.0), 1) == T0 + 5.0
    assert limiter.charge_now(key("origin:o", 0.5), 4) == T0 + 2.0
    assert slot(limiter.book_now([key("site:a.test", 1.0)], 1)).start == T0 + 5.0
    assert limiter.snapshot() == {"site:a.test": T0 + 6.0, "origin:o": T0 + 2.0}
    with pytest.raises(ValueError, match="finite"):
        limiter.raise_floor_now({"site:b.test": T0, "site:c.test": math.nan})
    assert "site:b.test" not in limiter.snapshot()  # nothing half-applied


async def test_concurrent_floors_and_bookings_on_postgres_never_start_before_the_floor(
    postgres_dsn: str,
) -> None:
    """Bookings race floors raised by other sessions: each booking either ran before a floor
    was raised (its TAT is then raised over it) or starts at or after that floor."""
    backend = Backend("postgres", Path("unused"), postgres_dsn)
    backend.reset()
    clock = FakeClock()
    site = key("site:race.test", 0.01)
    floors = [T0 + 1.0 + 0.5 * i for i in range(40)]

    async with backend.limiter(clock) as booker, backend.limiter(clock) as pauser:
        raised: list[float] = []  # floors whose raise_floor has returned
        starts: list[tuple[float, float]] = []  # (highest floor known raised before, start)

        async def pause() -> None:
            for floor in floors:
                await pauser.raise_floor({site.key: floor})
                raised.append(floor)
                await asyncio.sleep(0)

        async def book() -> None:
            for _ in range(60):
                known = raised[-1] if raised else -math.inf
                starts.append((known, slot(await booker.book([site], 1)).start))

        await asyncio.gather(pause(), book(), book(), book())
        final = await booker.tats([site.key])

    assert final[site.key] >= floors[-1]
    for known, start in starts:
        assert start >= known  # a floor raised before a booking began holds it back
    ordered = sorted(start for _, start in starts)
    gaps = [b - a for a, b in itertools.pairwise(ordered)]
    assert min(gaps) >= 0.01 - 1e-6  # floors never let two bookings bunch up (1e-6: float ulp)
    assert len(ordered) == 180


async def test_concurrent_sessions_raising_floors_and_booking_never_go_below_a_floor(
    postgres_dsn: str,
) -> None:
    """Many sessions at once on one key: a booking by one session after another session's
    raise_floor returned never starts before that floor, and the TAT ends at the highest."""
    backend = Backend("postgres", Path("unused"), postgres_dsn)
    backend.reset()
    clock = FakeClock()
    site = key("site:race.test", 0.0)
    async with backend.limiter(clock) as limiter:  # 4 connections: really concurrent

        async def pause_then_book(floor: float) -> float:
            await limiter.raise_floor({site.key: floor})
            return slot(await limiter.book([site], 1)).start

        floors = [T0 + 100.0 - i for i in range(50)]
        starts = await asyncio.gather(*(pause_then_book(floor) for floor in floors))
        assert await limiter.tats([site.key]) == {site.key: T0 + 100.0}
    for floor, start in zip(floors, starts, strict=True):
        assert start >= floor


# --- floor integrity and agreement with the pure function, over random histories ---

KEYS = {
    "site:a.test": KeyParams(1.0, 0.0, 0.2, weighted=False),
    "site:b.test": KeyParams(0.5, 0.0, 0.3, weighted=False),
    "origin:o": KeyParams(0.5, 0.0, 0.25),
    "bucket:simstore/b": KeyParams(0.1, 1.0, 0.25),
}

step = st.tuples(
    st.lists(st.sampled_from(sorted(KEYS)), min_size=1, max_size=3, unique=True),
    st.sampled_from([1.0, 2.0, 4.0]),
    st.floats(0.0, 3.0),  # how late the fetcher wakes after the slot opens
    st.sampled_from([math.inf, 2.0]),  # max lead
)


async def _replay(
    backend: Backend, steps: list[tuple[list[str], float, float, float]]
) -> list[tuple[Slot, float]]:
    """Book every step, sleeping until each slot (plus lateness); rebook missed slots."""
    clock = FakeClock()
    model: dict[str, float] = {}
    started: list[tuple[Slot, float]] = []
    async with backend.limiter(clock) as limiter:
        for names, cost, lateness, max_lead in steps:
            limits = [Limit(name, KEYS[name]) for name in names]
            for _attempt in range(20):  # only the first wake-up is late
                expected, updates = book(model, clock(), limits, cost, max_lead=max_lead)
                got = await limiter.book(limits, cost, max_lead=max_lead)
                assert got == expected  # every backend is the pure function, exactly
                model.update(updates)
                if isinstance(got, Refusal):
                    clock.now = got.not_before
                    continue
                clock.now = max(clock.now, got.start + lateness)
                lateness = 0.0
                if not got.is_missed(clock()):
                    started.append((got, clock()))
                    break
            else:
                raise AssertionError(f"no slot kept after 20 attempts: {names}")
    return started


def _assert_floor(started: list[tuple[Slot, float]]) -> None:
    """No two actual starts on a key are closer than the charge of the first minus the slack,
    and over any run of bookings the GCRA budget holds: sum of charges <= span + tau + slack."""
    for name, params in KEYS.items():
        on_key = [(booked, at) for booked, at in started if name in booked.keys]
        for i, (first, first_at) in enumerate(on_key):
            slack = first.deadline - first.start
            charged = 0.0
            for j in range(i + 1, len(on_key)):
                charged += params.charge(on_key[j - 1][0].cost)
                gap = on_key[j][1] - first_at
                assert gap >= charged - params.burst - slack - 1e-6, (name, i, j)


@pytest.mark.parametrize("examples", [60])
def test_floor_integrity_holds_for_random_histories_with_missed_slots(
    backend: Backend, examples: int
) -> None:
    @settings(
        max_examples=examples if backend.name != "memory" else 200,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
        database=None,
    )
    @given(st.lists(step, min_size=1, max_size=25))
    def check(steps: list[tuple[list[str], float, float, float]]) -> None:
        backend.reset()
        _assert_floor(asyncio.run(_replay(backend, steps)))

    check()


# --- several processes on one store (SQLite file, PostgreSQL server) ---


def _book_in_process(backend: Backend, count: int, results: Any) -> None:
    async def run() -> list[float]:
        async with backend.limiter() as limiter:
            limits = [key("site:shared.test", 0.002), key("origin:shared", 0.001)]
            return [slot(await limiter.book(limits, 2)).start for _ in range(count)]

    results.put(asyncio.run(run()))


def test_concurrent_processes_never_book_overlapping_slots(shared_backend: Backend) -> None:
    # spawn, not fork: the test process may have threads (a forked child could inherit a lock
    # some thread held at that instant and hang)
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    workers = [
        context.Process(target=_book_in_process, args=(shared_backend, 150, results))
        for _ in range(3)
    ]
    for worker in workers:
        worker.start()
    collected = [results.get(timeout=60) for _ in workers]
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    starts = sorted(start for result in collected for start in result)
    assert len(starts) == 450
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert min(gaps) >= 0.002 - 1e-9  # both keys' charge is 2 ms; tau = 0


# --- backend-specific failures ---


async def test_unreachable_postgres_raises_limiter_error() -> None:
    with pytest.raises(LimiterError, match="cannot set up"):
        await PostgresLimiter.connect("host=127.0.0.1 port=1 user=x connect_timeout=2")


async def test_concurrent_postgres_setups_do_not_collide(postgres_dsn: str) -> None:
    """Workers starting together on a new database each create the schema if it is missing:
    every one of them gets a limiter, and they book on one table."""
    for _round in range(3):
        with fresh_database(postgres_dsn, "limiter_setup") as dsn:
            clock = FakeClock()
            limiters = await asyncio.gather(
                *(PostgresLimiter.connect(dsn, clock=clock, connections=1) for _ in range(6))
            )
            try:
                starts = [slot(await lim.book([key("site:a.test", 2.0)], 1)).start
                          for lim in limiters]  # fmt: skip
                assert starts == [T0 + 2.0 * n for n in range(6)]
            finally:
                for limiter in limiters:
                    await limiter.close()
            with psycopg.connect(dsn, autocommit=True) as conn:
                tables = conn.execute(
                    "SELECT count(*) FROM pg_tables WHERE tablename = %s", (TABLE,)
                ).fetchone()
                functions = conn.execute(
                    "SELECT count(*) FROM pg_proc WHERE proname = 'courtier_book_many'"
                ).fetchone()
            assert (tables, functions) == ((1,), (1,))


async def test_memory_limiter_resumes_from_a_snapshot() -> None:
    clock = FakeClock()
    first = MemoryLimiter(clock)
    await first.book([key("site:a.test", 2.0)], 1)
    resumed = MemoryLimiter(clock, tats=first.snapshot())
    assert slot(await resumed.book([key("site:a.test", 2.0)], 1)).start == T0 + 2.0


def test_missing_postgres_binaries_are_reported_not_skipped(tmp_path: Path) -> None:
    with pytest.raises(PostgresUnavailable, match="initdb is missing"):
        PostgresCluster(bin_dir=tmp_path)


def test_unopenable_sqlite_file_raises_limiter_error(tmp_path: Path) -> None:
    with pytest.raises(LimiterError, match="cannot open"):
        SqliteLimiter(tmp_path / "missing-dir" / "limiter.sqlite")
