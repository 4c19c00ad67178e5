"""A site as the crawl engine tracks it, and the seed list that names the sites.

``SiteRuntime`` is the engine's per-site state: its queue of leased URLs, its robots.txt
rules, backoff and latency state, its booking, and the counters the frontier policies read.
Only the engine mutates it, on the event loop.
"""

from __future__ import annotations

import asyncio
from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from courtier.frontier.base import LeasedUrl
from courtier.frontier.split import SplitState
from courtier.politeness.backoff import BackoffState
from courtier.politeness.gcra import Slot
from courtier.politeness.latency import LatencyState
from courtier.politeness.robots import RobotsRules
from courtier.url import Url, UrlError, parse_url

ROBOTS_WORK = "robots.txt"
"""Booked work meaning: fetch the site's robots.txt."""
UNRESOLVED = "?"
"""A site whose origin is not known yet."""


def target_of(fetch_url: str) -> str:
    """Path and query of an absolute http(s) URL (what the request line carries)."""
    slash = fetch_url.find("/", fetch_url.find("//") + 2)
    return fetch_url[slash:] if slash >= 0 else "/"


@dataclass(slots=True)
class SiteRuntime:
    site: str
    host: str
    scheme: str = "http"
    queue: deque[LeasedUrl] = field(default_factory=deque)
    backoff: BackoffState = field(default_factory=lambda: BackoffState(interval=1.0))
    next_start: float = 0.0
    in_flight: int = 0
    robots: RobotsRules | None = None
    crawl_delay: float = 0.0
    last_sent: float = 0.0
    refusal: str | None = None
    """Why the guard last refused this site's host, if it did."""
    timer: asyncio.TimerHandle | None = None
    booked: LeasedUrl | str | None = None
    """The work the next booking is for (a URL, or ``ROBOTS_WORK``)."""
    slot: Slot | None = None
    origin: str | None = UNRESOLVED
    """Origin id the site books on (``UNRESOLVED`` until its first DNS answer)."""
    origin_lookup: bool = False
    ready: bool = False
    """Waiting in the engine's queue for capacity to book."""
    refill_requested: bool = False
    store_empty: bool = False
    attempts: Counter[int] = field(default_factory=Counter)

    margin: float = 0.0
    latency: LatencyState = field(default_factory=LatencyState)
    discovered: int = 0
    """URLs ever discovered on the site (surface mode; eviction does not lower it)."""
    backlog: int = 0
    """Discovered URLs not fetched yet (drives the discovery/refresh split)."""
    depth_cap: int | None = None
    split: SplitState = field(default_factory=SplitState)

    @property
    def interval(self) -> float:
        base = max(self.backoff.interval, self.crawl_delay)
        return base / self.latency.factor + self.margin


def read_seeds(lines: Iterable[str]) -> tuple[list[Url], list[tuple[str, str]]]:
    """Seed lines (URLs or bare hosts; ``#`` comments) to root URLs, plus (line, error) pairs."""
    seeds: list[Url] = []
    errors: list[tuple[str, str]] = []
    for raw in lines:
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        text = line if "://" in line else f"http://{line}/"
        try:
            seeds.append(parse_url(text))
        except UrlError as exc:
            errors.append((line, str(exc)))
    return seeds, errors
