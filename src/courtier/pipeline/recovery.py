"""What a run takes over from the one before it, so a restart keeps every promise.

Rules:
- Saved floors (a clean stop's, and every pause written through the store when it was
  raised: Retry-After, backoff, an origin held) are raised on their keys before the first
  booking; a seed site's floor becomes its lane's next start.
- Saved robots.txt answers are used until they expire: a restart asks no robots.txt again
  within its lifetime, and a Crawl-delay is known before the first request.
- A clean stop saves every key's floor (``floors_at_stop``).
- After a crash (the store lock says the last run never stopped cleanly) the last requests
  are unknown, so the clocks are rebuilt as if every key had just been used at the moment
  of the restart: every seed site and every host with a saved robots.txt waits its
  interval (Crawl-delay included), every known origin one request of the dearest class,
  and media lanes one interval of the slowest media key.
"""

from __future__ import annotations

from dataclasses import dataclass

from courtier.config import Config
from courtier.frontier.base import FrontierStore, StoredRobots
from courtier.pipeline.answers.feedback_writer import FeedbackWriter
from courtier.pipeline.answers.robots_fetch import rules_from_stored
from courtier.pipeline.lanes.media import MediaLanes
from courtier.pipeline.lanes.pages import SiteLanes
from courtier.pipeline.lanes.site import SiteLane
from courtier.pipeline.scheduling.clocks import KeyClocks
from courtier.politeness.keys import KeyType, LimitKey, RequestClass, origin_key, site_key


@dataclass(frozen=True, slots=True)
class Inherited:
    floors: dict[str, float]
    robots: dict[str, StoredRobots]
    origins: frozenset[str]


def load_inherited(store: FrontierStore, now: float) -> Inherited:
    """Read what the last run left (on the store thread)."""
    origins = frozenset(store.origins().values())
    return Inherited(store.load_clock_floors(now), store.load_robots(now), origins)


async def restore_floors(
    inherited: Inherited, clocks: KeyClocks, sites: dict[str, SiteLane]
) -> int:
    await clocks.restore(inherited.floors)
    for key, when in inherited.floors.items():
        lane = sites.get(key.removeprefix("site:")) if key.startswith("site:") else None
        if lane is not None:
            lane.hold_start(when)
    return len(inherited.floors)


def adopt_robots(
    inherited: Inherited,
    config: Config,
    sites: dict[str, SiteLane],
    site_lanes: SiteLanes,
    media: MediaLanes | None,
) -> None:
    for site, stored in inherited.robots.items():
        outcome = site_lanes.outcome_of(site, rules_from_stored(stored, config), stored)
        lane = sites.get(site)
        if lane is not None:
            site_lanes.adopt(lane, outcome)
        elif media is not None:
            media.adopt(site, outcome)


async def after_crash(
    inherited: Inherited,
    config: Config,
    clocks: KeyClocks,
    sites: dict[str, SiteLane],
    media: MediaLanes | None,
    now: float,
) -> None:
    """Clocks rebuilt as if every key had been used at ``now`` (the restart)."""
    for lane in sites.values():
        lane.hold_start(now + lane.interval)
    floors: dict[str, float] = {}
    dearest = max(config.costs.model().costs.values())
    policy = config.limits.policy()
    for origin in inherited.origins:
        interval = policy.params(LimitKey(KeyType.ORIGIN, origin)).interval
        floors[origin_key(origin)] = now + dearest * interval
    for site in inherited.robots:
        if site not in sites and media is not None:
            floors[site_key(site)] = now + media.spacing(site_key(site))
    await clocks.raise_floors(floors, durable=False)
    if media is not None:
        slowest = max(
            policy.types[kind].key_params().interval
            for kind in (KeyType.BUCKET, KeyType.CDN, KeyType.CDN_MISS, KeyType.IMGSVC)
        )
        media.start_after = now + slowest


async def floors_at_stop(
    config: Config,
    clocks: KeyClocks,
    sites: dict[str, SiteLane],
    feedback: FeedbackWriter,
    media: MediaLanes | None,
    now: float,
) -> dict[str, float]:
    """What a clean stop saves: each key's floor as started requests demand it, and each
    seed site's own next start and pause."""
    costs = config.costs.model().costs
    floors = await clocks.floors(
        now,
        dearest=max(costs.values()),
        image=costs[RequestClass.IMAGE],
        origin_interval=feedback.origin_interval,
        media_spacing=media.spacing if media is not None else (lambda _key: 0.0),
        owned_sites=set(sites),
    )
    for lane in sites.values():
        floors[lane.key] = max(lane.next_start, lane.backoff.paused_until)
    return floors
