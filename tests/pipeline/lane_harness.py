"""Site and media lanes wired as the engine wires them, on fake time with a scripted web.

No sockets and no real waiting: ``FakeTimer`` moves time when a test says so, the fetcher
answers from a script (optionally after a delay on the fake clock), the limiter books on the
fake clock.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

from courtier.config import Config
from courtier.frontier.base import LeasedUrl, StoredRobots
from courtier.frontier.sqlite_store import SqliteFrontier
from courtier.net.fetch import FetchResult
from courtier.net.guard import Resolution
from courtier.net.policy import AddressPolicy
from courtier.pipeline.answers.feedback_writer import FeedbackWriter
from courtier.pipeline.answers.fetching import GuardedFetch
from courtier.pipeline.answers.robots_fetch import RobotsCache
from courtier.pipeline.events import RequestEvent
from courtier.pipeline.feed.discovery import Discovery
from courtier.pipeline.feed.frontier_io import FrontierIO
from courtier.pipeline.feed.intake import UrlIntake
from courtier.pipeline.feed.scope import ScopeRules
from courtier.pipeline.keeping.archive import redaction_policy
from courtier.pipeline.lanes.media import MediaLanes
from courtier.pipeline.lanes.media_lane import MediaLane
from courtier.pipeline.lanes.pages import SiteLanes
from courtier.pipeline.lanes.seeding import SeedSites, adopt, new_lane
from courtier.pipeline.lanes.services import LaneServices
from courtier.pipeline.lanes.site import OriginStatus, SiteLane
from courtier.pipeline.scheduling.clocks import KeyClocks
from courtier.pipeline.scheduling.hops import HopBooker
from courtier.pipeline.scheduling.scheduler import Scheduler
from courtier.pipeline.scheduling.send_spacing import SendSpacing
from courtier.pipeline.scheduling.start_gate import StartGates
from courtier.pipeline.scheduling.timer import FakeTimer, sleep_until
from courtier.pipeline.stats import CrawlStats
from courtier.politeness.limiter import MemoryLimiter
from courtier.politeness.limiter.base import Limiter

Script = Callable[[str], tuple[int, list[tuple[str, str]], bytes]]
"""url -> (status, headers, body)."""

UNBOUND = 100_000
"""The in-flight bound of a harness (no bound loop runs here) without an operator's cap."""


def allow_all(url: str) -> tuple[int, list[tuple[str, str]], bytes]:
    if url.endswith("/robots.txt"):
        return 404, [], b""
    if "/img/" in url:
        return 200, [("Content-Type", "image/jpeg")], b"\xff\xd8image"
    return 200, [("Content-Type", "text/html")], b"<html><title>t</title></html>"


class ScriptedFetcher:
    def __init__(self, timer: FakeTimer, script: Script = allow_all) -> None:
        self.timer = timer
        self.script = script
        self.delays: dict[str, float] = {}
        """URL -> seconds (fake) its answer takes."""
        self.started: list[tuple[float, str]] = []
        self.sent_headers: list[tuple[str, dict[str, str]]] = []
        """(URL, the extra request headers it was sent with: a refresh's validators)."""
        self.send_delays: dict[str, float] = {}
        """URL -> seconds (fake) from the fetch's start to its headers going out (a slow
        connect under a busy loop)."""
        self.sends: list[tuple[float, str]] = []
        """(when the headers went out, URL): what the server would see."""

    async def fetch(
        self,
        url: str,
        host: str,
        addresses: tuple[str, ...],
        *,
        headers: Mapping[str, str] | None = None,
        on_sent: Callable[[float], None] | None = None,
        spool: bool = False,
    ) -> FetchResult:
        sent = self.timer.now()
        send_delay = self.send_delays.get(url, 0.0)
        if send_delay:
            await sleep_until(self.timer, sent + send_delay)
        self.sends.append((self.timer.now(), url))
        if on_sent is not None:
            on_sent(self.timer.now())
        self.started.append((sent, url))
        self.sent_headers.append((url, dict(headers or {})))
        went_out = self.timer.now()
        delay = self.delays.get(url, 0.0)
        if delay:
            await sleep_until(self.timer, sent + delay)
        status, headers, body = self.script(url)
        lower = {k.lower(): v for k, v in headers}
        return FetchResult(
            url=url,
            status=status,
            content_type=lower.get("content-type", "text/plain"),
            body=body,
            location=lower.get("location"),
            retry_after=lower.get("retry-after"),
            started_at=sent,
            sent_at=went_out,  # as the real fetcher: when the headers went out
            latency=delay or 0.001,
            headers=tuple(headers),
        )


