"""In-memory limiter: TATs in a dict, for one process (the embedded default's hot path).

``book`` never awaits between reading and writing the TATs, so bookings from any number of
asyncio tasks on one event loop are atomic without a lock. It is not thread-safe: use it from
the event loop that owns it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence

from courtier.politeness.gcra import Booking, Limit, book
from courtier.politeness.limiter.base import DEFAULT_PRUNE_MARGIN, Clock


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
    ) -> Booking:
        """``book`` without a coroutine, for synchronous callers in the owning thread."""
        booking, updates = book(
            self._tats, self._clock(), limits, cost, max_lead=max_lead, slack=slack
        )
        self._tats.update(updates)
        return booking

    async def book(
        self,
        limits: Sequence[Limit],
        cost: float,
        *,
        max_lead: float = math.inf,
        slack: float | None = None,
    ) -> Booking:
        return self.book_now(limits, cost, max_lead=max_lead, slack=slack)

    def snapshot(self) -> dict[str, float]:
        """A copy of every TAT, to persist and later pass back as ``tats``."""
        return dict(self._tats)

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
