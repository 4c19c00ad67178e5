"""The crawl's in-flight bounds, re-chosen as the work goes (``concurrency`` is the policy).

Every ``TICK`` seconds the page and media schedulers' bounds are chosen again from their
lanes with work (each one's spacing and measured answer time) and what waits for a place;
the machine's cap is read once, at the start. Media take at most ``MEDIA_SHARE`` of the cap
(at least ``concurrency.MEDIA_FLOOR``): images are many, cheap and on few keys, pages the
crawl's point.
What was chosen, and what binds, goes into the crawl's stats (progress line, summary,
metrics).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any, Final

from courtier.config import Config
from courtier.pipeline.scheduling import concurrency
from courtier.pipeline.scheduling.concurrency import Bound, LaneLoad
from courtier.pipeline.scheduling.scheduler import Scheduler
from courtier.pipeline.scheduling.timer import Timer, sleep_until
from courtier.pipeline.stats import CrawlStats
from courtier.runtime import open_files

TICK: Final = 0.5
MEDIA_SHARE: Final = 0.25
PARSE_BACKLOG: Final = 8
"""Pages waiting per parse worker above which parsing is behind: the CPU binds."""


def machine_memory() -> int:
    """Bytes of memory the machine has (4 GiB where the system does not say)."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 4 << 30


Cap = tuple[int, concurrency.Binding]


def machine_caps(config: Config, open_limit: int, memory: int) -> tuple[Cap, Cap]:
    """(pages' cap, media's cap), each ``(limit, Binding)``."""
    crawl, render = config.crawl, config.render
    workers = crawl.parse_workers or os.cpu_count() or 1
    browsers = render.browsers if render.mode != "never" or render.sites or render.rules else 0
    held = open_files.reserved(in_flight=0, workers=workers, browsers=browsers)
    body = config.fetch.spool_bytes or config.fetch.max_body_bytes
    total = concurrency.machine_cap(
        open_files=open_limit, held=held, memory_bytes=memory, body_bytes=body
    )
    why = concurrency.Binding.MACHINE
    media_total = max(concurrency.MEDIA_FLOOR, int(total * MEDIA_SHARE))
    media = min(media_total, config.media.max_in_flight or media_total)
    media_why = why if media == media_total else concurrency.Binding.OPERATOR
    pages_total = max(1, total - media)
    pages = min(pages_total, crawl.max_in_flight or pages_total)
    pages_why = why if pages == pages_total else concurrency.Binding.OPERATOR
    return (pages, pages_why), (media, media_why)


def site_loads(lanes: Iterable[Any]) -> list[LaneLoad]:
    """The site lanes with work: a page, a render's request, or one in flight."""
    return [
        LaneLoad(lane.interval, lane.latency.current, 1)
        for lane in lanes
        if lane.queue or lane.renders or lane.sched.work is not None or lane.sched.in_flight
    ]


def media_loads(lanes: Iterable[Any], per_key: int) -> list[LaneLoad]:
    return [
        LaneLoad(lane.backoff.interval, lane.latency.current, 1 if lane.single else per_key)
        for lane in lanes
        if lane.queue or lane.sched.work is not None or lane.sched.in_flight
    ]


def rebound(
    scheduler: Scheduler[Any, Any],
    loads: list[LaneLoad],
    cap: Cap,
    parse_backlog: bool = False,
    floor: int = concurrency.FLOOR,
) -> Bound:
    """Choose ``scheduler``'s bound again and apply it."""
    full = scheduler.in_flight >= scheduler.max_in_flight
    waiting = len(scheduler.ready.lanes) if full else 0
    bound = concurrency.choose(
        concurrency.demand(loads),
        cap,
        in_flight=scheduler.in_flight,
        waiting=waiting,
        current=scheduler.max_in_flight,
        parse_backlog=parse_backlog,
        floor=floor,
    )
    scheduler.set_max_in_flight(bound.limit)
    return bound


async def bound_loop(
    config: Config,
    timer: Timer,
    stats: CrawlStats,
    stages: Any,
    parser: Any,
) -> None:
    """Re-choose the bounds every ``TICK`` until cancelled: the page scheduler's over the
    seed's lanes, the media scheduler's over the media lanes (``stages``: the engine's
    ``wiring.Stages``); ``parser.waiting``: the pages waiting for a parse worker."""
    page_cap, media_cap = machine_caps(config, open_files.raise_limit(), machine_memory())
    per_key = config.media.max_in_flight_per_key
    workers = config.crawl.parse_workers or os.cpu_count() or 1
    while True:
        behind = parser.waiting > PARSE_BACKLOG * workers
        sites = stages.site_lanes.seed.lanes.values()
        bound = rebound(stages.pages, site_loads(sites), page_cap, behind)
        stats.record_bound("pages", bound)
        if stages.media_scheduler is not None and stages.media is not None:
            loads = media_loads(stages.media.lanes.values(), per_key)
            floor = concurrency.MEDIA_FLOOR
            bound = rebound(stages.media_scheduler, loads, media_cap, floor=floor)
            stats.record_bound("media", bound)
        await sleep_until(timer, timer.now() + TICK)
