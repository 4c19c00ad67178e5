"""Pages that need a browser: rendered in headless Chromium whose every request is answered
by the crawl's own booked, guarded, archived fetch.

Rules:
- After a page is parsed, ``render.decision`` says whether it is rendered (an operator's
  ``site render`` controls, then ``[render]`` mode, site and URL rules; ``auto`` renders
  what ``content.shell`` calls a shell).
- While one of its pages renders, a site takes no new page: the render's requests are the
  site's next starts (``SiteLane.renders`` go before its queue), each booked on the site's
  and its origin's keys, one in flight, spaced from its real send like a page. The page
  itself gives the crawl's place back (``Launch.detach``): its requests need places.
- The page's own document is answered from the fetch already made: nothing is fetched twice.
- A request is aborted, and counted by reason, when: it is not GET or HEAD (``method``); its
  type is not in ``fetch_types`` (``type``: images, fonts and media by default, the rendered
  page's images reach the media lanes as any page's); its URL is not http(s)
  (``bad-url``); its host is an address the guard refuses (``guard:<reason>``); its host is
  a seed site another worker holds (``not-ours``), or outside the seed and neither a media
  host nor one ``[render] hosts`` names (``third-party``: those go through the media lanes,
  ``render_media``); robots.txt does not allow it (``robots``); the render has sent
  ``max_requests`` (``budget``), or its start would come after the page's time is up
  (``budget``); it is for a media lane while the crawl stops (``stopping``).
- Costs: a script or stylesheet costs an image; any other request costs what the page it
  serves costs, or its own URL's class when that is dearer.
- Scripts and stylesheets are kept across renders (``render_cache``) and asked again with
  their validators when stale; renders that want one being fetched wait for that fetch.
- Every answer is kept like any other (redacted, archived) by the lane that fetched it, a
  site's or a media lane, before the render gets it: also one the render no longer waits for
  (its time ran out, or it ended, while the request was out). The rendered DOM is read in the
  parse pool (decoded, redacted, parsed) and archived as the page's ``conversion`` record.
  Its links, title and fingerprint replace the shell's; the document says how it was made.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any, Protocol

from courtier.content.parse import ParsedPage
from courtier.content.reading import read_page
from courtier.frontier.base import LeasedUrl
from courtier.net.fetch import FetchResult
from courtier.net.guard import Resolution
from courtier.pipeline.answers.fetching import Answer
from courtier.pipeline.events import RequestContext
from courtier.pipeline.keeping.keeper import Keeper
from courtier.pipeline.lanes.media import MediaLanes
from courtier.pipeline.lanes.render_cache import AssetCache
from courtier.pipeline.lanes.render_session import STATIC, RenderSession
from courtier.pipeline.lanes.services import LaneServices, Parse
from courtier.pipeline.lanes.site import RenderFetch, SiteLane
from courtier.pipeline.workers.jobs import parse_guarded
from courtier.politeness.keys import CostModel, RequestClass
from courtier.render.decision import RenderRules, SiteRender
from courtier.render.intercept import Abort, Fulfil, Intercept, RenderResult
from courtier.url import canonical_host

_DOM_HEADERS = ("x-robots-tag", "link")
"""Headers of a page's answer that still speak for its rendered DOM (robots directives, a
canonical)."""


class Renderer(Protocol):
    async def render(
        self,
        url: str,
        intercept: Intercept,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 (the render's own budget)
    ) -> RenderResult: ...


Get = Callable[[SiteLane, str, str, RequestContext, dict[str, str] | None], Awaitable[Answer]]
Feedback = Callable[[SiteLane, Answer], Awaitable[None]]


class Rendering:
    """The render lane's engine side: decides, renders, and runs the renders' requests."""

    def __init__(
        self,
        services: LaneServices,
        *,
        renderer: Renderer | None,
        lanes: dict[str, SiteLane],
        scope: set[str],
        keeper: Keeper,
        parse: Parse,
        costs: CostModel,
        arm: Callable[[SiteLane], None],
        get: Get,
        feedback: Feedback,
        judge_name: Callable[[str], Resolution | None],
    ) -> None:
        config = services.config.render
        self.config = config
        self.rules: RenderRules = config.decisions()
        self.operator: Callable[[str], SiteRender | None] = lambda site: None
        """The operator's render controls of a site (``lanes.controls``)."""
        self.renderer = renderer
        self.timer = services.timer
        self.stats = services.stats
        self.robots = services.robots
        self.token = services.config.fetch.user_agent_token
        self.archive = services.archive
        self.lanes = lanes
        self.scope = scope
        self.keeper = keeper
        self.parse = parse
        self.costs = costs
        self.arm = arm
        self.get = get
        self.feedback = feedback
        self.judge_name = judge_name
        self.cache = AssetCache(config.cache_bytes, config.cache_seconds)
        self.pending: dict[str, asyncio.Future[Fulfil | Abort]] = {}
        """Scripts and stylesheets being fetched for a render: other renders wait for them."""
        self.fetch_types = frozenset(config.fetch_types)
        self.hosts = frozenset(canonical_host(host) for host in config.hosts)
        self.media: MediaLanes | None = None
        """The media lanes, where a render's requests to media hosts go (``wiring``)."""

    async def consider(
        self,
        lane: SiteLane,
        item: LeasedUrl,
        result: FetchResult,
        page: ParsedPage,
        detach: Callable[[], None],
    ) -> tuple[ParsedPage, dict[str, Any] | None]:
        """The page to take links from (the rendered one, or ``page``) and the document's
        ``render`` notes (None: nothing to say, the page was not a candidate)."""
        if "format" in page.fields:  # a PDF or a feed (``content.reading``): no page to render
            return page, None
        decision = self.rules.decide(
            lane.site,
            item.fetch_url,
            page.shell,
            available=self.renderer is not None,
            operator=self.operator(lane.site),
        )
        if decision is None:
            return page, None
        if not decision.render or self.renderer is None:
            self.stats.renders["not-rendered"] += 1
            return page, {"decision": decision.reason, "rendered": False}
        detach()
        lane.rendering += 1
        session = RenderSession(self, lane, item, result, decision.reason)
        try:
            outcome = await self.renderer.render(
                item.fetch_url, session, timeout=self.config.page_timeout
            )
        finally:
            lane.rendering -= 1
            session.close()
            self.arm(lane)
        notes = session.notes(decision.reason, outcome)
        if outcome.html is None:
            self.stats.renders[outcome.error or "failed"] += 1
            return page, notes
        rendered, error = await self._read(lane, item, result, outcome.html)
        if rendered is None:
            self.stats.renders[error or "parse-error"] += 1
            notes["error"] = error
            return page, notes
        self.stats.renders["rendered"] += 1
        return rendered, notes

    async def _read(
        self, lane: SiteLane, item: LeasedUrl, result: FetchResult, html: str
    ) -> tuple[ParsedPage | None, str | None]:
        """The rendered DOM read like any fetched page (decoded, redacted, parsed in the
        pool), and archived as the page's conversion record."""
        dom = FetchResult(
            item.fetch_url,
            200,
            "text/html; charset=utf-8",
            html.encode("utf-8", "surrogatepass"),
            started_at=time.time(),
            headers=tuple((k, v) for k, v in result.headers if k.lower() in _DOM_HEADERS),
        )
        context = self.keeper.context(dom, lane.site)
        page, error = await parse_guarded(self.parse, self.stats, read_page, dom, context)
        if page is None:
            return None, error
        page.shell = None
        capture = self.keeper.capture(dom, None, None)
        if capture is not None and self.archive is not None:
            if capture.raw or page.payload is None:  # raw: the DOM as the browser gave it
                capture = replace(capture, payload=dom.body, rendered=True)
            else:
                payload, redactions = page.payload, page.redactions
                capture = replace(capture, payload=payload, redactions=redactions, rendered=True)
            await self.archive.write(capture, self.stats, self.keeper.encode)
        page.payload = None
        return page, None

    def cost_of(self, kind: str, target: str, page_target: str) -> float:
        if kind in STATIC:
            return float(self.costs.costs[RequestClass.IMAGE])
        return max(self.costs.cost_of_target(page_target), self.costs.cost_of_target(target))

    async def run(
        self,
        lane: SiteLane,
        work: RenderFetch,
        context: RequestContext,
        answered: Callable[[], None],
    ) -> None:
        """One request of a render, at its start: fetched, learnt from, handed back."""
        if work.answer.done():  # the render gave up on it meanwhile: nothing is sent
            answered()
            return
        answer = await self.get(lane, work.url, work.host, context, work.headers or None)
        await self.feedback(lane, answer)
        answered()
        await work.deliver(answer)


def take_render(lane: SiteLane) -> RenderFetch | None:
    """The site's next render request still wanted (withdrawn ones are dropped)."""
    while lane.renders:
        work = lane.renders.popleft()
        if not work.answer.done():
            return work
    return None
