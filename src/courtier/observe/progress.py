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
from courtier.politeness.gcra import DEFAULT_SLOT_WIDTH

log = logging.getLogger("courtier.observe.progress")

RECENT = 10
"""Seconds the recent rates are taken over."""
BUSIEST = 8
SUM_SECONDS = 0.5
"""The recent rate and the busiest origins are summed again at most this often, and at
each new second (the observer publishes a view every batch, several times a second)."""


def gcra_bound(rate: float, window: float, slack: float = 0.0, edge: float = 0.0) -> float:
    """The most cost units a key of ``rate`` units/s lets start in ``window`` seconds: GCRA
    lets a start come ``burst`` seconds before its key's TAT and up to a slot's width late
    (``slack``: the two together), and the last start in the window brings its whole cost
    (``edge``: the largest cost of one request). A key used by the rules never passes it."""
    return rate * (window + slack) + edge


@dataclass(frozen=True, slots=True)
class OriginLoad:
    origin: str
    units_per_s: float
    """Cost units started per second over the last ``window`` seconds."""
    budget: float | None
    """The origin key's rate, cost units per second."""
    allowed: float | None = None
    """The most units GCRA lets the origin start in ``window`` seconds (``gcra_bound``)."""
    window: float = RECENT

    @property
    def utilisation(self) -> float | None:
        """Units per second against the rate alone: a burst, and the last request's cost at
        the window's edge, may take it past 1 on a polite origin."""
        return self.units_per_s / self.budget if self.budget else None

    @property
    def units(self) -> float:
        return self.units_per_s * self.window

    @property
    def share(self) -> float | None:
        """Units started in the window against what GCRA allows there: at most 1 on an
        origin booked by the rules."""
        return self.units / self.allowed if self.allowed else None


def share_text(load: OriginLoad) -> str:
    """``84% of 24.5`` (units of the last window against the most GCRA allows in it)."""
    share = load.share
    if share is None or load.allowed is None:
        return "-"
    return f"{share:.0%} of {load.allowed:.1f}"


