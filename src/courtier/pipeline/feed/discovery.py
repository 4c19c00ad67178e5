"""What a fetch reveals, turned into frontier work: new URLs, horizon links, host edges.

Rules:
- Only seed sites' URLs join the frontier; links to other sites are horizon, recorded once
  per linking site (one vote each in the host graph), never fetched.
- A link is admitted once per run (bounded dedup cache; the store's unique key catches what
  the cache forgot), only within its site's depth cap (surface mode) and its URL pattern's
  cap (traps).
- A redirect is a link with a hop budget; a sitemap's entries are links at depth 1; a fast
  source's links take the freshlane once.
- A sitemap speaks only for its own host (the sitemaps protocol), or for a site whose
  robots.txt names it: one site cannot fill another's frontier through its sitemap.
- A site whose robots.txt names no sitemap gets ``/sitemap.xml`` tried
  (``[frontier] sitemap_fallback``): a link of the site like any other (robots.txt rules,
  booking, scope, depth 1), queued once its home page is read, after the home page's own
  links: most such sites have none, so the guess waits behind the links a site surely has.
- Links that point at a blocked address literal are counted (SSRF bait), not fetched.
- Images on media hosts (object stores, CDNs, image services) go to the media crawl
  (``media.py``) when it runs, not to the horizon: they are requisites of seed pages.
- Scope (``scope.py``): URLs of the seed are crawled only as ``[scope]`` patterns allow; a
  seed's redirect into its own registrable domain, and a subdomain under ``[scope]
  subdomains``, bring their host into the seed (``adopt``); a seed root redirecting out of
  scope is reported once, with its target.
- A page's declared canonical (``content.canonical``) inside the seed is a link of the page,
  whatever its ``nofollow``: the canonical is the URL crawled and refreshed; one outside the
  seed is only named in the document (never fetched, no horizon vote).
- A page's ``nofollow`` (meta robots, X-Robots-Tag) keeps its links out of the frontier and
  the horizon (its document still lists them); a ``rel="nofollow"`` link to another site
  is no horizon vote.
- Every URL, image and redirect passes the crawl's one intake (``intake.py``) first: a URL
  holding a redaction placeholder is never fetched, a redirect keeps its hop budget and is
  never followed to a Location carrying a secret.
- A parse hook's links (``content.hook_links``) arrive as the page's own: what it dropped is
  gone before this module sees the page, what it added is one more link under every rule
  above; its priority goes with each new URL the page brings (``NewUrl.priority``).
The engine drains the buffers into one store transaction per flush.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from courtier.content.parse import Link, ParsedPage
from courtier.content.sitemap_links import ParsedSitemap
from courtier.frontier.base import HorizonLink, HostEdge, LeasedUrl, NewUrl, UrlLane
from courtier.frontier.dedup import DedupCache
from courtier.frontier.surface import SurfacePolicy, admits, decide_depth_cap
from courtier.frontier.traps import PatternCounter
from courtier.net.policy import AddressPolicy
from courtier.pipeline.feed.fresh_sources import FreshSources
from courtier.pipeline.feed.intake import UrlIntake
from courtier.pipeline.feed.scope import ScopeRules
from courtier.pipeline.stats import CrawlStats
from courtier.politeness.robots_meta import NOFOLLOW, NOINDEX
from courtier.url import Url, UrlError, host_of_site, is_ip_address, parse_url

if TYPE_CHECKING:  # lanes are the discovery's callers: only their type is needed here
    from courtier.pipeline.lanes.site import SiteLane

log = logging.getLogger(__name__)

MAX_SITEMAPS = 50
"""Sitemaps taken from one robots.txt."""


class Discovery:
    def __init__(
        self,
        sites: dict[str, SiteLane],
        scope: set[str],
        stats: CrawlStats,
        policy: AddressPolicy,
        surface_policy: SurfacePolicy,
        intake: UrlIntake | None = None,
        *,
        rules: ScopeRules | None = None,
        adopt: Callable[[str, str, str, str], None] | None = None,
        sitemap_fallback: bool = False,
    ) -> None:
        """``rules``: ``[scope]``'s patterns, redirect and subdomain adoption (None: the seed
        as is); ``adopt`` takes (site, scheme, adopting site, why): the site joins the seed."""
        self.sites = sites
        self.scope = scope
        self.stats = stats
        self.policy = policy
        self.surface_policy = surface_policy
        self.default_cap = decide_depth_cap(0, None, surface_policy).cap
        self.known = DedupCache(2_000_000)
        """Recently seen links: most repeats never reach the store (whose unique key still
        deduplicates what the cache has forgotten)."""
        self.traps = PatternCounter()
        """URLs admitted per URL pattern this run (a calendar's months share one pattern)."""
        self.sitemaps: dict[str, frozenset[str]] = {}
        """Fetch URLs known to be sitemaps (from robots.txt, or listed by a sitemap index),
        with the sites whose robots.txt named them (for whom they may list URLs)."""
        self.new_urls: list[NewUrl] = []
        self.horizon: list[HorizonLink] = []
        self.edges: list[HostEdge] = []
        self.evictions: list[tuple[str, int]] = []
        self.rules = rules
        self.adopt = adopt
        self.media: Callable[[Url, str], bool] | None = None
        """Takes (image URL, embedding site); True when it queued it as a media requisite
        (the media lanes, built after discovery, connect it when the crawl fetches media)."""
        self.intake = intake or UrlIntake(stats.refused)
        self.sitemap_fallback = sitemap_fallback
        self.fallback_due: set[str] = set()
        """Sites whose ``/sitemap.xml`` is tried once their home page is read."""
        self.fresh: FreshSources | None = None
        """The crawl's fast sources, told of every page and sitemap read (``fresh_sources``)."""

    def drain(
        self,
    ) -> tuple[list[NewUrl], list[HorizonLink], list[HostEdge], list[tuple[str, int]]]:
        """Everything gathered since the last drain, for one store transaction."""
        drained = (self.new_urls, self.horizon, self.edges, self.evictions)
        self.new_urls, self.horizon, self.edges, self.evictions = [], [], [], []
        return drained

    def queue_sitemaps(self, rt: SiteLane, sitemaps: list[str]) -> None:
        """Sitemaps robots.txt lists on seed sites become ordinary (booked) work; none
        listed: ``/sitemap.xml``, with ``sitemap_fallback``."""
        if not sitemaps and self.sitemap_fallback:
            self.fallback_due.add(rt.site)
        for raw in sitemaps[:MAX_SITEMAPS]:
            try:
                url = parse_url(raw.strip(), f"{rt.scheme}://{rt.site}/robots.txt")
            except UrlError:
                self.stats.bad_links += 1
                continue
            if url.site in self.scope:
                named = self.sitemaps.get(url.fetch_url, frozenset())
                self.sitemaps[url.fetch_url] = named | {rt.site}
                self.add_link(rt, Link(url.canonical, url.fetch_url, url.site), 1, 0)

    def redirect(self, rt: SiteLane, item: LeasedUrl, location: str) -> None:
        target = self.intake.redirect(location, item.fetch_url, item.redirects)
        if target is None:
            return
        if target.site not in self.scope:
            rules, adopt = self.rules, self.adopt
            if (
                rules is not None
                and adopt is not None
                and rules.adopts_redirect(rt.site, target.site)
            ):
                adopt(target.site, target.scheme, rt.site, "redirect")
            elif item.depth == 0 and rt.site not in self.stats.seed_redirects:
                self.stats.seed_redirects[rt.site] = target.fetch_url
                log.warning("seed %s redirects out of scope, to %s", rt.site, target.fetch_url)
        link = Link(target.canonical, target.fetch_url, target.site)
        self.add_link(rt, link, item.depth, item.redirects + 1)

    def page(self, rt: SiteLane, item: LeasedUrl, page: ParsedPage) -> None:
        found = len(self.new_urls)
        self._page(rt, item, page)
        if self.fresh is not None:
            self.fresh.page(rt, item, page, len(self.new_urls) - found)

    async def start_fresh(self, hand: list[NewUrl]) -> None:
        """The fast sources' start: the hand list, then what earlier runs learned."""
        if self.fresh is not None:
            await self.fresh.start(hand)

    async def watch_fresh(self) -> None:
        """The fast sources' writer, while the crawl runs (``FreshSources.run``)."""
        if self.fresh is not None:
            await self.fresh.run()

    def unchanged(self, rt: SiteLane, item: LeasedUrl) -> None:
        """``item`` answered 304: nothing new (a watched page's visit all the same)."""
        if self.fresh is not None:
            self.fresh.unchanged(rt, item)

    def _page(self, rt: SiteLane, item: LeasedUrl, page: ParsedPage) -> None:
        self.stats.links_found += len(page.links) + len(page.images)
        self.stats.bad_links += page.bad_links
        self.stats.noindex_pages += NOINDEX in page.robots
        self._count_readers(page)
        # Links a fast source reveals take the priority path (the freshlane, once).
        lane = UrlLane.FRESHLANE if item.lane is UrlLane.FRESHLANE else UrlLane.DISCOVERY
        priority = page.priority  # the parse hook's, for the URLs the page brings
        if NOFOLLOW in page.robots:
            self.stats.nofollow_pages += 1
            self.stats.nofollow_links += len(page.links)
        else:
            for link in page.links:
                if link.canonical in page.nofollow and link.site not in self.scope:
                    self.stats.nofollow_links += 1  # recorded in the document: no vote
                    continue
                self.add_link(rt, link, item.depth + 1, 0, lane, priority)
        if item.depth == 0 and rt.site in self.fallback_due:
            self.fallback_due.discard(rt.site)
            self.queue_sitemaps(rt, ["/sitemap.xml"])
        canonical = page.canonical
        if canonical is not None and canonical.site in self.scope:
            # The URL the page names canonical is the one crawled and refreshed: a link of the
            # page, one level down (at its own depth, a chain of canonicals would never
            # reach the depth cap); off the seed, it is only named in the document.
            self.add_link(rt, canonical, item.depth + 1, 0, lane, priority)
        for image in page.images:
            if not self.intake.admits(image.fetch_url):
                continue
            # An image on a media host (store, CDN, image service) is a page requisite,
            # fetched under that host's keys; any other image is an ordinary link.
            media = self.media
            if image.site in self.scope or media is None or not media(image.url(), rt.site):
                self.add_link(rt, image, item.depth + 1, 0, lane, priority)

    def _count_readers(self, page: ParsedPage) -> None:
        """A PDF's or a feed's reader, and the parse hook: what they made of the page."""
        kind = page.fields.get("format")
        if kind is not None:
            self.stats.formats[f"{kind}-error" if f"{kind}_error" in page.fields else kind] += 1
        error = page.fields.get("hook_error")
        if error:
            self.stats.hook_errors[str(error).partition(":")[0]] += 1
        elif "hook" in page.fields:
            self.stats.hook_fields += 1

    def sitemap(
        self, rt: SiteLane, url: str, sitemap: ParsedSitemap, item: LeasedUrl | None = None
    ) -> None:
        """``sitemap`` was fetched from ``url`` (``item``), a URL of ``rt``'s site."""
        found = len(self.new_urls)
        self._sitemap(rt, url, sitemap)
        if self.fresh is not None and item is not None:
            self.fresh.sitemap(rt, item, sitemap, len(self.new_urls) - found)

    def _sitemap(self, rt: SiteLane, url: str, sitemap: ParsedSitemap) -> None:
        self.stats.bad_links += sitemap.bad_links
        if sitemap.error:
            log.info("sitemap of %s read in part: %s", rt.site, sitemap.error)
        speaks_for = self.sitemaps.get(url, frozenset()) | {rt.site}
        for link in sitemap.links:
            if link.site not in speaks_for:
                self.stats.refused["sitemap-other-host"] += 1
                continue
            if sitemap.index:
                self.sitemaps[link.fetch_url] = self.sitemaps.get(link.fetch_url, frozenset()) | (
                    speaks_for
                )
            self.stats.sitemap_links += 1
            # Listed by the site itself: as close to the root as a link from its home page.
            self.add_link(rt, link, 1, 0, UrlLane.DISCOVERY)

    def add_link(
        self,
        rt: SiteLane,
        link: Link,
        depth: int,
        redirects: int,
        lane: UrlLane = UrlLane.DISCOVERY,
        priority: int = 0,
    ) -> None:
        in_scope = link.site in self.scope
        if not in_scope and self.rules is not None and self.adopt is not None:
            parent = self.rules.adopts_subdomain(link.site, self.scope)
            if parent is not None:
                self.adopt(link.site, link.fetch_url.partition(":")[0], parent, "subdomain")
                in_scope = True
        if not self.intake.admits(link.fetch_url):
            return
        if in_scope and self.rules is not None and not self.rules.allows(link.fetch_url):
            self.stats.refused["scope-pattern"] += 1
            return
        # A horizon URL is one vote per linking site: the host graph must hear of every seed
        # site that links it, not only of the first, so its cache key names the linking site.
        key = link.canonical if in_scope else f"{rt.site} {link.canonical}"
        if not self.known.first_sighting(key):
            self.stats.dedup_hits += 1
            return
        if in_scope:
            # A seed site another worker crawls (scale-out) has no lane here: its URL joins
            # the shared frontier under the absolute depth cap; its holder applies surface mode.
            target = self.sites.get(link.site)
            cap = target.depth_cap if target is not None else self.default_cap
            if not admits(depth, cap):
                self.stats.depth_capped += 1
                return
            # A parsed link comes with its pattern under the default policy (computed in the
            # parse worker, off this loop): dictionary work only, when that is our policy.
            if link.pattern and self.traps.default_policy:
                admitted = self.traps.admit_pattern(link.pattern, link.pattern_host, link.volatile)
            else:
                admitted = self.traps.admit(link.canonical).admitted
            if not admitted:
                self.stats.trap_capped += 1  # an endless calendar costs its cap, not thousands
                return
            self.new_urls.append(
                NewUrl(link.canonical, link.fetch_url, link.site, depth, redirects, lane, priority)
            )
            if link.site != rt.site:
                self.edges.append(HostEdge(rt.site, link.site))  # seed-to-seed, for ranking
            if target is not None:
                target.discovered += 1
                target.backlog += 1
                self._surface(target)
        else:
            self.horizon.append(HorizonLink(link.canonical, link.site, rt.site))
            self.stats.horizon_links += 1
            if redirects:
                self.stats.refused["redirect-out-of-scope"] += 1
            self._judge_literal(link.site)

    def _surface(self, rt: SiteLane) -> None:
        """Surface mode: a site whose frontier outgrows a level keeps only its shallow URLs."""
        decision = decide_depth_cap(rt.discovered, rt.depth_cap, self.surface_policy)
        if decision.cap == rt.depth_cap:
            return
        rt.depth_cap = decision.cap
        if decision.tightened and decision.cap is not None:
            log.info(
                "surface mode for %s: %d URLs discovered, depth capped at %d",
                rt.site,
                rt.discovered,
                decision.cap,
            )
            self.stats.surface_sites += 1
            self.evictions.append((rt.site, decision.cap))

    def _judge_literal(self, site: str) -> None:
        """Count links that point at a blocked address literal (SSRF bait), fetched or not."""
        host = host_of_site(site)
        if is_ip_address(host):
            verdict = self.policy.check(host)
            if not verdict.allowed:
                self.stats.bait_links[verdict.reason] += 1
