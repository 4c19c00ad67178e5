"""In-memory limiter: TATs in a dict, for one process (the embedded default's hot path).

``book`` never awaits between reading and writing the TATs, so bookings from any number of
asyncio tasks on one event loop are atomic without a lock. It is not thread-safe: use it from
the event loop that owns it. Every operation has a synchronous twin (``book_now``,
``raise_floor_now``, ``charge_now``) for callers in the owning thread that need no coroutine.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence

from courtier.politeness.gcra import Booking, Limit, book, charge_after
from courtier.politeness.limiter.base import (
    DEFAULT_PRUNE_MARGIN,
    BookingRequest,
    BookingResult,
    Clock,
    Fence,
    book_each,
    booking_time,
    check_charge,
    check_floors,
    check_time,
)


class MemoryLimiter:
    def __init__(self, clock: Clock = time.time, tats: Mapping[str, float] | None = None) -> None:
        """``tats`` restores a ``snapshot()`` (persisted in batches by the embedded crawl)."""
        self._clock = clock
        self._tats: dict[str, float] = dict(tats or {})

    @property
    def clock(self) -> Clock:
        return self._clock

    def book_now(
        self,
        limits: Sequence[Limit],
        cost: float,
        *,
        max_lead: float = math.inf,
        slack: float | None = None,
        fence: Fence | None = None,
        start_after: float | None = None,
    ) -> Booking:
        """``book`` without a coroutine, for synchronous callers in the owning thread."""
        now = booking_time(self._clock, start_after)
        booking, updates = book(self._tats, now, limits, cost, max_lead=max_lead, slack=slack)
        self._tats.update(updates)
        return booking

    async def book(
        self,
        limits: Sequence[Limit],
        cost: float,
        *,
        max_lead: float = math.inf,
        slack: float | None = None,
        fence: Fence | None = None,
        start_after: float | None = None,
    ) -> Booking:
        return self.book_now(limits, cost, max_lead=max_lead, slack=slack, start_after=start_after)

    async def book_many(self, requests: Sequence[BookingRequest]) -> list[BookingResult]:
        return await book_each(self, requests)

    def raise_floor_now(self, floors: Mapping[str, float]) -> None:
        """``raise_floor`` without a coroutine, for synchronous callers in the owning thread."""
        tats = self._tats
        for key, floor in check_floors(floors).items():
            tats[key] = max(tats.get(key, -math.inf), floor)

    async def raise_floor(self, floors: Mapping[str, float]) -> None:
        self.raise_floor_now(floors)

    def charge_now(self, limit: Limit, cost: float) -> float:
        """``charge`` without a coroutine, for synchronous callers in the owning thread."""
        check_charge(limit, cost)
        tat = charge_after(self._tats, self._clock(), limit, cost)
        self._tats[limit.key] = tat
        return tat

    async def charge(self, limit: Limit, cost: float) -> float:
        return self.charge_now(limit, cost)

    async def keys_after(self, when: float) -> dict[str, float]:
        when = check_time("when", when)
        return {key: tat for key, tat in self._tats.items() if tat > when}

    def snapshot(self) -> dict[str, float]:
        """A copy of every TAT, to persist and later pass back as ``tats``."""
        return dict(self._tats)

    def raise_key_now(self, key: str, floor: float) -> None:
        """``raise_floor_now`` of one key whose floor the caller computed (a finite time):
        no validation, for the hot path."""
        tats = self._tats
        if floor > tats.get(key, -math.inf):
            tats[key] = floor

    def tat_now(self, key: str) -> float | None:
        """One key's TAT without a coroutine (None: the key has none)."""
        return self._tats.get(key)

    async def tats(self, keys: Sequence[str]) -> dict[str, float]:
        return {key: self._tats[key] for key in keys if key in self._tats}

    async def prune(self, margin: float = DEFAULT_PRUNE_MARGIN) -> int:
        horizon = self._clock() - margin
        stale = [key for key, tat in self._tats.items() if tat < horizon]
        for key in stale:
            del self._tats[key]
        return len(stale)

    async def close(self) -> None:
        """Nothing to release: the TATs live as long as the object."""
