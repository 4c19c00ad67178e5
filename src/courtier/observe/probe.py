"""What the crawl looks like right now: counters and gauges read on the event loop.

A ``CrawlSample`` is a plain, immutable copy (the observer's thread reads it while the loop
goes on changing the live state). ``engine_probe`` knows where the engine keeps those
figures; anything the engine has not wired yet (before ``run``) reads as zero. Counting the
frontier store's URLs by status is a query on the store's thread, not a read of memory: the
observer asks for it apart (``EngineProbe.frontier_counts``), seldom (``frontier_seconds``).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from courtier.pipeline.spacing_report import SpacingReport
from courtier.pipeline.stats import CrawlStats

_SKIPPED = frozenset({"lag_samples", "recent_lag"})


@dataclass(frozen=True, slots=True)
class CrawlSample:
    at: float
    """Wall-clock time of the sample."""
    stats: Mapping[str, Any] = field(default_factory=dict)
    """The crawl's counters (``CrawlStats`` fields; counters by reason as dicts)."""
    in_flight: Mapping[str, int] = field(default_factory=dict)
    """Requests in flight per scheduler (``pages``, ``media``)."""
    queues: Mapping[str, int] = field(default_factory=dict)
    """Work waiting in memory: ``pages`` (URLs leased to site lanes), ``media``."""
    lanes: Mapping[str, int] = field(default_factory=dict)
    """Lanes by scheduling phase (idle, waiting, ready, booking, booked)."""
    loop_lag: float | None = None
    """How late the event loop woke for this sample, seconds."""
    frontier: Mapping[str, int] = field(default_factory=dict)
    """URLs in the frontier store by status (queued, leased, done, refused, failed), as last
    counted (``EngineProbe.frontier_counts``; the store's count at the end of the run)."""
    duration: float | None = None
    """The crawl's ``--duration``, seconds (None: none)."""

    @property
    def requests_in_flight(self) -> int:
        return sum(self.in_flight.values())

    def counter(self, name: str) -> float:
        value = self.stats.get(name, 0)
        return float(value) if isinstance(value, int | float) else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "time": round(self.at, 3),
            "in_flight": dict(self.in_flight),
            "queues": dict(self.queues),
            "lanes": dict(self.lanes),
            "loop_lag_s": None if self.loop_lag is None else round(self.loop_lag, 6),
            "frontier": dict(self.frontier),
            **{k: v for k, v in self.stats.items() if isinstance(v, int | float | dict)},
        }


Probe = Callable[[], CrawlSample]
FrontierCounts = Callable[[], Awaitable[dict[str, int] | None]]
"""The frontier store's URLs by status (None: the store cannot be asked now)."""


def stats_copy(stats: CrawlStats) -> dict[str, Any]:
    """The counters of ``stats`` as plain values (cheap: no sorting, no big lists)."""
    copied: dict[str, Any] = {}
    for f in fields(stats):
        if f.name in _SKIPPED:
            continue
        value = getattr(stats, f.name)
        if isinstance(value, SpacingReport):
            copied[f.name] = value.as_dict()
        elif isinstance(value, Counter | dict):
            copied[f.name] = dict(value)
        elif isinstance(value, list):
            copied[f.name] = list(value[:20])
        else:
            copied[f.name] = value
    copied["rebook_rate"] = stats.rebook_rate
    return copied


def stats_probe(stats: CrawlStats, clock: Callable[[], float] = time.time) -> Probe:
    """A probe of the counters alone (no scheduler to ask about in-flight work)."""
    return lambda: CrawlSample(clock(), stats_copy(stats))


URL_STATES = ("queued", "leased", "done", "refused", "failed")
"""The frontier's URL statuses (``courtier.frontier.base.UrlStatus``), as counted."""


class EngineProbe:
    """A probe of ``courtier.pipeline.engine.Engine``: counters, in flight, queues, lanes
    (``__call__``, on the loop, cheap), and the frontier's URLs by status
    (``frontier_counts``, a query on the store's thread)."""

    def __init__(self, engine: Any, clock: Callable[[], float] = time.time) -> None:
        self.engine = engine
        self.clock = clock

    def __call__(self) -> CrawlSample:
        engine = self.engine
        in_flight: dict[str, int] = {}
        queues: dict[str, int] = {}
        lanes: Counter[str] = Counter()
        stages = getattr(engine, "stages", None)  # wired once the backends are open
        pages = getattr(stages, "pages", None)
        if pages is not None:
            in_flight["pages"] = int(pages.in_flight)
        sites = getattr(engine, "sites", {})
        queued = 0
        for lane in list(sites.values()):
            queued += len(lane.queue)
            lanes[lane.sched.phase.value] += 1
        queues["pages"] = queued
        media = getattr(stages, "media", None)
        scheduler = getattr(stages, "media_scheduler", None)
        if media is not None:
            queues["media"] = int(media.queued)
            for lane in list(media.lanes.values()):
                lanes[lane.sched.phase.value] += 1
        if scheduler is not None:
            in_flight["media"] = int(scheduler.in_flight)
        parser = getattr(engine, "parser", None)
        if parser is not None:
            queues["parse"] = int(parser.waiting)  # pages and captures holding their places
        stats = engine.stats
        return CrawlSample(
            self.clock(),
            stats_copy(stats),
            in_flight,
            queues,
            dict(lanes),
            frontier=url_states(stats.store_counts),  # the end's count; empty before
            duration=getattr(engine, "duration", None),
        )

    async def frontier_counts(self) -> dict[str, int] | None:
        """The store's URLs by status, counted on the store's thread; None while the store is
        not open (before the stages are wired, once the crawl is stopping)."""
        engine = self.engine
        frontier = getattr(engine, "frontier", None)
        if frontier is None or getattr(engine, "stages", None) is None:
            return None
        if getattr(engine, "_stopping", False):  # the store is about to close
            return None
        return url_states(await frontier.call(frontier.store.counts))


def url_states(counts: Mapping[str, int]) -> dict[str, int]:
    """The URL statuses of a store's ``counts()`` (which also counts horizon sites)."""
    return {state: int(counts[state]) for state in URL_STATES if state in counts}


def engine_probe(engine: Any, clock: Callable[[], float] = time.time) -> EngineProbe:
    """A probe of ``courtier.pipeline.engine.Engine`` (``EngineProbe``)."""
    return EngineProbe(engine, clock)
