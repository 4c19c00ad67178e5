"""When the simulated web's own event loop stood still, and what that does to its stamps.

Why: a request is stamped when the server's loop gets to it, not when its bytes arrived. If
the server is off the CPU or busy for 160 ms, every request that arrived meanwhile is stamped
at the end of it, while the next request of the same site, a second later, is stamped on
time: the audit would read a gap of 0.84 s and blame the crawler, which sent them 1.02 s
apart (a CI run failed on exactly that: four sites at one instant). The audit
judges from the server's side and must go on doing so; what the server can add is how
uncertain each stamp is.

Rules:
- A probe wakes every ``PERIOD`` seconds. A wake later than ``LATE_AFTER`` past its due time
  is a stall: the loop was not serving from the previous wake to this one.
- A stall that begins within ``DRAIN`` of the end of the last one continues it (the backlog
  the first one left is what keeps the loop busy), so a chain keeps its first start.
- A request stamped inside a stall, or within ``DRAIN`` after its end, may have arrived as
  early as the stall's start: that is its ``arrived_after``. So may a request stamped while
  the probe is overdue right now (its stall not seen yet). Otherwise ``arrived_after`` is
  the stamp itself.
- The audit then judges a gap by the longest it could have been (the later request's stamp
  minus the earlier one's ``arrived_after``): a stall of the server never reads as the
  crawler's violation. A real one that happens to fall inside a server stall can go unseen,
  the honest limit of a server-side instrument.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

PERIOD: Final = 0.005
"""Seconds between the probe's wakes."""
LATE_AFTER: Final = 0.02
"""Seconds past its due time after which a wake means the loop stood still. Lateness under
it stays in the stamps; the audit's tolerance (50 ms) is wider."""
DRAIN: Final = 0.05
"""Seconds after a stall during which requests are still served from its backlog."""


@dataclass(slots=True)
class Stall:
    start: float
    end: float


class LoopWatch:
    """The latest stall of the loop (pure: the probe and the handler pass the time in)."""

    def __init__(self, now: float) -> None:
        self._last_wake = now
        self.latest: Stall | None = None
        self.count = 0
        """Stalls seen (a chain counts once)."""
        self.longest = 0.0
        """Seconds of the longest chain."""

    def woke(self, now: float) -> None:
        """The probe woke at ``now``, ``PERIOD`` after it last did (or was due to)."""
        due = self._last_wake + PERIOD
        if now - due > LATE_AFTER:
            latest = self.latest
            if latest is not None and self._last_wake - latest.end <= DRAIN:
                latest.end = now
            else:
                latest = self.latest = Stall(self._last_wake, now)
                self.count += 1
            self.longest = max(self.longest, latest.end - latest.start)
        self._last_wake = now

    def arrived_after(self, stamp: float) -> float:
        """The earliest the request stamped at ``stamp`` may have arrived."""
        earliest = stamp
        if stamp - self._last_wake > PERIOD + LATE_AFTER:
            earliest = self._last_wake  # a stall under way, which the probe has not seen yet
        latest = self.latest
        if latest is not None and latest.start <= stamp and earliest - latest.end <= DRAIN:
            return latest.start  # inside the latest stall, its backlog, or a chain of it
        return earliest


async def watch_loop(watch: LoopWatch, clock: Callable[[], float]) -> None:
    """Wake every ``PERIOD`` and tell ``watch``, for ever."""
    while True:
        await asyncio.sleep(PERIOD)
        watch.woke(clock())
