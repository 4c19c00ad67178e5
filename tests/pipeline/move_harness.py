"""Origin moves on fake time: seed lanes (``lane_harness``) with the live origins that move
them (``LiveOrigins``), and what the servers behind them see.

Origin inference is a table the test sets (``Inferred``): ``Moves.move`` re-clusters the way
an inference result does, and ``LiveOrigins`` applies it as in a crawl (the carry of clocks,
the rebook of lanes, an operator's pin). Judged from the servers' side: the real sends
(``ScriptedFetcher.sends``) of each site, and of every site a server holds, whatever keys
they were booked on.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from lane_harness import FleetLimiter, Lanes, OpenGuard, Script, allow_all

from courtier.config import load
from courtier.origins.cluster import Assignment, OriginChange
from courtier.origins.infer import InferenceResult
from courtier.pipeline.lanes.origins_live import LiveOrigins
from courtier.pipeline.lanes.site import SiteLane
from courtier.pipeline.scheduling.timer import FakeTimer, sleep_until
from courtier.politeness.limiter.base import BookingRequest, BookingResult, Limiter
from courtier.politeness.limiter.memory import MemoryLimiter

EPSILON = 1e-9
ROUND_TRIP = 0.005
"""Seconds of the fake clock a round trip to a limiter booked by round trip takes."""


class RoundTripLimiter(FleetLimiter):
    """A limiter reached by round trip (SQLite, PostgreSQL): bookings go in batches, from
    the scheduler's booker, each batch ``ROUND_TRIP`` of fake time."""

    def __init__(self, timer: FakeTimer) -> None:
        super().__init__(MemoryLimiter(clock=timer.now))
        self.timer = timer
        self.out: list[BookingRequest] = []
        """The batch whose round trip is under way."""

    async def book_many(self, requests: Any) -> list[BookingResult]:
        self.out = list(requests)
        try:
            await sleep_until(self.timer, self.timer.now() + ROUND_TRIP)
            return list(await super().book_many(self.out))
        finally:
            self.out = []

    def asking(self, key: str) -> bool:
        """A booking on ``key`` is out."""
        return any(limit.key == key for request in self.out for limit in request.limits)


class Inferred:
    """Origin inference as ``LiveOrigins`` reads it: each host's origin now."""

    def __init__(self) -> None:
        self.now: dict[str, Assignment] = {}

    def origin_of(self, host: str) -> str | None:
        assignment = self.now.get(host)
        return None if assignment is None else assignment.origin

    def provisional(self, host: str) -> bool:
        assignment = self.now.get(host)
        return assignment is not None and assignment.provisional

    def failed(self, host: str) -> bool:
        return host not in self.now

    def place(self, host: str, origin: str, *, provisional: bool = False) -> None:
        self.now[host] = Assignment(host, origin, 0.9, (), provisional)

    def result(self, moves: Mapping[str, str]) -> InferenceResult:
        """A re-clustering that puts each host of ``moves`` on its new origin."""
        changes = []
        for host, new in moves.items():
            changes.append(OriginChange(host, self.origin_of(host), new))
            self.place(host, new)
        return InferenceResult(dict(self.now), tuple(changes), {}, 0)


class NoStore:
    """The store as ``LiveOrigins`` writes origins to it: nothing kept."""

    class store:
        @staticmethod
        def save_origins(*_args: Any) -> None:
            pass

    async def call(self, fn: Any, *args: Any) -> Any:
        return fn(*args)


class Moves:
    """Site lanes, their origins kept by ``LiveOrigins``, on one fake clock."""

    def __init__(
        self,
        tmp_path: Path,
        *overrides: str,
        script: Script = allow_all,
        timer: FakeTimer | None = None,
        limiter: Limiter | None = None,
    ) -> None:
        self.h = h = Lanes(
            load(None, list(overrides)), tmp_path, script, timer=timer, limiter=limiter
        )
        self.timer = h.timer
        self.inferred = Inferred()
        self.live = LiveOrigins(
            self.inferred,  # type: ignore[arg-type]
            guard=OpenGuard(),
            clocks=h.clocks,
            frontier=NoStore(),  # type: ignore[arg-type]
            stats=h.stats,
            hosts=lambda: self.inferred.now,
            sites=lambda: list(h.sites.values()),
            arm=h.pages.arm,
            unresolved=lambda _lane, _now: None,
            timer=h.timer,
            recheck_every=300.0,
            tasks=h.tasks,
            per_unit=h.feedback.origin_interval,
            rebook=h.pages.rebook,
        )
        self.pins: dict[str, str] = {}
        self.live.manual = self.pins.get
        h.start()

    def site(
        self, host: str, paths: list[str], origin: str, *, provisional: bool = False
    ) -> SiteLane:
        lane = self.h.site(host, paths, origin=origin)
        lane.provisional = provisional
        self.inferred.place(host, origin, provisional=provisional)
        return lane

    def arm(self, *lanes: SiteLane) -> None:
        for lane in lanes:
            self.h.pages.arm(lane)

    async def move(self, moves: Mapping[str, str]) -> None:
        """Inference re-clustered: each host of ``moves`` is on its new origin now."""
        await self.live._apply(self.inferred.result(moves))

    async def pin(self, lane: SiteLane, origin: str | None) -> None:
        """An operator placed the site on ``origin`` (None: gave it back to inference)."""
        if origin is None:
            self.pins.pop(lane.site, None)
        else:
            self.pins[lane.site] = origin
        await self.live.repin(lane)

    async def close(self) -> None:
        await self.h.close()

    # -- what the servers saw ------------------------------------------------------------

    def sends(self, hosts: Iterable[str]) -> list[tuple[float, str]]:
        """(when its headers went out, URL) of every request to ``hosts``, in time order."""
        wanted = set(hosts)
        return sorted((t, url) for t, url in self.h.fetcher.sends if url.split("/")[2] in wanted)

    def cost(self, url: str) -> float:
        path = "/" + url.split("/", 3)[3]
        if path.startswith("/robots"):
            return 1.0  # robots.txt, and a robots.txt redirect's hop
        return self.h.site_lanes.costs.cost_of_target(path)

    def assert_site_spaced(self, lane: SiteLane) -> None:
        """Every start on the site at least its interval (as configured, with the start
        margin) after the one before, whoever sent it: the server's view, its real start
        times, nothing taken off."""
        interval = (lane.base_interval or self.h.config.site_interval) + lane.margin
        sends = self.sends([lane.host])
        gaps = [(round(b - a, 4), u) for (a, _), (b, u) in itertools.pairwise(sends)]
        short = [(gap, url) for gap, url in gaps if gap < interval - EPSILON]
        assert not short, (lane.host, interval, short, sends)

    def assert_within_budget(
        self, hosts: Iterable[str], origin: str, since: float = 0.0, until: float = math.inf
    ) -> None:
        """The server behind ``hosts`` (booked as ``origin``) never received a request, from
        ``since`` (when the crawl learnt who shares it) to ``until``, before the one before it
        had been out for its cost at the origin's rate."""
        per_unit = self.h.feedback.origin_interval(origin)
        sends = [(t, url) for t, url in self.sends(hosts) if since <= t < until]
        early = [
            (round(b - a, 4), self.cost(u) * per_unit, u, v)
            for (a, u), (b, v) in itertools.pairwise(sends)
            if b - a < self.cost(u) * per_unit - EPSILON
        ]
        assert not early, (origin, early, sends)
