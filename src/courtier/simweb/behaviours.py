"""How a simulated site treats a request, given its recent traffic: refuse it, delay it, or serve.

Rules (each site has at most a few of these behaviours, see `world.Behaviour`):
- rate-limit-seconds / rate-limit-date: a request starting less than `rate_limit_gap` after the
  previous request's start is refused with 429 and `Retry-After` (seconds, or an HTTP-date that
  is whole seconds, rounded up). Refused requests count as traffic too: hammering keeps failing.
- unavailable-at-start: every request in the first `unavailable_seconds` after the server
  started is refused with 503 and `Retry-After` until the end of that phase.
- rising-latency: the answer is delayed by a base plus a step times the square of the number
  of requests started in the last `RATE_WINDOW` seconds, so latency climbs steeply with load;
  at `OVERLOAD_AT` recent requests the site is overloaded and answers 503 (no Retry-After).
  A crawler that slows down when latency rises never sees the errors.
- slow: a fixed delay.
The decision is pure: `decide` reads the clock value it is given and the traffic record.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from email.utils import formatdate

from courtier.simweb.world import Behaviour, Site, WorldParams

RATE_WINDOW = 4.0
RISING_BASE = 0.02
RISING_STEP = 0.06
OVERLOAD_AT = 3  # requests in the last RATE_WINDOW seconds: 0.75 requests/s sustained
_HISTORY = 10.0  # seconds of start times kept per site


@dataclass(frozen=True)
class Refusal:
    status: int  # 429 or 503
    retry_after: str  # the header value
    retry_until: float  # epoch seconds before which the site must not be asked again


@dataclass(frozen=True)
class Verdict:
    refusal: Refusal | None
    delay: float


class SiteTraffic:
    """Start times of a site's recent requests. Only the server that owns the site updates it."""

    __slots__ = ("starts",)

    def __init__(self) -> None:
        self.starts: deque[float] = deque()

    @property
    def last_start(self) -> float | None:
        return self.starts[-1] if self.starts else None

    def record(self, now: float) -> None:
        self.starts.append(now)
        while self.starts and self.starts[0] < now - _HISTORY:
            self.starts.popleft()

    def count_since(self, since: float) -> int:
        count = 0
        for start in reversed(self.starts):
            if start < since:
                break
            count += 1
        return count


def decide(
    site: Site, params: WorldParams, traffic: SiteTraffic, now: float, started_at: float
) -> Verdict:
    """What the site does with a request starting at `now` (traffic holds earlier ones only)."""
    behaviours = site.behaviours
    if not behaviours:
        return Verdict(None, site.latency)
    refusal = _refusal(behaviours, params, traffic, now, started_at)
    delay = site.latency
    if Behaviour.RISING_LATENCY in behaviours:
        recent = traffic.count_since(now - RATE_WINDOW)
        if recent >= OVERLOAD_AT and refusal is None:
            refusal = Refusal(503, "", now)
        delay = max(delay, RISING_BASE + RISING_STEP * min(recent, OVERLOAD_AT) ** 2)
    return Verdict(refusal, delay)


def _refusal(
    behaviours: frozenset[Behaviour],
    params: WorldParams,
    traffic: SiteTraffic,
    now: float,
    started_at: float,
) -> Refusal | None:
    if Behaviour.UNAVAILABLE_AT_START in behaviours:
        remaining = started_at + params.unavailable_seconds - now
        if remaining > 0:
            seconds = max(1, math.ceil(remaining))
            return Refusal(503, str(seconds), now + seconds)
    last = traffic.last_start
    too_fast = last is not None and now - last < params.rate_limit_gap
    if too_fast and Behaviour.RATE_LIMIT_SECONDS in behaviours:
        return Refusal(429, str(params.retry_after), now + params.retry_after)
    if too_fast and Behaviour.RATE_LIMIT_DATE in behaviours:
        until = math.ceil(now) + params.retry_after
        return Refusal(429, formatdate(until, usegmt=True), float(until))
    return None
