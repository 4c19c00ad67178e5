"""The ``Limiter`` contract every booking backend keeps.

A limiter stores one TAT per limit key and books requests with ``courtier.politeness.gcra``
arithmetic, atomically over all keys of a booking, even when several tasks, processes or
machines book the same keys at once. Backends differ only in where the TATs live:

- ``MemoryLimiter``: a dict in one process (the embedded default's hot path);
- ``SqliteLimiter``: a SQLite file, one ``BEGIN IMMEDIATE`` transaction per booking, safe for
  several processes on one machine;
- ``PostgresLimiter``: one table and one atomic statement per booking (one call per batch),
  for many machines.

Contract for callers:

- ``book`` returns a ``Slot`` or a ``Refusal``; ``book_many`` books several requests in
  order, exactly as that many ``book`` calls one after another with nobody booking between
  them (PostgreSQL: one round trip for all of them). A slot is an appointment: sleep until
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

Besides bookings, two clock adjustments, each atomic (one statement or transaction):

- ``raise_floor``: ``TAT = max(TAT, floor)`` per key (a pause, a restored floor, a clock
  carried over to a site's new origin); a key without a TAT gets one. It never lowers a TAT.
  A booking then starts no earlier than ``floor - tau`` (the key's burst tolerance, which
  travels with bookings, not with floors): pass ``floor + tau`` for a hard floor on a key
  that tolerates bursts. With ``tau = 0`` nothing starts before the floor.
- ``charge``: a late charge, ``TAT = max(TAT, now) + charge(cost)`` on ``clock()``, for a
  request that turned out dearer than booked (``gcra.charge_after``). It never credits.

``keys_after(when)`` lists every key whose TAT lies after ``when`` (to save the floors of all
busy keys when a crawl stops).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from courtier.politeness.gcra import Booking, Limit, check_request

Clock = Callable[[], float]

DEFAULT_PRUNE_MARGIN = 300.0
"""Seconds a past TAT is kept before pruning (tolerates clock skew between machines)."""


SHARD_LEASES = "courtier_shard_leases"
"""The table of shard leases of a scale-out crawl (``courtier.pipeline.cluster.shards``); a fenced
booking checks its lease there, in the booking's own statement."""


class LimiterError(RuntimeError):
    """The limiter's storage failed; nothing was booked."""


class LimiterUnavailable(LimiterError):
    """The limiter's server cannot be reached now (a restart, a failover, a network blip):
    nothing was booked or written; the same call may succeed once it is back. Until then
    nothing may be sent on its keys."""


class LeaseLost(LimiterError):
    """The booking's fence no longer holds: another worker owns the shard now (or the lease
    expired). Nothing was booked; the caller must stop working on that shard."""


@dataclass(frozen=True, slots=True)
class Fence:
    """A shard lease, checked in the same statement as a booking (shared mode): the booking
    succeeds only while ``owner`` still holds ``shard`` with this ``token``."""

    shard: int
    owner: str
    token: int


@dataclass(frozen=True, slots=True)
class BookingRequest:
    """One request of a ``book_many`` batch: the arguments of one ``book`` call."""

    limits: tuple[Limit, ...]
    cost: float
    max_lead: float = math.inf
    slack: float | None = None
    fence: Fence | None = None
    start_after: float | None = None
    """The request starts no sooner: booked as at this time when it is past the clock's
    (a lane books its next request a moment before its own spacing lets it start)."""


BookingResult = Booking | LeaseLost
"""A batch's answer for one request: its slot or refusal, or the fence that failed."""


async def book_each(limiter: Limiter, requests: Sequence[BookingRequest]) -> list[BookingResult]:
    """``book_many`` as ``book`` calls one after another (backends that gain nothing from a
    batch). ``LeaseLost`` is that request's answer; any other error ends the batch."""
    results: list[BookingResult] = []
    for r in requests:
        try:
            results.append(
                await limiter.book(
                    r.limits,
                    r.cost,
                    max_lead=r.max_lead,
                    slack=r.slack,
                    fence=r.fence,
                    start_after=r.start_after,
                )
            )
        except LeaseLost as lost:
            results.append(lost)
    return results


def check_time(name: str, value: float) -> float:
    """``value`` as a float if it is a finite number of seconds, else ValueError."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite time in seconds, got {value!r}")
    return float(value)


def check_floors(floors: Mapping[str, float]) -> dict[str, float]:
    """A validated copy of ``floors`` for ``raise_floor``: non-empty string keys, finite
    times; ValueError otherwise."""
    checked: dict[str, float] = {}
    for key, floor in floors.items():
        if not isinstance(key, str) or not key:
            raise ValueError(f"a limit key must be a non-empty string, got {key!r}")
        checked[key] = check_time(f"the floor of {key!r}", floor)
    return checked


def booking_time(clock: Clock, start_after: float | None) -> float:
    """The time a booking is made at: the clock's, or ``start_after`` when that is later."""
    now = clock()
    if start_after is None:
        return now
    return max(now, check_time("start_after", start_after))


def check_charge(limit: Limit, cost: float) -> None:
    """ValueError unless ``limit`` is a ``Limit`` and ``cost`` a positive finite number."""
    if not isinstance(limit, Limit):
        raise ValueError(f"a charge needs a Limit, got {limit!r}")
    check_request((limit,), cost, math.inf, None)


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
        fence: Fence | None = None,
        start_after: float | None = None,
    ) -> Booking:
        """Book one request of ``cost`` on every key of ``limits`` at ``clock()`` (at
        ``start_after`` when that is later: the slot starts no sooner). With a ``fence``, a
        backend shared by many workers books only while the fence holds and raises
        ``LeaseLost`` otherwise; one-process backends have no leases to check."""
        ...

    async def book_many(self, requests: Sequence[BookingRequest]) -> list[BookingResult]:
        """Book ``requests`` in order, as ``book`` one after another with no other booking
        between them; each answer in its request's place (``LeaseLost`` when its fence
        failed). Bad input raises ValueError before any I/O; a storage failure raises
        ``LimiterError``: the answers are lost, and a slot the batch may have booked stays
        consumed, unused (it delays later bookings, never crowds them)."""
        ...

    async def raise_floor(self, floors: Mapping[str, float]) -> None:
        """``TAT = max(TAT, floor)`` for every key of ``floors``, atomically (keys without a
        TAT get one). Nothing on a key starts before its floor minus its burst tolerance."""
        ...

    async def charge(self, limit: Limit, cost: float) -> float:
        """A late charge: ``TAT = max(TAT, clock()) + limit.params.charge(cost)``, atomically;
        returns the new TAT. Never credits."""
        ...

    async def keys_after(self, when: float) -> dict[str, float]:
        """Every key whose TAT is later than ``when``, with its TAT."""
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
