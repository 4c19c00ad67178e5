"""What the crawl looks like right now: counters and gauges read on the event loop.

A ``CrawlSample`` is a plain, immutable copy (the observer's thread reads it while the loop
goes on changing the live state). ``engine_probe`` knows where the engine keeps those
figures; anything the engine has not wired yet (before ``run``) reads as zero.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping
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
            **{k: v for k, v in self.stats.items() if isinstance(v, int | float | dict)},
        }


Probe = Callable[[], CrawlSample]


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


def engine_probe(engine: Any, clock: Callable[[], float] = time.time) -> Probe:
    """A probe of ``courtier.pipeline.engine.Engine``: counters, in flight, queues, lanes."""

    def probe() -> CrawlSample:
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
        return CrawlSample(clock(), stats_copy(engine.stats), in_flight, queues, dict(lanes))

    return probe
