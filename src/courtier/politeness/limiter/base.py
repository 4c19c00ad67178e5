"""The ``Limiter`` contract every booking backend keeps.

A limiter stores one TAT per limit key and books requests with ``courtier.politeness.gcra``
arithmetic, atomically over all keys of a booking, even when several tasks, processes or
machines book the same keys at once. Backends differ only in where the TATs live:

- ``MemoryLimiter``: a dict in one process (the embedded default's hot path);
- ``SqliteLimiter``: a SQLite file, one ``BEGIN IMMEDIATE`` transaction per booking, safe for
  several processes on one machine;
- ``PostgresLimiter``: one table and one atomic statement per booking, for many machines.

Contract for callers:

- ``book`` returns a ``Slot`` or a ``Refusal``. A slot is an appointment: sleep until
  ``slot.start``, then start the request only if ``not slot.is_missed(limiter.clock())``;
  a missed slot stays consumed, book again. A refusal consumed nothing: offer the work
  again at ``refusal.not_before`` (it waits in the frontier, not in memory).
- Times are seconds on ``limiter.clock`` (``time.time`` by default, so processes and
  machines share it). Judge slots with the same clock that booked them.
- Parameters travel with each booking (``Limit``), so Crawl-delay or feedback changes apply
  to the next booking; different parameters for one key from different callers are allowed.
- Bad input (no keys, duplicate keys, non-positive cost) raises ValueError before any I/O;
  a storage failure raises ``LimiterError`` and books nothing: the crawl treats the request
  as not booked and tries later.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from courtier.politeness.gcra import Booking, Limit

Clock = Callable[[], float]

DEFAULT_PRUNE_MARGIN = 300.0
"""Seconds a past TAT is kept before pruning (tolerates clock skew between machines)."""


class LimiterError(RuntimeError):
    """The limiter's storage failed; nothing was booked."""


@runtime_checkable
class Limiter(Protocol):
    @property
    def clock(self) -> Clock:
        """The clock slots are booked on (and must be judged on)."""
        ...

    async def book(
        self,
        limits: Sequence[Limit],
        cost: float,
        *,
        max_lead: float = math.inf,
        slack: float | None = None,
    ) -> Booking:
        """Book one request of ``cost`` on every key of ``limits`` at ``clock()``."""
        ...

    async def tats(self, keys: Sequence[str]) -> dict[str, float]:
        """The stored TAT of each key that has one (for inspection and tests)."""
        ...

    async def prune(self, margin: float = DEFAULT_PRUNE_MARGIN) -> int:
        """Forget TATs older than ``clock() - margin`` (equivalent to absent); return how many."""
        ...

    async def close(self) -> None:
        """Release connections and threads; the limiter cannot be used afterwards."""
        ...
