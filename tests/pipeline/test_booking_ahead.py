"""Lanes booked by round trip (SQLite, PostgreSQL): a moment before their own time, as of it,
several to a round trip."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from lane_harness import FleetLimiter, Lanes, allow_all

from courtier.config import load
from courtier.pipeline.scheduling.booker import BOOK_AHEAD, BOOK_MARGIN
from courtier.pipeline.scheduling.timer import FakeTimer, sleep_until
from courtier.politeness.limiter.base import BookingRequest, BookingResult
from courtier.politeness.limiter.memory import MemoryLimiter

FAST = ["limits.origin.rate=1000", "limits.cdn.rate=1000", "limits.cdn-miss.rate=1000"]
ROUND_TRIP = 0.005
"""Seconds of the fake clock a round trip to the limiter takes."""


class RoundTripLimiter(FleetLimiter):
    """A limiter reached by round trip: every call takes ``ROUND_TRIP`` of fake time, and
    each batch is recorded (when it was sent, what it asked)."""

    def __init__(self, timer: FakeTimer) -> None:
        super().__init__(MemoryLimiter(clock=timer.now))
        self.timer = timer
        self.trips: list[tuple[float, list[BookingRequest]]] = []

    async def book_many(self, requests: Sequence[BookingRequest]) -> list[BookingResult]:
        self.trips.append((self.timer.now(), list(requests)))
        await sleep_until(self.timer, self.timer.now() + ROUND_TRIP)
        return await super().book_many(requests)

    async def raise_floor(self, floors: Any) -> None:
        await sleep_until(self.timer, self.timer.now() + ROUND_TRIP)
        await super().raise_floor(floors)


def harness(tmp_path: Path, *overrides: str, by_round_trip: bool) -> Lanes:
    timer = FakeTimer()
    limiter = RoundTripLimiter(timer) if by_round_trip else MemoryLimiter(clock=timer.now)
    name = "trip" if by_round_trip else "memory"
    h = Lanes(
        load(None, [*FAST, *overrides]), tmp_path / name, allow_all, timer=timer, limiter=limiter
    )
    h.start()
    return h


@pytest.fixture
def made(tmp_path: Path):
    (tmp_path / "trip").mkdir()
    (tmp_path / "memory").mkdir()
    return tmp_path


async def test_a_site_waiting_for_its_spacing_is_booked_ahead_and_starts_on_time(made) -> None:
    starts = {}
    for by_round_trip in (False, True):
        h = harness(made, "limits.site.rate=2", by_round_trip=by_round_trip)
        site = h.site("a.test", [f"/p{n}" for n in range(5)])
        h.pages.arm(site)
        await h.timer.advance(10.0)
        starts[by_round_trip] = h.starts("a.test", robots=True)
        if by_round_trip:
            limiter = h.limiter
            assert isinstance(limiter, RoundTripLimiter)
            ahead = [(sent, r.start_after) for sent, rs in limiter.trips for r in rs]
            # Every page after the first is asked for before its time, as of that time.
            for (sent, after), start in zip(ahead[1:], starts[True][1:], strict=True):
                assert after == pytest.approx(start)
                assert sent == pytest.approx(after - BOOK_MARGIN)
        await h.close()
    assert len(starts[True]) == 6
    # Not a round trip late: each request starts when booking in-thread starts it.
    assert starts[True] == pytest.approx(starts[False])
    assert all(b - a >= 0.5 for a, b in itertools.pairwise(starts[True]))


async def test_sites_due_within_a_few_hundredths_share_a_round_trip(made) -> None:
    h = harness(made, "limits.site.rate=1", by_round_trip=True)
    for n in range(10):
        site = h.site(f"s{n}.test", [f"/p{k}" for k in range(4)])
        h.pages.arm(site)
        await h.timer.advance(0.004)  # their times 4 ms apart
    await h.timer.advance(10.0)
    limiter = h.limiter
    assert isinstance(limiter, RoundTripLimiter)
    booked = sum(len(requests) for _sent, requests in limiter.trips)
    assert booked >= 50  # robots.txt and four pages each, and none lost
    later = [requests for sent, requests in limiter.trips if sent > 0.5 + h.timer.now() - 10.0]
    # After the first contacts, each round trip books the sites due within BOOK_AHEAD.
    assert sum(len(r) for r in later) / len(later) >= 3
    for n in range(10):
        starts = h.starts(f"s{n}.test", robots=True)
        assert len(starts) == 5
        assert all(b - a >= 1.0 for a, b in itertools.pairwise(starts))
    assert h.stats.missed_slots == 0
    assert BOOK_AHEAD > BOOK_MARGIN + ROUND_TRIP
    await h.close()


async def test_a_site_moved_while_its_booking_was_out_asks_again_on_its_new_origin(
    made,
) -> None:
    """Refused on its old origin's key (a CDN edge booked far ahead) by a booking sent
    before its site moved: it asks again on its new keys, not in the old key's line."""
    h = harness(made, "limits.site.rate=1", by_round_trip=True)
    limiter = h.limiter
    assert isinstance(limiter, RoundTripLimiter)
    await limiter.shared.raise_floor({"origin:edge": h.timer.now() + 100.0})
    site = h.site("a.test", ["/p0"], origin="edge")
    h.pages.arm(site)
    await h.timer.advance(ROUND_TRIP / 2)  # its booking is out
    assert [r.limits[-1].key for _sent, rs in limiter.trips for r in rs] == ["origin:edge"]
    site.origin = "site:a.test"  # split off the edge (``LiveOrigins._apply``)
    h.pages.rebook(site)
    await h.timer.advance(2.0)
    starts = h.starts("a.test", robots=True)
    assert starts and starts[0] < h.timer.now() - 1.0
    assert h.pages.key_waits.lines() == 0
    await h.close()
