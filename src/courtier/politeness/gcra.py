"""Cost-weighted GCRA booking slots with bounded slack: the pure core of every limiter.

Rules (DESIGN.md, "Limits"):

1. Per limit key one number, the TAT (theoretical arrival time of the next request). A key
   with no TAT is the same as a key whose TAT lies in the past.
2. A key has an emission interval ``T`` (seconds per cost unit), a burst tolerance ``tau``
   (seconds a request may start ahead of the TAT) and a slot width (seconds of slack).
3. A request of cost ``c`` over keys ``K`` books, atomically for all of ``K``::

       t      = max(now, max_k(TAT_k - tau_k))
       slot   = [t, t + slack]          slack = min_k(slot width), unless given
       TAT_k' = max(TAT_k, t) + charge_k, charge_k = c * T_k (or 1 * T_k for an unweighted key)

4. The request must START inside its slot. One that cannot forfeits it and books again; the
   forfeited slot stays consumed, so late requests never bunch up (floor integrity: two starts
   on a key with ``tau = 0`` are never closer than ``charge - slack``).
5. Maximum lead: a booking whose start ``t`` lies more than ``max_lead`` after ``now`` is
   refused and consumes nothing; the refusal says when asking again can succeed, so work for
   a saturated key waits in the frontier instead of in memory.

Everything here is a pure function of its arguments; backends (memory, SQLite, PostgreSQL)
are thin shells that read the TATs, call ``book`` (or run the same arithmetic in SQL) and write
the result back in one atomic step.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

DEFAULT_SLOT_WIDTH: Final = 0.25
"""Seconds a request may start late before it forfeits its slot."""

_INF: Final = math.inf


def _check_seconds(name: str, value: float, *, allow_inf: bool = False) -> None:
    # The hot path (a float in range) costs one type test and one chained comparison; NaN
    # fails the comparison and takes the slow path with everything else.
    if type(value) is float and 0.0 <= value < _INF:
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a number of seconds, not {type(value).__name__}")
    if math.isnan(value) or value < 0 or (math.isinf(value) and not allow_inf):
        bound = "a non-negative number" if allow_inf else "a finite non-negative number"
        raise ValueError(f"{name} must be {bound}, got {value!r}")


@dataclass(frozen=True, slots=True)
class KeyParams:
    """How one limit key spaces the requests booked on it."""

    interval: float
    """T: seconds per cost unit (1 / rate). 0 means the key never delays anything."""
    burst: float = 0.0
    """tau: seconds a request may start before the key's TAT (token-bucket depth x T)."""
    slot_width: float = DEFAULT_SLOT_WIDTH
    """Seconds after the slot's start by which the request must have started."""
    weighted: bool = True
    """True: a request is charged its cost. False: every request counts as one unit (a site's
    start-to-start gap and robots Crawl-delay are per request, whatever the request costs)."""

    def __post_init__(self) -> None:
        # Built per booking by the lanes: three floats in range pass in one expression.
        interval, burst, width = self.interval, self.burst, self.slot_width
        if (
            type(interval) is float
            and type(burst) is float
            and type(width) is float
            and 0.0 <= interval < _INF
            and 0.0 <= burst < _INF
            and 0.0 <= width < _INF
        ):
            return
        _check_seconds("interval", interval)
        _check_seconds("burst", burst)
        _check_seconds("slot_width", width)

    @classmethod
    def from_rate(
        cls,
        rate: float,
        burst: float = 0.0,
        slot_width: float = DEFAULT_SLOT_WIDTH,
        *,
        weighted: bool = True,
    ) -> KeyParams:
        """Parameters for ``rate`` units per second (``inf`` for a key that never delays)."""
        if type(rate) is float and rate > 0.0:
            return cls(1.0 / rate, burst, slot_width, weighted)
        if isinstance(rate, bool) or not isinstance(rate, int | float) or not rate > 0:
            raise ValueError(f"rate must be a positive number of units per second, got {rate!r}")
        return cls(1.0 / rate, burst, slot_width, weighted)

    def charge(self, cost: float) -> float:
        """Seconds one request of ``cost`` adds to this key's TAT."""
        return (cost if self.weighted else 1.0) * self.interval


@dataclass(frozen=True, slots=True)
class Limit:
    """One key a request is booked against, with the parameters that apply right now.

    Parameters travel with every booking instead of living in the backend, so a Crawl-delay
    or a latency-feedback slow-down takes effect on the next booking without a write.
    """

    key: str
    params: KeyParams

    def __post_init__(self) -> None:
        if type(self.key) is str and self.key:
            return
        if not isinstance(self.key, str) or not self.key:
            raise ValueError(f"a limit key must be a non-empty string, got {self.key!r}")