def clock_text(seconds: float) -> str:
    """``1:02:03`` or ``2:05``."""
    whole = max(0, int(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


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
    pages: int = 0
    """Page requests answered (any status)."""
    frontier: dict[str, int] = field(default_factory=dict)
    """The frontier's URLs by status, as last counted (queued, leased, done...)."""
    duration: float | None = None
    """The crawl's ``--duration``."""

    @property
    def remaining(self) -> float | None:
        """Seconds left of ``duration`` (None: no duration)."""
        return None if self.duration is None else max(0.0, self.duration - self.elapsed)

    def fields(self) -> dict[str, Any]:
        """The view as flat fields for a structured log line."""
        remaining = self.remaining
        return {
            "elapsed_s": round(self.elapsed, 1),
            "remaining_s": None if remaining is None else round(remaining, 1),
            "requests": self.requests,
            "pages": self.pages,
            "rate": round(self.rate, 2),
            "in_flight": self.in_flight,
            "rebook_rate": round(self.rebook_rate, 5),
            "statuses": self.statuses,
            "queues": self.queues,
            "frontier": self.frontier,
            "anomalies_active": self.anomalies,
            "busiest": [
                {
                    "origin": o.origin,
                    "units_per_s": round(o.units_per_s, 3),
                    "budget": o.budget,
                    "allowed": None if o.allowed is None else round(o.allowed, 3),
                    "share": None if o.share is None else round(o.share, 4),
                }
                for o in self.busiest
            ],
        }

    def time_text(self) -> str:
        remaining = self.remaining
        text = f"elapsed {clock_text(self.elapsed)}"
        return text if remaining is None else f"{text}, remaining {clock_text(remaining)}"

    def frontier_text(self) -> str:
        f = self.frontier
        if not f:
            return "frontier not counted yet"
        text = f"frontier queued {f.get('queued', 0)}, leased {f.get('leased', 0)}, "
        text += f"done {f.get('done', 0)}"
        others = [f"{k} {f[k]}" for k in ("failed", "refused") if f.get(k)]
        return text + (f" ({', '.join(others)})" if others else "")

    def line(self) -> str:
        busiest = ", ".join(
            f"{o.origin} {share_text(o)}" if o.allowed else o.origin for o in self.busiest[:3]
        )
        statuses = " ".join(f"{k} {v}" for k, v in sorted(self.statuses.items()))
        return (
            f"{self.time_text()}; {self.requests} requests, {self.rate:.1f}/s, "
            f"{self.pages} pages, in flight {self.in_flight}, "
            f"rebook rate {self.rebook_rate:.2%}, {statuses or 'no answers yet'}; "
            f"{self.frontier_text()}; anomalies {self.anomalies}; busiest origins (units of "
            f"the last {RECENT} s, of the most GCRA allows there): {busiest or '-'}"
        )


class _Second:
    __slots__ = ("edge", "requests", "second", "units")

    def __init__(self, second: int) -> None:
        self.second = second
        self.requests = 0
        self.units: defaultdict[str, float] = defaultdict(float)
        self.edge: dict[str, float] = {}
        """The largest cost of one request per origin."""


class Loads:
    """Requests and cost units per second of the last ``RECENT`` seconds (thread-owned).
    ``budget_of`` gives an origin's rate (cost units/s), ``slack_of`` its burst tolerance
    plus slot width in seconds (``gcra_bound``)."""

    def __init__(
        self,
        budget_of: Callable[[str | None], float | None],
        slack_of: Callable[[str | None], float] = lambda _origin: DEFAULT_SLOT_WIDTH,
    ) -> None:
        self.budget_of = budget_of
        self.slack_of = slack_of
        self._seconds: deque[_Second] = deque()
        self.statuses: Counter[str] = Counter()
        self.requests = 0
        self.pages = 0
        self._samples: deque[CrawlSample] = deque(maxlen=1 + RECENT)
        self.first_at: float | None = None
        self._rate = 0.0
        self._busiest: tuple[OriginLoad, ...] = ()
        self._summed_at: float | None = None
        self._next_sum = 0.0

    def add(self, row: RequestRow) -> None:
        self.requests += 1
        self.statuses[row.status_class] += 1
        if row.kind == "page" and row.status is not None:
            self.pages += 1
        if self.first_at is None:
            self.first_at = row.time
        bucket = self._bucket(int(row.time))
        if bucket is None:
            return
        bucket.requests += 1
        origin = row.origin
        if origin is not None:
            units = row.units
            bucket.units[origin] += units
            if units > bucket.edge.get(origin, 0.0):
                bucket.edge[origin] = units

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

    def view(
        self, now: float, rows: int, anomalies: int, started: float | None = None
    ) -> ProgressView:
        """The view at ``now``: counts as of now; the recent rate and the busiest origins as
        of their last summing (at most ``SUM_SECONDS`` ago, and never from an earlier second).
        Elapsed time counts from ``started`` (default: the first request)."""
        if self._summed_at is None or not self._summed_at <= now < self._next_sum:
            self._rate, self._busiest = self._sum(now)
            self._summed_at = now
            self._next_sum = min(now + SUM_SECONDS, float(int(now) + 1))
        sample = self._samples[-1] if self._samples else None
        began = started if started is not None else self.first_at
        return ProgressView(
            at=now,
            elapsed=max(0.0, now - began) if began is not None else 0.0,
            requests=self.requests,
            rate=self._rate,
            in_flight=sample.requests_in_flight if sample is not None else 0,
            rebook_rate=self._rebook_rate(),
            statuses=dict(self.statuses),
            queues=dict(sample.queues) if sample is not None else {},
            busiest=self._busiest,
            anomalies=anomalies,
            rows=rows,
            pages=self.pages,
            frontier=dict(sample.frontier) if sample is not None else {},
            duration=sample.duration if sample is not None else None,
        )

    def _sum(self, now: float) -> tuple[float, tuple[OriginLoad, ...]]:
        """Requests per second and the busiest origins over the whole seconds of the last
        ``RECENT`` (a walk over every origin of those seconds: hence the rate limit)."""
        start = int(now) - RECENT
        while self._seconds and self._seconds[0].second < start:
            self._seconds.popleft()
        units: defaultdict[str, float] = defaultdict(float)
        edge: defaultdict[str, float] = defaultdict(float)
        count = 0
        for bucket in self._seconds:
            if bucket.second < int(now):
                count += bucket.requests
                for origin, spent in bucket.units.items():
                    units[origin] += spent
                for origin, cost in bucket.edge.items():
                    if cost > edge[origin]:
                        edge[origin] = cost
        budget_of, slack_of = self.budget_of, self.slack_of

        def allowed(origin: str) -> float | None:
            budget = budget_of(origin)
            return gcra_bound(budget, RECENT, slack_of(origin), edge[origin]) if budget else None

        def rank(item: tuple[str, float]) -> tuple[float, float]:
            origin, spent = item
            bound = allowed(origin)
            return (-(spent / bound if bound else 0.0), -spent)

        # nsmallest is sorted(...)[:n], ties kept in order, without sorting every origin
        busiest = tuple(
            OriginLoad(origin, spent / RECENT, budget_of(origin), allowed(origin))
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
    statuses = " ".join(f"{k} {v}" for k, v in sorted(view.statuses.items()))
    head = Text.assemble(
        ("courtier ", "bold"),
        f"{view.time_text()}   {view.requests} requests  {view.rate:.1f}/s  "
        f"pages {view.pages}  in flight {view.in_flight}",
    )
    more = Text(
        f"{view.frontier_text()}   rebook rate {view.rebook_rate:.2%}   "
        f"anomalies {view.anomalies}   {statuses}"
    )
    table = Table(title=f"busiest origins (last {RECENT} s)", expand=False)
    note = Text(
        f"used: units started in the last {RECENT} s, of the most GCRA allows in {RECENT} s "
        f"(budget x ({RECENT} s + burst + slot) + one request): a polite origin stays <= 100%",
        style="dim",
    )
    table.add_column("origin")
    table.add_column("budget", justify="right")
    table.add_column(f"units ({RECENT} s)", justify="right")
    table.add_column("allowed", justify="right")
    table.add_column("used", justify="right")
    for load in view.busiest:
        share = load.share
        table.add_row(
            load.origin[:60],
            f"{load.budget:.2f}/s" if load.budget else "-",
            f"{load.units:.1f}",
            f"{load.allowed:.1f}" if load.allowed else "-",
            f"{share:.0%}" if share is not None else "-",
        )
    return Group(head, more, table, note)


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
