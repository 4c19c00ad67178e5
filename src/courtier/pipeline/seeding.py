"""The seed at the start of a run: sites, roots, what the last run left, the freshlane.

Rules:
- URLs a previous run leased and never finished are queued again (``release_leases``).
- Seed sites and their root URLs are written (idempotent: a known URL changes nothing); the
  crawl's scope is every site the store holds as seed or requested.
- First starts are spread over one interval: sites started in phase stay in phase, and
  thousands of requests due in the same millisecond make the loop late for all of them.
- Freshlane sources outside the seed are skipped with a warning.
"""

from __future__ import annotations

import logging
import time
import zlib

from courtier.config import Config
from courtier.frontier.base import FrontierStore, NewUrl, SiteState, UrlLane
from courtier.frontier.surface import SurfacePolicy, decide_depth_cap
from courtier.pipeline.site import SiteLane
from courtier.politeness.backoff import BackoffState
from courtier.url import Url, UrlError, host_of_site, parse_url

log = logging.getLogger("courtier.pipeline.engine")


def new_lane(site: str, config: Config, *, scheme: str = "http", start: float = 0.0) -> SiteLane:
    return SiteLane(
        name=site,
        host=host_of_site(site),
        scheme=scheme,
        backoff=BackoffState(interval=config.site_interval),
        margin=config.politeness.start_margin,
        next_start=start,
    )


def seed_store(
    store: FrontierStore, seeds: list[Url], *, shared: bool = False
) -> tuple[int, list[str]]:
    """(URLs released from the last run, the sites in scope). Runs on the store thread. A
    shared store's leases belong to live workers: they are released shard by shard."""
    now = time.time()
    released = 0 if shared else store.release_leases()
    store.add_sites([u.site for u in seeds], SiteState.SEED, now)
    roots = [NewUrl(u.canonical, u.fetch_url, u.site, 0) for u in seeds]
    store.write_batch(roots, [], [], now)
    return released, store.sites_in_state(SiteState.SEED, SiteState.REQUESTED)


def seed_lanes(
    scope: list[str],
    seeds: list[Url],
    sizes: dict[str, tuple[int, int]],
    config: Config,
    surface: SurfacePolicy,
    now: float,
) -> dict[str, SiteLane]:
    schemes = {u.site: u.scheme for u in seeds}
    interval = config.site_interval
    lanes: dict[str, SiteLane] = {}
    for site in scope:
        spread = interval * (zlib.crc32(site.encode()) % 1024) / 1024
        lane = new_lane(site, config, scheme=schemes.get(site, "http"), start=now + spread)
        lane.discovered, lane.backlog = sizes.get(site, (0, 0))
        lane.depth_cap = decide_depth_cap(lane.discovered, None, surface).cap
        lanes[site] = lane
    return lanes


def freshlane_urls(config: Config, scope: set[str]) -> list[NewUrl]:
    urls = []
    for raw in config.frontier.freshlane:
        try:
            url = parse_url(raw)
        except UrlError as exc:
            log.warning("freshlane source %r skipped: %s", raw, exc)
            continue
        if url.site not in scope:
            log.warning("freshlane source %s skipped: its site is not in the seed", raw)
            continue
        urls.append(NewUrl(url.canonical, url.fetch_url, url.site, 0, 0, UrlLane.FRESHLANE))
    return urls
