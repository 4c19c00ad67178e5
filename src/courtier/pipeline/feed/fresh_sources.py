"""The crawl's fast sources: the pages it watches for news, fed by its own visits.

Rules (the policy is ``frontier.fresh``; this is where the crawl's visits meet it):
- Every visit of a watched page (home pages, feeds, recent sitemaps, critical or popular
  pages, the hand list) goes to the policy with the page's fingerprint and how many links it
  yielded that this run had not seen; a 304 is a visit that found nothing new.
- What the policy decides is written to the store every ``flush`` seconds in one
  transaction (``FrontierStore.save_fresh``): the page's watch state for ``courtier fresh
  list``, and its row's schedule (the freshlane at its interval, or ordinary refresh).
- A watched page's site is leased on the priority path when the page falls due (``urge``):
  its look must not wait behind the URLs the site already holds.
- State is read from the store at start, so a restart or a shard moving to another worker
  keeps what was learned.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from courtier.config import Config
from courtier.content.parse import ParsedPage
from courtier.content.sitemap_links import ParsedSitemap
from courtier.frontier.base import FrontierError, LeasedUrl, NewUrl, UrlLane
from courtier.frontier.fresh import FreshPolicy, FreshSource, FreshState, after_visit, candidate
from courtier.frontier.refresh import DAY
from courtier.pipeline.feed.frontier_io import FrontierIO
from courtier.pipeline.scheduling.timer import Timer, sleep_until

if TYPE_CHECKING:  # lanes are the callers: only their type is needed here
    from courtier.pipeline.lanes.site import SiteLane

log = logging.getLogger(__name__)

RECENT_LASTMOD = DAY
"""A sitemap whose newest ``<lastmod>`` is younger than this is a candidate."""
DUE_MARGIN = 1.0
"""Seconds after a page's due time its site is urged: the store has its schedule by then."""