@dataclass(frozen=True, slots=True)
class Slot:
    """A booked appointment: the request must start in ``[start, deadline]``."""

    start: float
    deadline: float
    keys: tuple[str, ...]
    cost: float

    def is_missed(self, now: float) -> bool:
        """True once the slot can no longer be kept: forfeit it and book again."""
        return now > self.deadline

    def wait(self, now: float) -> float:
        """Seconds to sleep before the slot opens (0 when it is already open)."""
        return max(0.0, self.start - now)


@dataclass(frozen=True, slots=True)
class Refusal:
    """A booking that would start more than ``max_lead`` ahead; nothing was consumed."""

    not_before: float
    """Earliest time at which the same booking can succeed (if nobody else books first)."""
    start: float
    """Where the slot would have started."""
    keys: tuple[str, ...]
    """The keys that are booked too far ahead (the saturated ones)."""


Booking = Slot | Refusal
"""What a booking attempt returns."""


def check_request(
    limits: Sequence[Limit], cost: float, max_lead: float, slack: float | None
) -> None:
    """Raise ValueError/TypeError for a booking request no backend should ever see."""
    count = len(limits)
    if not count:
        raise ValueError("a booking needs at least one limit key")
    # A page books two keys: compare them instead of building a set.
    if count == 2:
        distinct = limits[0].key != limits[1].key
    else:
        distinct = count == 1 or len({limit.key for limit in limits}) == count
    if not distinct:
        keys = [limit.key for limit in limits]
        raise ValueError(f"limit keys must be distinct, got {keys!r}")
    if not (type(cost) is float and 0.0 < cost < _INF) and (
        isinstance(cost, bool) or not isinstance(cost, int | float) or not 0 < cost < _INF
    ):
        raise ValueError(f"cost must be a positive finite number, got {cost!r}")
    if not (type(max_lead) is float and 0.0 <= max_lead <= _INF):
        _check_seconds("max_lead", max_lead, allow_inf=True)
    if slack is not None:
        _check_seconds("slack", slack)


def slot_slack(limits: Sequence[Limit], slack: float | None = None) -> float:
    """The slot width of a booking: the narrowest of its keys' widths unless given."""
    if slack is not None:
        return slack
    return min(limit.params.slot_width for limit in limits)


def earliest_start(tats: Mapping[str, float], now: float, limits: Sequence[Limit]) -> float:
    """``max(now, max_k(TAT_k - tau_k))``: the first moment every key allows a start."""
    start = now
    for limit in limits:
        tat = tats.get(limit.key)
        if tat is not None:
            start = max(start, tat - limit.params.burst)
    return start


def book(
    tats: Mapping[str, float],
    now: float,
    limits: Sequence[Limit],
    cost: float,
    *,
    max_lead: float = math.inf,
    slack: float | None = None,
) -> tuple[Booking, dict[str, float]]:
    """Book a request of ``cost`` on every key of ``limits``, given the current ``tats``.

    Returns the slot (or the refusal) and the new TATs of the booked keys; the caller writes
    those back atomically. A refusal returns no new TATs: nothing is consumed.
    """
    check_request(limits, cost, max_lead, slack)
    if not -_INF < now < _INF:
        raise ValueError(f"now must be a finite time, got {now!r}")
    # One pass gathers what earliest_start, slot_slack and the keys would each loop for:
    # this runs once per request on the event loop.
    start = now
    width = _INF
    found: list[float | None] = []
    for limit in limits:
        tat = tats.get(limit.key)
        found.append(tat)
        params = limit.params
        if tat is not None and tat - params.burst > start:
            start = tat - params.burst
        if params.slot_width < width:
            width = params.slot_width
    keys = tuple([limit.key for limit in limits])
    if start - now > max_lead:
        saturated = tuple(
            limit.key
            for limit in limits
            if tats.get(limit.key, -_INF) - limit.params.burst - now > max_lead
        )
        return Refusal(not_before=start - max_lead, start=start, keys=saturated), {}
    updates: dict[str, float] = {}
    for limit, tat in zip(limits, found, strict=True):
        params = limit.params
        charge = (cost if params.weighted else 1.0) * params.interval
        updates[limit.key] = (start if tat is None or tat < start else tat) + charge
    deadline = start + (width if slack is None else slack)
    return Slot(start=start, deadline=deadline, keys=keys, cost=cost), updates


def charge_after(tats: Mapping[str, float], now: float, limit: Limit, cost: float) -> float:
    """The key's new TAT when ``cost`` more is spent on it after the fact (a request turned
    out dearer than it was booked): as if booked now, never earlier than its TAT, nothing
    ever credited. The caller writes it back."""
    return max(tats.get(limit.key, -math.inf), now) + limit.params.charge(cost)
