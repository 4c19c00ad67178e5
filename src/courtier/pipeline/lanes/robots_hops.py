"""robots.txt redirect hops: each a request to the host it reaches, booked as that host's own.

Rules:
- A hop to a host's robots.txt (``/robots.txt``) takes that host's rules from the one
  robots.txt cache (``rules_of``): at once when they are in, else once the fetch out for
  them ends. A seed site's rules nobody fetches yet are asked of its own lane (its
  robots.txt is its first request, as always) and the chain waits for them; a host with no
  lane here has its robots.txt fetched by the hop itself. One fetch of a robots.txt serves
  every chain that reaches it.
- Any other hop to a seed site this worker crawls (a robots.txt file by another name, a
  loop of robots.txt files: ``RobotsCache.loops``) is work of that site's lane
  (``RobotsHop``): booked on its keys (its ``site:`` key, a www. twin's shared one, its
  origin), after its request in flight, spaced from its real sends, before its pages, and
  learnt from like the site's own requests (backoff, latency).
- A hop to a host with no lane here (outside the seed, a media host, a seed site another
  worker holds, a site suspended for the run) is booked by ``HopBooker`` on that host's
  ``site:`` key and inferred origin, and sent. RFC 9309 asks for robots.txt redirects to
  be followed across authorities; the crawl sends nothing else there, and, with no lane to
  keep them, that host's rules serve the chain that reached them only.
- While its chain waits on other hosts, the source gives its place in flight and the
  crawl's place back (``release``): its server has answered, and a long wait (the target
  backing off) must not hold either.
- Every wait is looked at again each ``RECHECK`` seconds: a lane dropped meanwhile (an
  operator's controls, a lost shard) or a stop ends it.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from courtier.pipeline.answers.fetching import Answer
from courtier.pipeline.answers.robots_fetch import BookHop, Get, RobotsCache
from courtier.pipeline.events import RequestContext
from courtier.pipeline.lanes.site import SiteLane
from courtier.pipeline.scheduling.hops import HOP_COST
from courtier.pipeline.scheduling.lanes import Launch
from courtier.pipeline.scheduling.timer import Timer, wait_until
from courtier.politeness.robots import RobotsRules
from courtier.url import Url

RECHECK = 1.0
"""Seconds between looks at a wait that has not ended (a dropped lane, a stop)."""

LaneGet = Callable[[SiteLane, str, str, RequestContext], Awaitable[Answer]]
"""A site lane's own fetch: spaced from its real send (``SiteLanes._get``)."""
LaneFeedback = Callable[[SiteLane, Answer], Awaitable[None]]


@dataclass(slots=True, eq=False)
class RobotsHop:
    """Work meaning: one redirect hop of another site's robots.txt chain to this site."""

    fetch_url: str
    host: str
    redirects: int
    done: asyncio.Event = field(default_factory=asyncio.Event)
    answer: Answer | None = None
    running: bool = False


class RobotsHops:
    def __init__(self, cache: RobotsCache, timer: Timer, book_hop: BookHop) -> None:
        self.cache = cache
        self.timer = timer
        self.book_hop = book_hop
        self.lanes: Mapping[str, SiteLane] = {}
        self.arm: Callable[[SiteLane], None] = lambda lane: None
        self.get: LaneGet | None = None
        self.feedback: LaneFeedback | None = None
        self.stopping: Callable[[], bool] = lambda: False
        self.queued: dict[str, deque[RobotsHop]] = {}
        """Hops waiting for their lane's start, by lane."""

    def serve(
        self,
        lanes: Mapping[str, SiteLane],
        arm: Callable[[SiteLane], None],
        get: LaneGet,
        feedback: LaneFeedback,
        stopping: Callable[[], bool],
    ) -> None:
        """Hops to these seed sites are their lanes' work (``take``, ``run``)."""
        self.lanes, self.arm, self.get, self.feedback = lanes, arm, get, feedback
        self.stopping = stopping

    def _lane(self, site: str) -> SiteLane | None:
        lane = self.lanes.get(site)
        return None if lane is None or lane.suspended_reason is not None else lane

    # -- the chain's side ---------------------------------------------------------------

    async def rules_of(self, source: str, target: str) -> RobotsRules | None:
        """``target``'s rules for the chain of ``source``, once in; None: the chain fetches
        the hop itself (no lane here fetches them, a loop, or the crawl stops)."""
        cache = self.cache
        while not self.stopping():
            rules = cache.rules(target, self.timer.now())
            if rules is not None:
                return rules
            if cache.loops(source, target):
                return None
            if not cache.fetching(target):
                lane = self._lane(target)
                if lane is None:
                    return None
                self.arm(lane)  # it claims its robots.txt when it next chooses
            woken = asyncio.Event()
            cache.subscribe(target, woken.set)
            cache.following[source] = target
            try:
                await wait_until(self.timer, woken, self.timer.now() + RECHECK)
            finally:
                cache.following.pop(source, None)
                cache.unsubscribe(target, woken.set)
        return None

    async def send(self, url: Url, n: int, get: Get) -> Answer | None:
        """The answer of hop ``n`` to ``url``, sent as a request to its host; None: the
        crawl stops (before it was sent, or while it was out)."""
        while not self.stopping():
            lane = self._lane(url.site)
            if lane is None:
                return await self._booked(url, n, get)
            work = RobotsHop(url.fetch_url, url.host, n)
            self.queued.setdefault(lane.name, deque()).append(work)
            self.arm(lane)
            while not work.done.is_set() and not self.stopping():
                if not work.running and self._lane(url.site) is not lane:
                    self._withdraw(lane, work)  # its lane is gone: sent as to a host without one
                    break
                await wait_until(self.timer, work.done, self.timer.now() + RECHECK)
            if work.done.is_set():
                return work.answer
        return None

    def _withdraw(self, lane: SiteLane, work: RobotsHop) -> None:
        queue = self.queued.get(lane.name)
        if queue is not None and work in queue:
            queue.remove(work)
            if not queue:
                del self.queued[lane.name]

    async def _booked(self, url: Url, n: int, get: Get) -> Answer | None:
        slot = await self.book_hop(url.site, url.host)
        if slot is None:
            return None
        context = RequestContext(
            url.site,
            "robots-hop",
            slot.keys,
            HOP_COST,
            redirects=n,
            origin=slot.origin,
            sent=slot.sent,
        )
        return await get(url.fetch_url, url.host, context)

    # -- the target lane's side ---------------------------------------------------------

    def take(self, lane: SiteLane) -> RobotsHop | None:
        queue = self.queued.get(lane.name)
        if not queue:
            return None
        work = queue.popleft()
        if not queue:
            del self.queued[lane.name]
        return work

    async def run(
        self, lane: SiteLane, work: RobotsHop, launch: Launch, origin: str | None
    ) -> None:
        """The hop at its start: fetched as the lane's own request, learnt from, handed back."""
        assert self.get is not None and self.feedback is not None
        work.running = True
        slot = launch.slot
        context = RequestContext(
            lane.site,
            "robots-hop",
            slot.keys,
            slot.cost,
            launch.wait,
            launch.late,
            redirects=work.redirects,
            origin=origin,
            sent=launch.sent,
        )
        try:
            work.answer = await self.get(lane, work.fetch_url, work.host, context)
            await self.feedback(lane, work.answer)
        finally:
            launch.answered()
            work.done.set()