class OpenGuard:
    policy = AddressPolicy(allow=["127.0.0.0/8"])

    async def resolve(self, host: str) -> Resolution:
        return Resolution(host, ("127.0.0.1",), True, "ok", "")


class Lanes:
    """Both lane kinds and their schedulers; ``start()`` runs the bookers."""

    def __init__(
        self,
        config: Config,
        tmp_path: Path,
        script: Script = allow_all,
        *,
        timer: FakeTimer | None = None,
        limiter: Limiter | None = None,
    ) -> None:
        """``timer`` and ``limiter``: shared with another harness (a second worker)."""
        self.config = config
        self.timer = timer or FakeTimer()
        self.stats = CrawlStats()
        self.limiter = limiter or MemoryLimiter(clock=self.timer.now)
        self.clocks = KeyClocks(self.limiter, config.limits.policy())
        self.fetcher = ScriptedFetcher(self.timer, script)
        self.events: list[RequestEvent] = []
        self.saved_robots: list[StoredRobots] = []
        self.feedback = FeedbackWriter(config, self.clocks, self.stats)
        self.spacing = SendSpacing(self.clocks)
        """One record of real sends for pages, media and robots.txt hops (as the engine)."""
        self.spacing.margin = config.politeness.start_margin
        self.robots = RobotsCache()
        self.frontier = FrontierIO(SqliteFrontier(tmp_path / "f.sqlite3"), queue_per_site=16)
        self.documents: list[dict[str, Any]] = []
        self.tasks: set[asyncio.Task[None]] = set()
        surface = config.frontier.surface_policy(config.crawl.max_depth)
        self.seed = SeedSites(config, surface, self.timer.now)
        self.sites: dict[str, SiteLane] = self.seed.lanes
        self.spacing.site_interval = self.seed.interval_of
        self.hops = HopBooker(
            config.politeness.start_margin,
            self.clocks,
            self.timer,
            self.stats,
            self.seed.interval_of,
            lambda: False,
            spacing=self.spacing,
            origin_of=self._hop_origin,
            origin_limit=self.feedback.origin_limit,
        )
        # Every real send floors its site's key, as the engine wires it.
        self.fetch = GuardedFetch(
            OpenGuard(), self.fetcher, self.stats, self.timer.now, self, self.hops.sent
        )
        self.intake = UrlIntake(self.stats.refused, redaction_policy(config))
        self.discovery = Discovery(
            self.sites,
            self.seed.scope,
            self.stats,
            OpenGuard.policy,
            surface,
            self.intake,
            rules=ScopeRules(config.scope),
            adopt=partial(adopt, self.seed, self.frontier, self.stats),
        )
        services = LaneServices(
            config,
            self.timer,
            self.fetch,
            self.robots,
            self.feedback,
            self.stats,
            self.documents.append,
            self.hops,
            self.intake,
            self._save_robots,
        )
        self.site_lanes = SiteLanes(
            services,
            frontier=self.frontier,
            seed=self.seed,
            discovery=self.discovery,
            parse=self._parse,
            arm=lambda lane: self.pages.arm(lane),
            lookup_origin=lambda lane: None,
            observe_answer=lambda lane, answer: None,
        )
        self.pages: Scheduler[SiteLane, Any] = self._scheduler(
            self.site_lanes, config.crawl.max_in_flight or UNBOUND
        )
        self.seed.refill = self.site_lanes.request_refill
        self.origins: dict[str, str] = {}
        self.media = MediaLanes(
            services, origin_of=self.origins.get, arm=lambda lane: self.media_scheduler.arm(lane)
        )
        self.media_scheduler: Scheduler[MediaLane, Any] = self._scheduler(
            self.media, config.media.max_in_flight or UNBOUND
        )
        self.media.robots_hops = self.site_lanes.robots_hops  # as the engine wires them
        self._bookers: list[asyncio.Task[None]] = []

    async def _save_robots(self, stored: StoredRobots) -> None:
        self.saved_robots.append(stored)

    def request(self, event: RequestEvent) -> None:
        self.events.append(event)

    def _scheduler(self, kind: Any, max_in_flight: int) -> Scheduler[Any, Any]:
        return Scheduler(
            kind,
            clocks=self.clocks,
            timer=self.timer,
            stats=self.stats,
            max_in_flight=max_in_flight,
            tasks=self.tasks,
            spacing=self.spacing,
            gates=StartGates.of(self.config.crawl),
        )

    async def _hop_origin(self, site: str, host: str) -> str | None:
        """A hop's origin: the seed lane's, else the scripted origin of its site."""
        lane = self.sites.get(site)
        if lane is not None and lane.booked_origin is not None:
            return lane.booked_origin
        return self.origins.get(site)

    @staticmethod
    async def _parse(fn: Callable[..., Any], *args: Any) -> Any:
        return fn(*args)

    def start(self) -> None:
        self._bookers = [
            asyncio.create_task(self.pages.booker()),
            asyncio.create_task(self.media_scheduler.booker()),
        ]

    async def close(self) -> None:
        self.pages.stop(list(self.sites.values()))
        self.media_scheduler.stop(list(self.media.lanes.values()))
        for task in [*self._bookers, *self.tasks]:
            task.cancel()
        await asyncio.gather(*self._bookers, *self.tasks, return_exceptions=True)
        await self.frontier.close()

    def site(self, name: str, paths: list[str], origin: str | None = None) -> SiteLane:
        """A seed site with ``paths`` leased, its origin known."""
        lane = new_lane(name, self.config, start=self.timer.now())
        lane.origin, lane.origin_status = origin, OriginStatus.RESOLVED
        lane.store_empty = True
        for n, path in enumerate(paths):
            lane.queue.append(LeasedUrl(n + 1, f"http://{name}{path}", name, 1, 0))
        self.sites[name] = lane
        self.discovery.scope.add(name)
        return lane

    def starts(self, host: str, *, robots: bool = False) -> list[float]:
        return [
            t
            for t, url in self.fetcher.started
            if url.split("/")[2] == host and (robots or not url.endswith("/robots.txt"))
        ]


class FleetLimiter:
    """One worker's connection to a limiter shared by a fleet, on fake time: the state is
    one ``MemoryLimiter`` (as the table of a PostgreSQL store), reached only through the
    ``Limiter`` protocol's coroutines, as a worker reaches a shared backend."""

    def __init__(self, shared: MemoryLimiter) -> None:
        self.shared = shared

    @property
    def clock(self) -> Callable[[], float]:
        return self.shared.clock

    async def book(self, limits: Any, cost: float, **kwargs: Any) -> Any:
        return await self.shared.book(limits, cost, **kwargs)

    async def book_many(self, requests: Any) -> Any:
        return await self.shared.book_many(requests)

    async def raise_floor(self, floors: Mapping[str, float]) -> None:
        await self.shared.raise_floor(floors)

    async def charge(self, limit: Any, cost: float) -> float:
        return await self.shared.charge(limit, cost)

    async def keys_after(self, when: float) -> dict[str, float]:
        return await self.shared.keys_after(when)

    async def tats(self, keys: Any) -> dict[str, float]:
        return await self.shared.tats(keys)

    async def prune(self, margin: float = 300.0) -> int:
        return await self.shared.prune(margin)

    async def close(self) -> None:
        """The shared state outlives a worker."""
