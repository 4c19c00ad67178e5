"""A media lane and its work: the images that share one media key, queued in memory, and
the requests renders make to media hosts (``RenderFetch``), queued before them.

A lane is named by its most specific key (a bucket, a CDN customer's misses, an image
service's customer, a same-origin media host, a host renders may fetch from); ``media``
schedules and runs it.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

from courtier.origins.media import CacheObservations
from courtier.pipeline.lanes.media_places import Placement
from courtier.pipeline.lanes.site import RenderFetch, RobotsWork
from courtier.pipeline.scheduling.lanes import LaneState
from courtier.politeness.backoff import BackoffState
from courtier.politeness.keys import MediaSource
from courtier.politeness.latency import LatencyState
from courtier.url import Url


@dataclass(frozen=True, slots=True)
class MediaItem:
    url: Url
    referrer: str
    """The seed site whose page embeds it: the customer whose origin a cache miss reaches."""
    source: MediaSource
    redirects: int = 0
    customer_origin: str | None = None
    """The referrer's origin when the item was offered: a worker of a shared crawl may hand
    the referrer's site to another worker (its lane, and the live answer, go with it) while
    the item still waits here, and its miss still reaches that origin."""
    placement: Placement | None = None
    """Where a host known by its DNS, not its name, lives (``media_places``): its keys."""
    render: RenderFetch | None = None
    """A render's request (not an image): its answer goes back to the render, which keeps
    it; nothing is retried or followed here."""

    @property
    def on_origin(self) -> bool:
        """On an origin's own servers (a platform's media host): its host's robots.txt too."""
        return self.source is MediaSource.SAME_ORIGIN


MediaWork = MediaItem | RobotsWork


@dataclass(slots=True, eq=False)
class MediaLane:
    name: str
    site: str
    """The media host's site key (host[:port]) whose robots.txt governs the lane."""
    scheme: str
    sched: LaneState[Any] = field(default_factory=LaneState)
    queue: deque[MediaItem] = field(default_factory=deque)
    backoff: BackoffState = field(default_factory=lambda: BackoffState(interval=1.0))
    latency: LatencyState = field(default_factory=LatencyState)
    attempts: Counter[str] = field(default_factory=Counter)
    observations: CacheObservations = field(default_factory=CacheObservations)
    same_origin: bool = False
    """A same-origin media host's lane (``media_places``): booked as far ahead as pages."""
    single: bool = False
    """One request in flight, like a site: a host renders may fetch from (``[render]
    hosts``) on its own site key."""
    books_origin: bool = False
    """Its work being booked now includes a customer's origin (an expected miss): set by
    ``booking``, read by ``max_lead`` for the same booking."""
    fence: None = None
    """Media keys are shared by every worker: booked atomically, never fenced."""

    @property
    def key(self) -> str:
        return self.name


@dataclass(slots=True)
class MediaHost:
    crawl_delay: float = 0.0
    suspended_reason: str | None = None
