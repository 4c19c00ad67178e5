"""The crawl's stages, wired once its backends are open: feedback, live origins, the two lane
kinds and their schedulers, and the feeder.

Rules:
- Everything a stage needs is passed when it is built (``Parts``); nothing is configured
  from outside afterwards, except the links between stages built in one another's wake
  (the seed's refill, the discovery's media door, the lanes' hunger).
- One record of real sends (``SendSpacing``) serves pages, media and robots.txt hops: they
  book the same origins.
- Schedulers made after the crawl was asked to stop are made stopped.
- With budgets (``[crawl] max_*``), every start passes them (``page_budget``): the lanes'
  schedulers, robots.txt redirect hops, and the refills of full sites.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from courtier.config import Config
from courtier.frontier.base import StoredRobots
from courtier.net.guard import Guard
from courtier.origins.infer import InferenceResult, OriginInference
from courtier.pipeline.answers.feedback_writer import FeedbackWriter
from courtier.pipeline.answers.fetching import FetcherLike, GuardedFetch
from courtier.pipeline.answers.robots_fetch import RobotsCache
from courtier.pipeline.events import Observer
from courtier.pipeline.feed.discovery import Discovery
from courtier.pipeline.feed.frontier_io import FrontierIO
from courtier.pipeline.feed.intake import UrlIntake
from courtier.pipeline.keeping.archive import ArchivingSink
from courtier.pipeline.lanes.feeding import Feeder
from courtier.pipeline.lanes.media import MediaLanes
from courtier.pipeline.lanes.media_lane import MediaLane
from courtier.pipeline.lanes.media_places import MediaPlaces
from courtier.pipeline.lanes.origins_live import LiveOrigins
from courtier.pipeline.lanes.page_budget import LaneBudget
from courtier.pipeline.lanes.pages import SiteLanes
from courtier.pipeline.lanes.rendering import Renderer
from courtier.pipeline.lanes.seeding import SeedSites
from courtier.pipeline.lanes.services import LaneServices
from courtier.pipeline.lanes.shared_evidence import SharedEvidence
from courtier.pipeline.lanes.site import SiteLane
from courtier.pipeline.scheduling.budget import Budget
from courtier.pipeline.scheduling.clocks import KeyClocks
from courtier.pipeline.scheduling.concurrency import MEDIA_FLOOR, initial_bound
from courtier.pipeline.scheduling.hops import HopBooker
from courtier.pipeline.scheduling.scheduler import Scheduler
from courtier.pipeline.scheduling.send_spacing import SendSpacing
from courtier.pipeline.scheduling.start_gate import StartGates
from courtier.pipeline.scheduling.timer import Timer
from courtier.pipeline.stats import CrawlStats
from courtier.pipeline.workers.pool import ParsePool
from courtier.render.browser import find_chromium
from courtier.render.renderer import Renderer as ChromiumRenderer
from courtier.runtime.processes import process_tag
from courtier.url import host_of_site

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Parts:
    """What the stages are made of: the engine's own pieces, open and ready."""

    config: Config
    stats: CrawlStats
    timer: Timer
    clocks: KeyClocks
    guard: Guard
    observer: Observer | None
    inference: OriginInference | None
    frontier: FrontierIO
    seed: SeedSites
    discovery: Discovery
    intake: UrlIntake
    parser: ParsePool
    sink: ArchivingSink
    tasks: set[asyncio.Task[None]]
    stopping: Callable[[], bool]
    lease_lost: Callable[[Any], None]
    save_robots: Callable[[StoredRobots], Awaitable[None]]
    early_origins: asyncio.Task[InferenceResult] | None
    began: float
    """``time.monotonic()`` when the run began."""
    renderer: Renderer | None = None
    """Headless Chromium for pages that need a browser (None: none is used)."""
    budget: Budget | None = None
    """The crawl's budgets (``[crawl] max_*``), with what the store recorded (None: none)."""


@dataclass(slots=True, eq=False)
class Stages:
    feedback: FeedbackWriter
    origins: LiveOrigins
    site_lanes: SiteLanes
    pages: Scheduler[SiteLane, Any]
    media: MediaLanes | None
    media_scheduler: Scheduler[MediaLane, Any] | None
    feeder: Feeder

    def stop(self, lanes: list[SiteLane]) -> None:
        """No new starts anywhere."""
        self.site_lanes.stopping = True
        self.pages.stop(lanes)
        if self.media is not None and self.media_scheduler is not None:
            self.media.stopping = True
            if self.media.places is not None:
                self.media.places.stopping = True
            self.media_scheduler.stop(list(self.media.lanes.values()))