class FreshSources:
    def __init__(
        self,
        policy: FreshPolicy,
        frontier: FrontierIO,
        timer: Timer,
        *,
        learn: bool = True,
        flush: float = 1.0,
        hand_interval: float = 60.0,
    ) -> None:
        """``learn``: find sources (False: only the hand list is watched, every
        ``hand_interval`` seconds)."""
        self.policy = policy
        self.frontier = frontier
        self.timer = timer
        self.learn = learn
        self.flush = flush
        self.hand_interval = hand_interval
        self.sources: dict[int, FreshSource] = {}
        """Watched pages (and pages that were, now quiet), by URL id."""
        self._seen: set[int] = set()
        """Watched pages visited in this run: the links their next visit yields are judged
        new or not against this run's record."""
        self._unsaved: dict[int, tuple[FreshSource, bool]] = {}
        """Changes to write: the page's state, and whether its row's schedule goes too."""
        self.urge: Callable[[str], None] = frontier.urge

    @classmethod
    def of(cls, config: Config, frontier: FrontierIO, timer: Timer) -> FreshSources:
        """As ``[frontier]`` says (``fresh_sources``, ``fresh_probe``)."""
        settings = config.frontier
        policy = FreshPolicy(probe=settings.fresh_probe)
        return cls(
            policy,
            frontier,
            timer,
            learn=settings.fresh_sources,
            flush=config.crawl.flush_interval,
            hand_interval=settings.freshlane_interval,
        )

    async def start(self, hand: list[NewUrl]) -> None:
        """The hand list into the freshlane (it wins over learning), then what earlier runs
        learned."""
        store, now, interval = self.frontier.store, self.timer.now(), self.hand_interval
        if hand:
            await self.frontier.call(store.set_freshlane, hand, interval, now)
        canonicals = [url.canonical for url in hand]
        await self.frontier.call(store.set_hand_sources, canonicals, interval, now)
        for source in await self.frontier.call(store.fresh_sources):
            self.sources[source.url_id] = source

    # -- visits ----------------------------------------------------------------------------

    def page(self, rt: SiteLane, item: LeasedUrl, page: ParsedPage, new_links: int) -> None:
        fingerprint = page.fingerprint
        if fingerprint is None:  # a feed: what it lists is what changes
            fingerprint = _digest(sorted(link.canonical for link in page.links))
        self._visit(rt, item, fingerprint, new_links, _evidence(item, page))

    def unchanged(self, rt: SiteLane, item: LeasedUrl) -> None:
        """A conditional request answered 304: a visit that found nothing new."""
        if item.id in self.sources:
            self._visit(rt, item, None, 0, None)

    def sitemap(self, rt: SiteLane, item: LeasedUrl, sitemap: ParsedSitemap, new: int) -> None:
        newest = max(sitemap.lastmod.values(), default=None)
        evidence = None
        if newest is not None:
            age = self.timer.now() - newest
            if age <= RECENT_LASTMOD:
                evidence = f"sitemap lastmod {max(0.0, age):.0f} s old"
        if item.id not in self.sources and (evidence is None or not self.learn):
            return  # no digest of thousands of entries on the loop for a sitemap not watched
        lastmod = sitemap.lastmod
        entries = sorted(
            (link.canonical, lastmod.get(link.canonical, 0.0)) for link in sitemap.links
        )
        self._visit(rt, item, _digest(entries), new, evidence)

    def _visit(
        self,
        rt: SiteLane,
        item: LeasedUrl,
        fingerprint: str | None,
        new_links: int,
        evidence: str | None,
    ) -> None:
        source = self.sources.get(item.id)
        if source is None and (evidence is None or not self.learn):
            return  # most pages: nothing to watch, nothing to remember
        now = self.timer.now()
        first = item.id not in self._seen
        self._seen.add(item.id)
        if source is None:
            assert evidence is not None  # the return above
            source = candidate(
                item.id, item.fetch_url, item.site, evidence, now, fingerprint, self.policy
            )
        elif source.state is FreshState.HAND:
            source = after_visit(source, fingerprint, new_links, now, self.policy)
        elif first:
            # Which links are new is known per run: no judgement on a run's first visit.
            source = replace(source, last_visit=now, fingerprint=fingerprint or source.fingerprint)
            if not source.watched:
                self._keep(source, schedule=False)
                return
        else:
            was_watched = source.watched
            source = after_visit(source, fingerprint, new_links, now, self.policy)
            if not source.watched:
                # Quiet: back to ordinary refresh when it leaves, untouched after that.
                self._keep(source, schedule=was_watched)
                return
        self._keep(source, schedule=True)
        self.timer.call_at(source.next_visit + DUE_MARGIN, self.urge, rt.site)

    def _keep(self, source: FreshSource, *, schedule: bool) -> None:
        self.sources[source.url_id] = source
        earlier = self._unsaved.get(source.url_id)
        self._unsaved[source.url_id] = (source, schedule or (earlier is not None and earlier[1]))

    # -- the store -------------------------------------------------------------------------

    async def run(self) -> None:
        """Write what was learned every ``flush`` seconds until the crawl ends."""
        while True:
            await sleep_until(self.timer, self.timer.now() + self.flush)
            await self.save()

    async def save(self) -> None:
        if not self._unsaved:
            return
        unsaved, self._unsaved = self._unsaved, {}
        sources = [source for source, _ in unsaved.values()]
        scheduled = [source for source, schedule in unsaved.values() if schedule]
        try:
            await self.frontier.call(self.frontier.store.save_fresh, sources, scheduled)
        except FrontierError as exc:  # kept for the next round
            log.warning("fast sources not saved this round: %s", exc)
            for url_id, (source, schedule) in unsaved.items():
                later = self._unsaved.get(url_id)
                if later is None:
                    self._unsaved[url_id] = (source, schedule)
                else:  # a visit since has the newer state; the refused schedule still goes
                    self._unsaved[url_id] = (later[0], later[1] or schedule)


def _digest(entries: list[Any]) -> str:
    return hashlib.md5(repr(entries).encode(), usedforsecurity=False).hexdigest()


def _evidence(item: LeasedUrl, page: ParsedPage) -> str | None:
    """Why a page is a candidate fast source, or None."""
    if page.fields.get("format") == "feed":
        return "feed"
    if item.depth == 0:
        return "home page"
    if item.lane is UrlLane.FRESHLANE and item.fetched_at is not None:
        # Only a refresh of a page users retrieve most, or an operator flagged critical, is
        # due in the freshlane (a fast source's fresh links are never fetched before).
        return "critical or popular"
    return None
