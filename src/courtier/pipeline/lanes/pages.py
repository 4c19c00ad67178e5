"""Site lanes: how a seed site chooses its next request, what it is booked on, how it runs.

Rules:
- A site books nothing before its origin is known (``origins_live``), and fetches nothing
  before its robots.txt is in: robots.txt is its first request, booked like any other.
  An unreachable robots.txt (429, 5xx, no answer) stops the site until it is asked again.
  Next URL: ``next_url`` (the crawl's split); URLs robots.txt refuses cost no request.
- Keys: the site (start-to-start, its own interval: Crawl-delay, backoff and latency on top
  of ``[limits.site]``, one request per booking whatever it costs) and its origin (cost
  weighted, slowed by the origin's latency feedback); in a fleet, for a few seconds after
  its origin changed, its old origin too (``SiteLane.moved``).
- Spacing is anchored on the moment a request's headers go out, so a late start never lets
  the next one come early. A site asking for a Crawl-delay longer than
  ``robots.max_crawl_delay`` is suspended for the run with that reason, not frozen.
- One owner, one clock: ``www.example.org`` books on ``site:example.org`` when both are in
  the seed (``scope.site_owner``), unless inference places them on two origins
  (``site.booked_site_key``); a seed's redirect into its registrable domain adopts the target.
- A refresh of a URL with validators is conditional (If-None-Match, If-Modified-Since) and
  booked at the image cost: a 304 is unchanged and cheap, and a changed page is charged the
  difference after the answer, as any response dearer than its URL looked.
- What is kept of an answer is redacted and archived (``keeping.Keeper``) before its document.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from courtier.content.parse import ParsedPage
from courtier.content.sitemap_links import parse_sitemap_links
from courtier.frontier.base import LeasedUrl, UrlStatus
from courtier.net.fetch import FetchResult
from courtier.net.guard import Resolution
from courtier.pipeline.answers.fetching import Answer
from courtier.pipeline.answers.verdict import Verdict, decide, document
from courtier.pipeline.events import RequestContext
from courtier.pipeline.feed.discovery import Discovery
from courtier.pipeline.feed.frontier_io import FrontierIO
from courtier.pipeline.keeping.archive import conditional_headers
from courtier.pipeline.keeping.keeper import Keeper, Kept, outcome_of
from courtier.pipeline.lanes.crawl_split import CrawlSplit
from courtier.pipeline.lanes.next_url import next_url
from courtier.pipeline.lanes.rendering import Renderer, Rendering, take_render
from courtier.pipeline.lanes.robots_hops import RobotsHop
from courtier.pipeline.lanes.seeding import SeedSites
from courtier.pipeline.lanes.services import (
    LaneKindBase,
    LaneServices,
    Parse,
    RobotsOutcome,
    context_of,
)
from courtier.pipeline.lanes.site import (
    OriginStatus,
    RenderFetch,
    RobotsWork,
    SiteLane,
    booked_site_key,
    target_of,
)
from courtier.pipeline.scheduling.lanes import Launch, Wait
from courtier.pipeline.workers.jobs import parse_guarded
from courtier.politeness.gcra import KeyParams, Limit
from courtier.politeness.keys import CostModel, RequestClass
from courtier.politeness.robots import RobotsRules
from courtier.sinks.warc import EncodedCapture

log = logging.getLogger(__name__)

PageWork = LeasedUrl | RobotsWork | RenderFetch | RobotsHop

PROVISIONAL_LEAD = 1.0
"""Seconds ahead a site may book on an origin not yet told from a CDN edge (its first answers
still out): booked 10 s ahead, strangers split off the edge later still waited for slots of
a key they no longer share; unbooked, they book on their own origins the moment they move."""


class SiteLanes(LaneKindBase):
    """The ``LaneKind`` of seed sites."""

    def __init__(
        self,
        services: LaneServices,
        *,
        frontier: FrontierIO,
        seed: SeedSites,
        discovery: Discovery,
        parse: Parse,
        arm: Callable[[SiteLane], None],
        lookup_origin: Callable[[SiteLane], None],
        observe_answer: Callable[[SiteLane, Answer], None],
        renderer: Renderer | None = None,
        judge_name: Callable[[str], Resolution | None] = lambda _host: None,
    ) -> None:
        super().__init__(services)
        self.lead = self.config.politeness.max_lead
        self.frontier = frontier
        self.seed = seed
        self.discovery = discovery
        self.parse = parse
        self.arm = arm
        self.robots_hops.serve(seed.lanes, arm, self._get, self._feedback, lambda: self.stopping)
        self.lookup_origin = lookup_origin
        self.observe_answer = observe_answer
        self.hungry: Callable[[], None] = lambda: None
        """Called when a site with nothing to fetch found new URLs of its own (the engine
        makes it ``Feeder.hurry``)."""
        self.stopping = False
        config = self.config
        self.costs: CostModel = config.costs.model()
        self.split = CrawlSplit(config.frontier.split_policy(), seed.lanes, self.stats.split)
        self.keeper = Keeper(config, self.stats, services.archive, parse)
        self.rendering = Rendering(
            services,
            renderer=renderer,
            lanes=seed.lanes,
            scope=seed.scope,
            keeper=self.keeper,
            parse=lambda *args: self.parse(*args),  # the lanes' own, however replaced
            costs=self.costs,
            arm=arm,
            get=self._get,
            feedback=self._feedback,
            judge_name=judge_name,
        )

    # -- choosing -----------------------------------------------------------------------

    def max_lead(self, lane: SiteLane) -> float:
        return min(self.lead, PROVISIONAL_LEAD) if lane.provisional else self.lead

    def max_in_flight(self, lane: SiteLane) -> int:
        return self.config.politeness.max_in_flight_per_site

    def choose(self, lane: SiteLane, now: float) -> PageWork | Wait | None:
        if lane.suspended_reason is not None:
            return None
        if lane.origin_status is not OriginStatus.RESOLVED:
            if lane.backoff.paused_until > now:
                return Wait(lane.backoff.paused_until)
            self.lookup_origin(lane)
            return Wait()
        first = self.robots_hops.take(lane) or take_render(lane)
        if first is not None or lane.rendering:
            return first  # another site's robots.txt hop, a render's requests: no new page
        rules = self.rules_for(lane.site, lane.scheme, now, lambda: self.arm(lane))
        if not isinstance(rules, RobotsRules):
            return rules  # fetch robots.txt first, or wait for it
        while lane.queue:
            item = next_url(lane, now, self.split)
            if rules.allows(item.fetch_url, self.token):
                return item
            self.stats.refused["robots"] += 1
            self.frontier.outcome(item.id, UrlStatus.REFUSED, None)
        if not lane.store_empty:
            self.request_refill(lane)
        return None

    def look_again(self, lane: SiteLane) -> None:
        """Ask the store again for the site's due work (refresh falls due with time)."""
        if not self.stopping and not lane.queue:
            lane.store_empty = False
            self.request_refill(lane)

    def request_refill(self, lane: SiteLane) -> None:
        if not lane.refill_requested:
            lane.refill_requested = True
            self.frontier.want(lane.site)

    def not_before(self, lane: SiteLane, work: PageWork, now: float) -> float:
        return max(lane.next_start, lane.backoff.paused_until)

    def booking(self, lane: SiteLane, work: PageWork) -> tuple[tuple[Limit, ...], float]:
        if isinstance(work, RenderFetch):
            cost = work.cost
        else:
            target = "/robots.txt" if isinstance(work, RobotsWork) else target_of(work.fetch_url)
            cost = self.costs.cost_of_target(target)
        if isinstance(work, LeasedUrl) and work.conditional:
            cost = min(cost, float(self.costs.costs[RequestClass.IMAGE]))  # likely a 304
        site = self.config.limits.site
        limits: tuple[Limit, ...] = (
            Limit(
                booked_site_key(lane, self.discovery.sites, self.discovery.scope),
                KeyParams(lane.interval, site.burst, site.slot_width, weighted=False),
            ),
        )
        origin = lane.booked_origin
        if origin is not None:
            limits += (self.feedback.origin_limit(origin),)
        if (old := lane.old_origin(self.timer.now())) is not None:
            limits += (self.feedback.origin_limit(old),)
        return limits, cost

    def started(self, lane: SiteLane, work: PageWork, now: float) -> None:
        # Reserve the spacing now; the real send (after DNS) moves it later if needed.
        lane.hold_start(now + lane.interval)
        lane.emit = lane.emit.record(1, now)

    def run(self, lane: SiteLane, work: PageWork, launch: Launch) -> Any:
        origin = lane.booked_origin
        if isinstance(work, RobotsWork):
            return self._robots(lane, work, launch)
        if isinstance(work, RobotsHop):
            return self.robots_hops.run(lane, work, launch, origin)
        if isinstance(work, RenderFetch):
            context = context_of(
                lane.site,
                "render",
                launch,
                origin=origin,
                lane=work.kind,
                render_page=work.page,
                render_decision=work.decision,
            )
            return self.rendering.run(lane, work, context, launch.answered)
        kind = "sitemap" if work.fetch_url in self.discovery.sitemaps else "page"
        context = context_of(
            lane.site,
            kind,
            launch,
            origin=origin,
            attempt=lane.attempts[work.id],
            redirects=work.redirects,
            lane=work.lane.name.lower(),
        )
        return self._page(lane, work, context, launch)

    # -- running ------------------------------------------------------------------------

    async def _get(
        self,
        lane: SiteLane,
        url: str,
        host: str,
        context: RequestContext,
        headers: dict[str, str] | None = None,
    ) -> Answer:
        answer = await self.fetch(
            url, host, context, on_send=lambda: self._sending(lane), headers=headers
        )
        lane.refusal = answer.refusal
        result = answer.result
        if result is not None and result.sent_at is not None and host == lane.host:
            # The server sees the request when its headers arrive: space from that moment.
            lane.last_sent = result.sent_at
            lane.hold_start(result.sent_at + lane.interval)
        return answer

    def _sending(self, lane: SiteLane) -> None:
        lane.hold_start(self.timer.now() + lane.interval)

    async def _feedback(self, lane: SiteLane, answer: Answer, extra_cost: float = 0.0) -> None:
        effects = await self.answered(
            lane, answer, origin=lane.booked_origin, extra_cost=extra_cost
        )
        if effects is not None and "slowdown-lane" in effects.events:
            # The slower spacing applies to the very next request, counted from this one.
            lane.hold_start(lane.last_sent + lane.interval)

    async def _robots(self, lane: SiteLane, work: RobotsWork, launch: Launch) -> None:
        async def get(fetch_url: str, host: str, why: RequestContext) -> Answer:
            answer = await self._get(lane, fetch_url, host, why)
            if host == lane.host:  # the site's first answer: evidence of who serves it
                self.observe_answer(lane, answer)
            return answer

        outcome = await self.fetch_rules(lane, work, get, launch, origin=lane.booked_origin)
        if outcome is not None:
            self.adopt(lane, outcome)

    def adopt(self, lane: SiteLane, outcome: RobotsOutcome) -> None:
        """The site's robots.txt rules are in (just fetched, or saved by an earlier run)."""
        if self.config.frontier.sitemaps:
            self.discovery.queue_sitemaps(lane, outcome.rules.sitemaps())
        lane.suspended_reason = outcome.refusal
        lane.crawl_delay = outcome.crawl_delay
        # The robots.txt request itself counts: the first page waits a full Crawl-delay.
        lane.hold_start(lane.last_sent + lane.interval)
        self.rules_ready(lane.site, outcome)

    async def _page(
        self,
        lane: SiteLane,
        item: LeasedUrl,
        context: RequestContext,
        launch: Launch,
    ) -> None:
        sent = conditional_headers(item)
        answer = await self._get(lane, item.fetch_url, lane.host, context, sent)
        result = answer.result
        extra = 0.0
        if result is not None and result.content_type and result.status != 304:
            actual = self.costs.cost_of_target(target_of(item.fetch_url), result.content_type)
            extra = max(0.0, actual - context.cost)
        await self._feedback(lane, answer, extra)
        verdict = decide(
            answer,
            attempts=lane.attempts[item.id],
            suspended=lane.backoff.suspended,
            sitemap=item.fetch_url in self.discovery.sitemaps,
            conditional=bool(sent),
        )
        if verdict is Verdict.REFUSED:
            self.frontier.outcome(item.id, UrlStatus.REFUSED, None)
            return
        if verdict is Verdict.RETRY:
            lane.attempts[item.id] += 1
            lane.queue.appendleft(item)
            return
        launch.answered()  # the site is done with us; what follows is our own work
        lane.attempts.pop(item.id, None)
        assert result is not None
        notes: dict[str, Any] = {"depth": item.depth}
        if verdict in (Verdict.FAILED, Verdict.NOT_MODIFIED):
            kept = await self.keeper.keep(result, item.site, sent=sent, item=item)
            unchanged = verdict is Verdict.NOT_MODIFIED
            status = UrlStatus.DONE if unchanged else UrlStatus.FAILED
            self.frontier.record(
                outcome_of(
                    item, result, status, None, kept, at=self.timer.now(), not_modified=unchanged
                )
            )
            if unchanged:
                self.stats.not_modified += 1
                self.discovery.unchanged(lane, item)
                notes["unchanged"] = True
            self._write(result, item, None, kept, notes)
            return
        page, encoded, parse_error, render = await self._read(
            lane, item, verdict, answer, sent, launch
        )
        kept = await self.keeper.keep(
            result, item.site, page=page, sent=sent, item=item, encoded=encoded
        )
        fingerprint = page.fingerprint if page is not None else await kept.fingerprint(result)
        self.frontier.record(
            outcome_of(item, result, UrlStatus.DONE, fingerprint, kept, at=self.timer.now())
        )
        if parse_error:
            notes["parse_error"] = parse_error
        if render is not None:
            notes["render"] = render
        self._write(result, item, page, kept, notes)

    def _write(
        self,
        result: FetchResult,
        item: LeasedUrl,
        page: ParsedPage | None,
        kept: Kept,
        notes: dict[str, Any],
    ) -> None:
        record = document(
            result, url=item.fetch_url, site=item.site, page=page, **notes, **kept.fields()
        )
        self.write_document(record)

    async def _read(
        self,
        lane: SiteLane,
        item: LeasedUrl,
        verdict: Verdict,
        answer: Answer,
        sent: dict[str, str],
        launch: Launch,
    ) -> tuple[ParsedPage | None, EncodedCapture | None, str | None, dict[str, Any] | None]:
        """(the parsed page, its WARC capture if the worker made it, why parsing failed,
        how it was rendered) after following what the answer says."""
        result = answer.result
        assert result is not None
        if verdict is Verdict.REDIRECT:
            assert answer.redirect is not None
            self.discovery.redirect(lane, item, answer.redirect)
        elif verdict is Verdict.PARSE_SITEMAP:
            sitemap, error = await parse_guarded(
                self.parse, self.stats, parse_sitemap_links, result
            )
            if sitemap is not None:
                self.discovery.sitemap(lane, item.fetch_url, sitemap, item)
                await self.frontier.refresh_lastmod(sitemap.lastmod, self.timer.now())
            return None, None, error, None
        elif verdict is Verdict.PARSE_PAGE:
            page, encoded, error = await self.keeper.read(self.parse, result, item.site, sent, item)
            render = None
            if page is not None:
                self.stats.encodings[page.encoding] += 1
                page, render = await self.rendering.consider(
                    lane, item, result, page, launch.detach
                )
                found = lane.discovered
                self.discovery.page(lane, item, page)
                if lane.discovered > found and not lane.queue and lane.store_empty:
                    self.hungry()  # the site waits for what this page found: write it soon
                if target_of(item.fetch_url) == "/":
                    self.observe_answer(lane, answer)
            return page, encoded, error, render
        return None, None, None, None