def wire(parts: Parts, fetcher: FetcherLike) -> Stages:
    config, stats, timer, seed = parts.config, parts.stats, parts.timer, parts.seed
    spacing = SendSpacing(parts.clocks)
    spacing.site_interval, spacing.margin = seed.interval_of, config.politeness.start_margin
    feedback = FeedbackWriter(config, parts.clocks, stats)
    origins: LiveOrigins | None = None
    pages: Scheduler[SiteLane, Any] | None = None

    def scheduler(kind: Any, max_in_flight: int) -> Scheduler[Any, Any]:
        made: Scheduler[Any, Any] = Scheduler(
            kind,
            clocks=parts.clocks,
            timer=timer,
            stats=stats,
            max_in_flight=max_in_flight,
            tasks=parts.tasks,
            on_lease_lost=parts.lease_lost,
            spacing=spacing,
            gates=StartGates.of(config.crawl),
        )
        made.stopping = parts.stopping()
        return made

    def arm_page(lane: SiteLane) -> None:
        assert pages is not None
        pages.arm(lane)

    async def hop_origin(site: str, host: str) -> str | None:
        assert origins is not None
        return seed.origin_of(site) or await origins.origin_for(host)

    hops = HopBooker(
        config.politeness.start_margin,
        parts.clocks,
        timer,
        stats,
        seed.interval_of,
        parts.stopping,
        spacing=spacing,
        origin_of=hop_origin,
        origin_limit=feedback.origin_limit,
        budget=parts.budget,
    )
    fetch = GuardedFetch(
        parts.guard,
        fetcher,
        stats,
        timer.now,  # Retry-After dates are read on the crawl's clock, a fake one in tests
        parts.observer,
        hops.sent,
        opted_out=seed.opted_out,
    )

    def rebook(lane: SiteLane) -> None:
        assert pages is not None
        pages.rebook(lane)

    origins = LiveOrigins(
        parts.inference,
        guard=parts.guard,
        clocks=parts.clocks,
        frontier=parts.frontier,
        stats=stats,
        hosts=lambda: {host_of_site(site) for site in seed.scope},
        sites=lambda: list(seed.lanes.values()),
        arm=arm_page,
        unresolved=feedback.host_unresolved,
        timer=timer,
        recheck_every=config.crawl.origin_recheck,
        tasks=parts.tasks,
        early=parts.early_origins,
        started=parts.began,
        per_unit=feedback.origin_interval,
        rebook=rebook,
    )
    if seed.shared and parts.inference is not None:  # a fleet shares what its fetches show
        origins.sharing = SharedEvidence(
            process_tag(), parts.inference, parts.frontier, timer, stats
        )
        origins.saves.mine = lambda: {lane.host for lane in seed.lanes.values()}
    services = LaneServices(
        config,
        timer,
        fetch,
        RobotsCache(),
        feedback,
        stats,
        parts.sink.write,
        hops,
        parts.intake,
        parts.save_robots,
        parts.sink.archive,
        parse=parts.parser.run,
    )
    site_lanes = SiteLanes(
        services,
        frontier=parts.frontier,
        seed=seed,
        discovery=parts.discovery,
        parse=parts.parser.run,
        arm=arm_page,
        lookup_origin=origins.look_up,
        observe_answer=origins.observe_answer,
        renderer=parts.renderer,
        judge_name=parts.guard.judge_name,
    )
    pages = scheduler(site_lanes, initial_bound(config.crawl.max_in_flight))
    seed.refill = site_lanes.request_refill
    media: MediaLanes | None = None
    media_scheduler: Scheduler[MediaLane, Any] | None = None
    if config.media.fetch or parts.renderer is not None:
        media, media_scheduler = _media(parts, services, origins, scheduler)
        site_lanes.rendering.media = media  # a render's requests to media hosts go there
        media.robots_hops = site_lanes.robots_hops  # media hosts' robots.txt hops reach seeds
    feeder = Feeder(
        config,
        frontier=parts.frontier,
        sites=seed.lanes,
        site_lanes=site_lanes,
        pages=pages,
        discovery=parts.discovery,
        sink=parts.sink,
        stats=stats,
        timer=timer,
    )
    site_lanes.hungry = feeder.hurry
    if parts.budget is not None:  # every start spends the crawl's budgets (``page_budget``)
        budget = feeder.budget = LaneBudget(parts.budget)
        pages.admit = budget.admit_page
        if media_scheduler is not None:
            media_scheduler.admit = budget.admit_media
    return Stages(feedback, origins, site_lanes, pages, media, media_scheduler, feeder)


def _media(
    parts: Parts,
    services: LaneServices,
    origins: LiveOrigins,
    scheduler: Callable[[Any, int], Scheduler[Any, Any]],
) -> tuple[MediaLanes, Scheduler[MediaLane, Any]]:
    """The media lanes (the requisites of seed pages on media hosts, unless ``[media] fetch``
    is off; a render's requests to media hosts) and their scheduler."""
    seed = parts.seed
    media_scheduler: Scheduler[MediaLane, Any] | None = None

    def arm(lane: MediaLane) -> None:
        assert media_scheduler is not None
        media_scheduler.arm(lane)

    media = MediaLanes(services, origin_of=seed.origin_of, arm=arm)
    media_scheduler = scheduler(media, initial_bound(parts.config.media.max_in_flight, MEDIA_FLOOR))
    if parts.config.media.fetch:
        parts.discovery.media = media.offer
    if parts.inference is not None:
        media.places = MediaPlaces(
            origins.hosts_facts,
            seed.booked_origins,
            media.rules,
            lambda url, referrer, placement: media.offer(url, referrer, placement=placement),
            parts.tasks,
            parts.timer,
        )
    return media, media_scheduler


NO_BROWSER = (
    "no Chromium found ([render] browser, or chromium on PATH): pages that need a browser "
    "are not rendered; their documents say so"
)


@contextlib.asynccontextmanager
async def open_renderer(config: Config) -> AsyncIterator[Renderer | None]:
    """The crawl's headless Chromium when a browser is installed (it starts with the first
    render: a crawl that renders nothing starts none, yet an operator's ``site render`` can
    turn rendering on while it runs); else None, said once if ``[render]`` may render."""
    settings = config.render
    executable = find_chromium(settings.browser or None)
    if executable is None:
        if settings.decisions().may_render:
            log.warning(NO_BROWSER)
        yield None
        return
    renderer = ChromiumRenderer(
        executable,
        browsers=settings.browsers,
        pages_per_browser=settings.pages_per_browser,
        page_timeout=settings.page_timeout,
        settle=settings.settle,
        stall=settings.stall,
        nice=config.crawl.parse_nice,  # like the parse workers: the fetch loop runs first
        memory_limit=settings.memory_limit,
    )
    try:
        yield renderer
    finally:
        await renderer.close()
