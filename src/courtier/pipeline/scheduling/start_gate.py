"""How fast the crawl may book new starts: one rate over the whole scheduler.

A crawl's first second books every seed site's robots.txt at once: with 2,000 seeds, about
1,200 origins had a free slot at the same instant, so 1,200 fetches started in one turn of
the event loop and their first steps ran in the next, 300-500 ms turns during which every
other timer fired late
(`python bench/bench_rebook.py --sites 2000 --page-bytes 6000 --duration 40`, loop lag). The gate
lets ``rate`` bookings a
second through (``burst`` at once); the lanes it holds back wait, in order, among the lanes
that wait for capacity, unbooked (nothing consumed), and go on as the gate reopens. At the
default rate a crawl that runs at its ceiling never meets it: only a start, or a crowd of
lanes woken at one instant, is spread over a few hundred milliseconds.

One GCRA key booked with the politeness clocks' own arithmetic (``politeness.gcra``, no
lead): ``next_at`` is the earliest start that ``take`` compares against, so a timer set for
it finds the gate open at any clock value.

Pure: the caller passes the time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from courtier.politeness.gcra import KeyParams, Limit, Slot, book, earliest_start

if TYPE_CHECKING:
    from courtier.config import CrawlSection

_KEY = "start-gate"


class StartGate:
    """At most ``rate`` bookings a second, ``burst`` at once; ``rate`` 0: no gate."""

    __slots__ = ("_limits", "_tats", "burst", "rate")

    def __init__(self, rate: float, burst: int) -> None:
        if rate < 0 or burst < 1 or not math.isfinite(rate):
            raise ValueError("a start gate needs a finite rate >= 0 and burst >= 1")
        self.rate = rate
        self.burst = burst
        interval = 1.0 / rate if rate else 0.0
        self._limits = (Limit(_KEY, KeyParams(interval=interval, burst=(burst - 1) * interval)),)
        self._tats: dict[str, float] = {}

    def open(self, now: float) -> bool:
        """A booking may start now (without taking it)."""
        return self.rate == 0 or earliest_start(self._tats, now, self._limits) <= now

    def take(self, now: float) -> bool:
        """Take a booking's place; False: the gate is shut until ``next_at(now)``."""
        if self.rate == 0:
            return True
        booking, tats = book(self._tats, now, self._limits, 1.0, max_lead=0.0)
        if not isinstance(booking, Slot):
            return False
        self._tats.update(tats)
        return True

    def next_at(self, now: float) -> float:
        """When the gate is open again (``now`` if it is)."""
        return now if self.rate == 0 else earliest_start(self._tats, now, self._limits)


@dataclass(frozen=True, slots=True)
class StartGates:
    """A scheduler's two gates: ``start`` for every booking, ``first`` on top of it for a
    lane's first request (a new host)."""

    start: StartGate
    first: StartGate

    @classmethod
    def of(cls, crawl: CrawlSection) -> StartGates:
        """The gates the crawl's settings ask for (``crawl.start_*``, ``crawl.first_contact_*``)."""
        return cls(
            StartGate(crawl.start_rate, crawl.start_burst),
            StartGate(crawl.first_contact_rate, crawl.first_contact_burst),
        )
