"""How fast the crawl may book new starts: one rate over the whole scheduler.

A crawl's first second books every seed site's robots.txt at once: with 2,000 seeds, about
1,200 origins had a free slot at the same instant, so 1,200 fetches started in one turn of
the event loop and their first steps ran in the next, 300-500 ms turns during which every
other timer fired late (docs/benchmarks.md, session 10). The gate lets ``rate`` bookings a
second through (``burst`` at once); the lanes it holds back wait, in order, among the lanes
that wait for capacity, unbooked (nothing consumed), and go on as the gate reopens. At the
default rate a crawl that runs at its ceiling never meets it: only a start, or a crowd of
lanes woken at one instant, is spread over a few hundred milliseconds.

A GCRA, like the politeness clocks: ``next_at`` is computed exactly as ``open`` compares, so
a timer set for it finds the gate open (a token count rounded at a large clock value would
leave it a hair short, and a timer set again for the same instant would spin).

Pure: the caller passes the time.
"""

from __future__ import annotations

import math


class StartGate:
    """At most ``rate`` bookings a second, ``burst`` at once; ``rate`` 0: no gate."""

    __slots__ = ("_interval", "_tat", "_tolerance", "burst", "rate")

    def __init__(self, rate: float, burst: int) -> None:
        if rate < 0 or burst < 1 or not math.isfinite(rate):
            raise ValueError("a start gate needs a finite rate >= 0 and burst >= 1")
        self.rate = rate
        self.burst = burst
        self._interval = 1.0 / rate if rate else 0.0
        self._tolerance = (burst - 1) * self._interval
        self._tat = -math.inf
        """The theoretical arrival time of the next booking."""

    def open(self, now: float) -> bool:
        """A booking may start now (without taking it)."""
        return self.rate == 0 or now >= self._tat - self._tolerance

    def take(self, now: float) -> bool:
        """Take a booking's place; False: the gate is shut until ``next_at(now)``."""
        if self.rate == 0:
            return True
        if not self.open(now):
            return False
        self._tat = max(self._tat, now) + self._interval
        return True

    def next_at(self, now: float) -> float:
        """When the gate is open again (``now`` if it is)."""
        return now if self.rate == 0 else max(now, self._tat - self._tolerance)
