"""A seed site as the engine tracks it (its lane), and the seed list that names the sites.

``SiteLane`` is the per-site state: its queue of leased URLs, backoff and latency, its
spacing, its origin and the counters the frontier policies read. The scheduler's own
bookkeeping of the lane is ``sched``; everything else is written only by the page lanes
(``pages.py``) and the feedback writer, on the event loop.
"""

from __future__ import annotations

import asyncio
import enum
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from courtier.frontier.base import LeasedUrl
from courtier.frontier.split import EmitRate
from courtier.net.fetch import FetchResult
from courtier.pipeline.answers.fetching import Answer
from courtier.pipeline.feed.scope import site_owner
from courtier.pipeline.scheduling.lanes import LaneState
from courtier.politeness.backoff import BackoffState
from courtier.politeness.keys import site_key
from courtier.politeness.latency import LatencyState
from courtier.politeness.limiter.base import Fence


@dataclass(frozen=True, slots=True)
class RobotsWork:
    """Work meaning: fetch the robots.txt of ``site`` (a seed site or a media host)."""

    site: str
    scheme: str


@dataclass(slots=True, eq=False)
class RenderFetch:
    """Work meaning: one request a page's render made to this site, booked, spaced and
    fetched like any other; the render waits on ``answer`` (``lanes.rendering``)."""

    url: str
    host: str
    kind: str
    """The browser's request type (script, xhr, ...): the request log's lane."""
    cost: float
    headers: dict[str, str]
    answer: asyncio.Future[Answer]
    page: str = ""
    """The page whose render asked for it, and why that page was rendered (the request
    log says both)."""
    decision: str = ""
    keep: Callable[[FetchResult], Awaitable[object]] | None = None
    """Redacts and archives an answer (the render's keeper)."""

    async def deliver(self, answer: Answer) -> None:
        """``answer`` kept, then handed to the render if it still waits for it. Kept either
        way: the request went out, and the render may have given up on it meanwhile (its time
        ran out, or it ended) while the server answered."""
        try:
            if answer.result is not None and self.keep is not None:
                await self.keep(answer.result)
        finally:  # whatever keeping did, the render is not left waiting for its deadline
            if not self.answer.done():
                self.answer.set_result(answer)


class OriginStatus(enum.Enum):
    UNRESOLVED = "unresolved"  # not looked up yet: the site cannot book
    LOOKING_UP = "looking-up"
    RESOLVED = "resolved"  # ``origin`` is the id (None: the site books on its own key only)


def target_of(fetch_url: str) -> str:
    """Path and query of an absolute http(s) URL (what the request line carries)."""
    slash = fetch_url.find("/", fetch_url.find("//") + 2)
    return fetch_url[slash:] if slash >= 0 else "/"


@dataclass(slots=True, eq=False)
class SiteLane:
    name: str
    """The site (canonical host[:port]): the lane's name and its ``site:`` key."""
    host: str
    scheme: str = "http"
    sched: LaneState[Any] = field(default_factory=LaneState)
    queue: deque[LeasedUrl] = field(default_factory=deque)
    renders: deque[RenderFetch] = field(default_factory=deque)
    """Requests of renders waiting for their start: they go before the queue."""
    rendering: int = 0
    """Pages of the site being rendered: the site starts no new page meanwhile."""
    backoff: BackoffState = field(default_factory=lambda: BackoffState(interval=1.0))
    latency: LatencyState = field(default_factory=LatencyState)
    next_start: float = 0.0
    """Earliest start the site's own spacing allows (start-to-start, from real sends);
    written only by ``hold_start``."""
    last_sent: float = 0.0
    crawl_delay: float = 0.0
    base_interval: float | None = None
    """The site's own interval (``[limits] overrides``) in place of the configured one."""
    margin: float = 0.0
    origin_status: OriginStatus = OriginStatus.UNRESOLVED
    origin: str | None = None
    also_origin: tuple[str, float] | None = None
    """(old origin, until when): a fleet's site that moved to another origin books on its old
    one too for a while (``shared_evidence.TRANSITION``)."""
    provisional: bool = False
    """Its origin groups it on a shared name whose first answers have not told a CDN edge
    from a platform yet (``Assignment.provisional``): it books little ahead there."""
    refusal: str | None = None
    """Why the guard last refused this site's host, if it did."""
    refill_requested: bool = False
    store_empty: bool = False
    fed_while_refilling: bool = False
    """New URLs of the site reached the store while a refill was out: that refill may have
    looked before they were there, so its coming back short does not make the store empty."""
    attempts: Counter[int] = field(default_factory=Counter)
    discovered: int = 0
    """URLs ever discovered on the site (surface mode; eviction does not lower it)."""
    backlog: int = 0
    """Discovered URLs not fetched yet (drives the discovery/refresh split)."""
    depth_cap: int | None = None
    emit: EmitRate = field(default_factory=EmitRate)
    """Requests the site really gets per second (the split's drain time reads it)."""
    fence: Fence | None = None
    """The shard lease this site is crawled under (scale-out), checked with each booking."""
    suspended_reason: str | None = None
    """Set when the site asks for more than the crawl grants (e.g. a huge Crawl-delay)."""

    @property
    def site(self) -> str:
        return self.name

    @property
    def key(self) -> str:
        return site_key(self.name)

    @property
    def interval(self) -> float:
        base = max(self.backoff.interval, self.crawl_delay)
        return base / self.latency.factor + self.margin

    @property
    def booked_origin(self) -> str | None:
        return self.origin if self.origin_status is OriginStatus.RESOLVED else None

    def moved(self, until: float) -> None:
        """Its origin changes now, in a fleet: it books its old one too until ``until``, as
        another worker may book it there until the evidence reaches it."""
        if self.origin is not None:
            self.also_origin = (self.origin, until)

    def old_origin(self, now: float) -> str | None:
        """The origin it moved from, while it books there too (``moved``)."""
        if self.also_origin is None:
            return None
        old, until = self.also_origin
        if until <= now or old == self.booked_origin:
            self.also_origin = None
            return None
        return old

    def hold_start(self, until: float) -> None:
        """The site's next request starts no sooner than ``until`` (a start, a real send, a
        pause, a clock carried over): ``next_start`` only ever moves later, here."""
        if until > self.next_start:
            self.next_start = until


def booked_site_key(lane: SiteLane, sites: Mapping[str, SiteLane], scope: Collection[str]) -> str:
    """The ``site:`` key ``lane`` books on: its owner's (``www.X`` on ``site:X``), unless
    origin inference places the two hosts on different origins. Then they are two
    servers and each keeps its own clock, as any other site does: one clock for both
    made each booking wait a whole interval for the other host's (pages 2.04 s apart
    where 1.02 s is allowed, with 200 www/bare pairs on their own addresses). An origin
    unknown on either side (no inference, a site another worker holds): one clock."""
    owner = site_owner(lane.site, scope)
    if owner != lane.site:
        bare = sites.get(owner)
        ours = lane.booked_origin
        theirs = None if bare is None else bare.booked_origin
        if ours is not None and theirs is not None and ours != theirs:
            return site_key(lane.site)
    return site_key(owner)
