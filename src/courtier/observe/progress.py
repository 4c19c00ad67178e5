"""Progress of a long run: a live view on a terminal, a log line every N seconds elsewhere.

The observer's thread keeps ``Loads`` (requests and cost units per origin over the last
seconds) and publishes an immutable ``ProgressView``; the event loop only renders it.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import logging
from collections import Counter, defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from courtier.observe.probe import CrawlSample
from courtier.observe.rows import RequestRow

log = logging.getLogger("courtier.observe.progress")

RECENT = 10
"""Seconds the recent rates are taken over."""
BUSIEST = 8
SUM_SECONDS = 0.5
"""The recent rate and the busiest origins are summed again at most this often, and at
each new second (the observer publishes a view every batch, several times a second)."""


@dataclass(frozen=True, slots=True)
class OriginLoad:
    origin: str
    units_per_s: float
    budget: float | None

    @property
    def utilisation(self) -> float | None:
        return self.units_per_s / self.budget if self.budget else None


@dataclass(frozen=True, slots=True)
class ProgressView:
    at: float
    elapsed: float
    requests: int
    rate: float
    """Requests per second over the last ``RECENT`` seconds."""
    in_flight: int
    rebook_rate: float
    """Missed slots per booking, over the last samples (the whole run before there are two)."""
    statuses: dict[str, int] = field(default_factory=dict)
    queues: dict[str, int] = field(default_factory=dict)
    busiest: tuple[OriginLoad, ...] = ()
    anomalies: int = 0
    rows: int = 0

    def fields(self) -> dict[str, Any]:
        """The view as flat fields for a structured log line."""
        return {
            "elapsed_s": round(self.elapsed, 1),
            "requests": self.requests,
            "rate": round(self.rate, 2),
            "in_flight": self.in_flight,
            "rebook_rate": round(self.rebook_rate, 5),
            "statuses": self.statuses,
            "queues": self.queues,
            "anomalies_active": self.anomalies,
            "busiest": [
                {"origin": o.origin, "units_per_s": round(o.units_per_s, 3), "budget": o.budget}
                for o in self.busiest
            ],
        }

    def line(self) -> str:
        busiest = ", ".join(
            f"{o.origin} {o.units_per_s:.2f}/{o.budget:.2f}" if o.budget else o.origin
            for o in self.busiest[:3]
        )
        statuses = " ".join(f"{k} {v}" for k, v in sorted(self.statuses.items()))
        return (
            f"{self.requests} requests, {self.rate:.1f}/s, in flight {self.in_flight}, "
            f"rebook rate {self.rebook_rate:.2%}, {statuses or 'no answers yet'}; "
            f"anomalies {self.anomalies}; busiest origins (units/s of budget): {busiest or '-'}"
        )


class _Second:
    __slots__ = ("requests", "second", "units")

    def __init__(self, second: int) -> None:
        self.second = second
        self.requests = 0
        self.units: defaultdict[str, float] = defaultdict(float)


class Loads:
    """Requests and cost units per second of the last ``RECENT`` seconds (thread-owned)."""

    def __init__(self, budget_of: Callable[[str | None], float | None]) -> None:
        self.budget_of = budget_of
        self._seconds: deque[_Second] = deque()
        self.statuses: Counter[str] = Counter()
        self.requests = 0
        self._samples: deque[CrawlSample] = deque(maxlen=1 + RECENT)
        self.first_at: float | None = None
        self._rate = 0.0
        self._busiest: tuple[OriginLoad, ...] = ()
        self._summed_at: float | None = None
        self._next_sum = 0.0

    def add(self, row: RequestRow) -> None:
        self.requests += 1
        self.statuses[row.status_class] += 1
        if self.first_at is None:
            self.first_at = row.time
        bucket = self._bucket(int(row.time))
        if bucket is None:
            return
        bucket.requests += 1
        if row.origin is not None:
            bucket.units[row.origin] += row.units

    def _bucket(self, second: int) -> _Second | None:
        """The bucket of ``second`` (rows arrive roughly in time order: look from the end)."""
        seconds = self._seconds
        if not seconds or seconds[-1].second < second:
            seconds.append(_Second(second))
            return seconds[-1]
        for bucket in reversed(seconds):
            if bucket.second == second:
                return bucket
            if bucket.second < second:
                break
        return None  # a late answer for a second no longer (or never) kept: rates skip it

    def sampled(self, sample: CrawlSample) -> None:
        self._samples.append(sample)

    def view(self, now: float, rows: int, anomalies: int) -> ProgressView:
        """The view at ``now``: counts as of now; the recent rate and the busiest origins as
        of their last summing (at most ``SUM_SECONDS`` ago, and never from an earlier second)."""
        if self._summed_at is None or not self._summed_at <= now < self._next_sum:
            self._rate, self._busiest = self._sum(now)
            self._summed_at = now
            self._next_sum = min(now + SUM_SECONDS, float(int(now) + 1))
        sample = self._samples[-1] if self._samples else None
        return ProgressView(
            at=now,
            elapsed=now - self.first_at if self.first_at is not None else 0.0,
            requests=self.requests,
            rate=self._rate,
            in_flight=sample.requests_in_flight if sample is not None else 0,
            rebook_rate=self._rebook_rate(),
            statuses=dict(self.statuses),
            queues=dict(sample.queues) if sample is not None else {},
            busiest=self._busiest,
            anomalies=anomalies,
            rows=rows,
        )

    def _sum(self, now: float) -> tuple[float, tuple[OriginLoad, ...]]:
        """Requests per second and the busiest origins over the whole seconds of the last
        ``RECENT`` (a walk over every origin of those seconds: hence the rate limit)."""
        start = int(now) - RECENT
        while self._seconds and self._seconds[0].second < start:
            self._seconds.popleft()
        units: defaultdict[str, float] = defaultdict(float)
        count = 0
        for bucket in self._seconds:
            if bucket.second < int(now):
                count += bucket.requests
                for origin, spent in bucket.units.items():
                    units[origin] += spent
        budget_of = self.budget_of

        def rank(item: tuple[str, float]) -> tuple[float, float]:
            origin, spent = item
            load = spent / RECENT
            budget = budget_of(origin)
            return (-(load / budget if budget else 0.0), -load)

        # nsmallest is sorted(...)[:n], ties kept in order, without sorting every origin
        busiest = tuple(
            OriginLoad(origin, spent / RECENT, budget_of(origin))
            for origin, spent in heapq.nsmallest(BUSIEST, units.items(), key=rank)
        )
        return count / RECENT, busiest

    def _rebook_rate(self) -> float:
        if not self._samples:
            return 0.0
        last = self._samples[-1]
        first = self._samples[0] if len(self._samples) > 1 else None
        slots = last.counter("slots") - (first.counter("slots") if first else 0.0)
        missed = last.counter("missed_slots") - (first.counter("missed_slots") if first else 0.0)
        return missed / slots if slots > 0 else 0.0


def live_table(view: ProgressView) -> Group:
    head = Text.assemble(
        ("courtier ", "bold"),
        f"{view.requests} requests  {view.rate:.1f}/s  in flight {view.in_flight}  "
        f"rebook rate {view.rebook_rate:.2%}  anomalies {view.anomalies}  ",
        " ".join(f"{k} {v}" for k, v in sorted(view.statuses.items())),
    )
    table = Table(title="busiest origins (last 10 s)", expand=False)
    table.add_column("origin")
    table.add_column("units/s", justify="right")
    table.add_column("budget", justify="right")
    table.add_column("used", justify="right")
    for load in view.busiest:
        used = load.utilisation
        table.add_row(
            load.origin[:60],
            f"{load.units_per_s:.2f}",
            f"{load.budget:.2f}" if load.budget else "-",
            f"{used:.0%}" if used is not None else "-",
        )
    return Group(head, table)


class ProgressReporter:
    """Renders the latest view: live on a terminal, else a log line every ``every`` seconds."""

    def __init__(
        self, view: Callable[[], ProgressView | None], console: Console, *, live: bool, every: float
    ) -> None:
        self.view = view
        self.console = console
        self.live = live and console.is_terminal
        self.every = every

    async def run(self) -> None:
        if self.live:
            await self._live()
        else:
            await self._lines()

    async def _live(self) -> None:
        with Live(console=self.console, refresh_per_second=2, transient=True) as live:
            while True:
                view = self.view()
                if view is not None:
                    live.update(live_table(view))
                await asyncio.sleep(1.0)

    async def _lines(self) -> None:
        while True:
            await asyncio.sleep(self.every)
            view = self.view()
            if view is not None:
                log.info("progress: %s", view.line(), extra={"fields": view.fields()})


async def cancel(task: asyncio.Task[None] | None) -> None:
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
