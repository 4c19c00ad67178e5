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
import zlib
from collections.abc import Callable, Mapping

from courtier.config import Config
from courtier.frontier.base import FrontierStore, NewUrl, SiteState, UrlLane
from courtier.frontier.surface import SurfacePolicy, decide_depth_cap
from courtier.pipeline.feed.frontier_io import FrontierIO
from courtier.pipeline.lanes.site import SiteLane
from courtier.pipeline.stats import CrawlStats
from courtier.politeness.backoff import BackoffState
from courtier.politeness.limiter.base import Fence
from courtier.url import Url, UrlError, host_of_site, parse_url

log = logging.getLogger(__name__)


def new_lane(site: str, config: Config, *, scheme: str = "http", start: float = 0.0) -> SiteLane:
    own = config.limits.site_interval(site)
    return SiteLane(
        name=site,
        host=host_of_site(site),
        scheme=scheme,
        backoff=BackoffState(interval=config.site_interval if own is None else own),
        base_interval=own,
        margin=config.politeness.start_margin,
        next_start=start,
    )


def seed_store(
    store: FrontierStore, seeds: list[Url], now: float, *, shared: bool = False
) -> tuple[int, list[str]]:
    """(URLs released from the last run, the sites in scope). Runs on the store thread. A
    shared store's leases belong to live workers: they are released shard by shard."""
    released = 0 if shared else store.release_leases()
    store.add_sites([u.site for u in seeds], SiteState.SEED, now)
    roots = [NewUrl(u.canonical, u.fetch_url, u.site, 0) for u in seeds]
    store.write_batch(roots, [], [], now)
    return released, store.sites_in_state(SiteState.SEED, SiteState.REQUESTED)


Sizes = Mapping[str, tuple[int, int]]
"""Site -> (URLs discovered, URLs waiting) in the store."""


class SeedSites:
    """The crawl's seed: every site in scope, and a lane for each site this worker crawls.

    Rules:
    - The only writer of both. A site joins here at the start (``start``), when the store
      names a new seed site while the crawl runs (``admit``: ``seed add``, a promotion), when
      the crawl adopts it (``adopt``: a seed's redirect into its own registrable domain, a
      subdomain under ``[scope] subdomains``), and with a shard this worker takes (``take``).
    - A lane's depth cap comes from the site's size in the store (nothing for a site new to
      it) under the surface policy. In a shared crawl a site has a lane only on the worker
      holding its shard, and the lane carries that shard's fence: losing the shard drops it.
    - The lanes made at the start are spread over one interval (sites started in phase stay
      in phase); a later lane starts now, and one that comes with a shard no sooner than one
      interval from now (the shard's last holder may have just sent a request there).
    """

    def __init__(
        self,
        config: Config,
        surface: SurfacePolicy,
        now: Callable[[], float],
        *,
        shared: bool = False,
    ) -> None:
        self.config = config
        self.surface = surface
        self.now = now
        self.shared = shared
        self.lanes: dict[str, SiteLane] = {}
        self.scope: set[str] = set()
        self.fence_of: Callable[[str], Fence | None] = lambda _site: None
        """A shared crawl: the lease this worker holds on a site's shard (None: not held)."""
        self.refill: Callable[[SiteLane], None] = lambda _lane: None
        """Asks the store for a new lane's first URLs."""
        self.shape: Callable[[SiteLane], None] = lambda _lane: None
        """Gives a new lane its site's operator controls (``controls.Controls.shape``)."""
        self.opted_out: set[str] = set()
        """Hosts whose owners opted out: never admitted, whoever names them."""

    def _lane(self, site: str, scheme: str, start: float, sizes: Sizes) -> SiteLane:
        lane = new_lane(site, self.config, scheme=scheme, start=start)
        lane.discovered, lane.backlog = sizes.get(site, (0, 0))
        lane.depth_cap = decide_depth_cap(lane.discovered, None, self.surface).cap
        self.shape(lane)
        self.lanes[site] = lane
        return lane

    def start(self, scope: list[str], seeds: list[Url], sizes: Sizes) -> None:
        """The scope the store holds; a lane for each site unless the crawl is shared (a
        worker's sites come with the shards it takes)."""
        self.scope.update(scope)
        if self.shared:
            return
        schemes = {u.site: u.scheme for u in seeds}
        now, interval = self.now(), self.config.site_interval
        for site in scope:
            spread = interval * (zlib.crc32(site.encode()) % 1024) / 1024
            self._lane(site, schemes.get(site, "http"), now + spread, sizes)

    def admit(self, site: str, scheme: str = "http") -> SiteLane | None:
        """``site`` is in the seed now (its root URL is in the store): in scope, and crawled
        here unless another worker holds its shard. None: no new lane here (nor in the
        scope, when its owner opted out)."""
        if host_of_site(site) in self.opted_out:
            return None
        self.scope.add(site)
        if site in self.lanes:
            return None
        fence = self.fence_of(site)
        if self.shared and fence is None:
            return None  # the worker holding its shard crawls it (now, or when it takes it)
        lane = self._lane(site, scheme, self.now(), {})
        lane.fence = fence
        self.refill(lane)
        return lane

    def take(self, sites: list[str], fence: Fence, sizes: Sizes) -> list[SiteLane]:
        """The lanes of a shard this worker took (without those it already has)."""
        taken = []
        now = self.now()
        for site in sites:
            if site in self.lanes:
                continue
            lane = self._lane(site, "http", now, sizes)
            lane.fence = fence
            if fence.token > 1:  # a holder before: its last request is unknown, say now
                lane.hold_start(now + lane.interval)
            taken.append(lane)
        return taken

    def interval_of(self, site: str) -> float | None:
        """The site's current interval if this worker crawls it."""
        lane = self.lanes.get(site)
        return None if lane is None else lane.interval

    def origin_of(self, site: str) -> str | None:
        """The origin the site's requests are booked on, if this worker crawls it."""
        lane = self.lanes.get(site)
        return None if lane is None else lane.booked_origin

    def booked_origins(self) -> set[str]:
        return {o for lane in self.lanes.values() if (o := lane.booked_origin) is not None}

    def drop(self, lanes: list[SiteLane]) -> None:
        """Lanes of a shard this worker lost: the sites stay in scope."""
        for lane in lanes:
            if self.lanes.get(lane.name) is lane:
                del self.lanes[lane.name]


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


def adopt(
    seed: SeedSites,
    frontier: FrontierIO,
    stats: CrawlStats,
    site: str,
    scheme: str,
    owner: str,
    why: str,
) -> None:
    """``site`` joins the seed during the run (``owner``'s redirect into its own registrable
    domain, or a subdomain under ``[scope] subdomains``): in scope at once, saved as a seed
    site with the next flush, crawled by a lane of its own (in a shared crawl, by the worker
    holding its shard)."""
    same = ", the same site owner" if why == "redirect" else ""
    stats.adopted[site] = f"{why} from {owner}{same}"
    log.info("%s joins the seed: %s from %s", site, why, owner)
    frontier.adopt(site)
    seed.admit(site, scheme)
