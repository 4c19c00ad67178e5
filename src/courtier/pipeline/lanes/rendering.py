"""Pages that need a browser: rendered in headless Chromium whose every request is answered
by the crawl's own booked, guarded, archived fetch.

Rules:
- After a page is parsed, ``render.decision`` says whether it is rendered (``[render]``
  mode, site and URL rules; ``auto`` renders what ``content.shell`` calls a shell).
- While one of its pages renders, a site takes no new page: the render's requests are the
  site's next starts (``SiteLane.renders`` go before its queue), each booked on the site's
  and its origin's keys, one in flight, spaced from its real send like a page. The page
  itself gives the crawl's place back (``Launch.detach``): its requests need places.
- The page's own document is answered from the fetch already made: nothing is fetched twice.
- A request is aborted, and counted by reason, when: it is not GET or HEAD (``method``); its
  type is not in ``fetch_types`` (``type``: images, fonts and media by default, the rendered
  page's images reach the media lanes as any page's); its URL is not http(s)
  (``bad-url``); its host is an address the guard refuses (``guard:<reason>``); its host is
  not a seed site of this crawl (``third-party``) or one another worker holds (``not-ours``);
  robots.txt does not allow it (``robots``); the render has sent ``max_requests``
  (``budget``), or its start would come after the page's time is up (``budget``).
- Costs: a script or stylesheet costs an image; any other request costs what the page it
  serves costs, or its own URL's class when that is dearer.
- Scripts and stylesheets are kept across renders (``render_cache``) and asked again with
  their validators when stale.
- Every answer is kept like any other (redacted, archived); the rendered DOM is read in the
  parse pool (decoded, redacted, parsed) and archived as the page's ``conversion`` record.
  Its links, title and fingerprint replace the shell's; the document says how it was made.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any, Protocol

from courtier.content.parse import ParsedPage
from courtier.content.reading import read_page
from courtier.frontier.base import LeasedUrl
from courtier.net.fetch import FetchResult
from courtier.net.guard import Resolution
from courtier.net.spool import body_bytes
from courtier.pipeline.answers.fetching import Answer
from courtier.pipeline.events import RequestContext
from courtier.pipeline.keeping.keeper import Keeper
from courtier.pipeline.lanes.render_cache import AssetCache
from courtier.pipeline.lanes.services import LaneServices, Parse
from courtier.pipeline.lanes.site import RenderFetch, SiteLane, target_of
from courtier.pipeline.workers.jobs import parse_guarded
from courtier.politeness.keys import CostModel, RequestClass
from courtier.render.decision import RenderRules
from courtier.render.intercept import Abort, BrowserRequest, Fulfil, Intercept, RenderResult
from courtier.sinks.redact import redact_url
from courtier.url import UrlError, parse_url

log = logging.getLogger(__name__)

STATIC = frozenset({"script", "stylesheet"})
"""Request types kept across renders and charged as static files."""
_NOT_PASSED = frozenset(
    {"content-encoding", "content-length", "transfer-encoding", "connection", "keep-alive"}
)
"""Response headers that describe the wire, not the body the browser is given (decoded)."""
_PASSED_ON = ("accept", "accept-language", "content-type", "x-requested-with")
"""Request headers of the browser's the fetch sends on."""
LOG_ENTRIES = 100
"""Requests of one render listed in its document (all are counted)."""


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
        self.fetch_types = frozenset(config.fetch_types)

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
        decision = self.rules.decide(
            lane.site, item.fetch_url, page.shell, available=self.renderer is not None
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
            headers=tuple((k, v) for k, v in result.headers if k.lower() == "x-robots-tag"),
        )
        context = self.keeper.context(dom, lane.site)
        page, error = await parse_guarded(self.parse, self.stats, read_page, dom, context)
        if page is None:
            return None, error
        page.shell = None
        capture = self.keeper.capture(dom, None, None)
        if capture is not None and self.archive is not None:
            payload = page.payload if page.payload is not None else dom.body
            capture = replace(capture, payload=payload, redactions=page.redactions, rendered=True)
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
        if not work.answer.done():
            work.answer.set_result(answer)


def take_render(lane: SiteLane) -> RenderFetch | None:
    """The site's next render request still wanted (withdrawn ones are dropped)."""
    while lane.renders:
        work = lane.renders.popleft()
        if not work.answer.done():
            return work
    return None


class RenderSession:
    """The intercept of one page's render (``render.intercept``): every request the page
    makes is answered here, or aborted with its reason."""

    def __init__(
        self,
        rendering: Rendering,
        lane: SiteLane,
        item: LeasedUrl,
        result: FetchResult,
        decision: str,
    ) -> None:
        self.decision = decision
        self.rendering = rendering
        self.lane = lane
        self.item = item
        self.shell = result
        self.page_target = target_of(item.fetch_url)
        self.deadline = time.monotonic() + rendering.config.page_timeout
        self.counts: Counter[str] = Counter()
        self.sent = 0
        self.entries: list[dict[str, Any]] = []
        self.queued: list[tuple[SiteLane, RenderFetch]] = []

    async def __call__(self, request: BrowserRequest) -> Fulfil | Abort:
        try:
            answer = await self._answer(request)
        except asyncio.CancelledError:
            raise
        except Exception:  # a bug here must cost the request, not the render or the crawl
            log.exception("render request failed: %s", request.url)
            answer = Abort("intercept-error")
        self._note(request, answer)
        return answer

    async def _answer(self, request: BrowserRequest) -> Fulfil | Abort:
        if request.navigation and request.url in (self.item.fetch_url, self.shell.url):
            self.counts["served"] += 1
            body = self.shell.body
            if self.shell.spooled is not None:
                body = await asyncio.to_thread(body_bytes, self.shell.spooled)
            return Fulfil(self.shell.status or 200, browser_headers(self.shell), body)
        if request.method not in ("GET", "HEAD"):
            return Abort("method")
        if request.resource_type not in self.rendering.fetch_types:
            return Abort("type")
        try:
            url = parse_url(request.url)
        except UrlError:
            return Abort("bad-url")
        if url.scheme not in ("http", "https"):
            return Abort("bad-url")
        lane = self._lane_of(url.site, url.host)
        if isinstance(lane, Abort):
            return lane
        rendering = self.rendering
        rules = rendering.robots.rules(lane.site, rendering.timer.now())
        if rules is None or not rules.allows(url.fetch_url, rendering.token):
            return Abort("robots")
        static = request.resource_type in STATIC
        cached = rendering.cache.get(url.fetch_url) if static else None
        if cached is not None and cached.fresh_until > rendering.timer.now():
            self.counts["cached"] += 1
            return Fulfil(cached.status, cached.headers, cached.body)
        if self.sent >= rendering.config.max_requests:
            return Abort("budget")
        headers = {k: v for k, v in request.headers.items() if k.lower() in _PASSED_ON}
        if cached is not None:
            headers.update(cached.validators())
        cost = rendering.cost_of(request.resource_type, url.target, self.page_target)
        answer = await self._fetch(
            lane, url.fetch_url, url.host, request.resource_type, cost, headers
        )
        if answer is None:
            return Abort("budget")
        result = answer.result
        if result is None:
            return Abort(f"guard:{answer.refusal}")
        now = rendering.timer.now()
        await rendering.keeper.keep(result, lane.site, sent=headers if cached else None)
        if cached is not None and result.status == 304:
            rendering.cache.revalidated(url.fetch_url, result.headers, now)
            self.counts["revalidated"] += 1
            return Fulfil(cached.status, cached.headers, cached.body)
        body = result.body
        if result.spooled is not None:
            body = await asyncio.to_thread(body_bytes, result.spooled)
        if static and result.status is not None:
            rendering.cache.store(url.fetch_url, result.status, browser_headers(result), body, now)
        self.counts["fetched"] += 1
        return Fulfil(result.status or 502, browser_headers(result), body)

    def _lane_of(self, site: str, host: str) -> SiteLane | Abort:
        lanes = self.rendering.lanes
        lane = lanes.get(site)
        if lane is not None:
            return lane
        if site in self.rendering.scope:
            return Abort("not-ours")
        verdict = self.rendering.judge_name(host)
        if verdict is not None and not verdict.allowed:
            return Abort(f"guard:{verdict.reason}")
        return Abort("third-party")

    async def _fetch(
        self, lane: SiteLane, url: str, host: str, kind: str, cost: float, headers: dict[str, str]
    ) -> Answer | None:
        """Queue the request on its site and wait for its answer; None: the page's time ran
        out before it started (it is withdrawn)."""
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            return None
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        work = RenderFetch(
            url, host, kind, cost, headers, future, self.item.fetch_url, self.decision
        )
        lane.renders.append(work)
        self.queued.append((lane, work))
        self.sent += 1
        self.rendering.arm(lane)
        try:
            return await asyncio.wait_for(asyncio.shield(future), remaining)
        except TimeoutError:
            return None
        finally:
            if not future.done():
                future.cancel()

    def close(self) -> None:
        """The render ended: whatever it still waits for is withdrawn."""
        for lane, work in self.queued:
            if not work.answer.done():
                work.answer.cancel()
            if work in lane.renders:
                lane.renders.remove(work)
        self.queued.clear()

    def _note(self, request: BrowserRequest, answer: Fulfil | Abort) -> None:
        if isinstance(answer, Abort):
            outcome = f"aborted:{answer.reason}"
            self.counts[outcome] += 1
            self.rendering.stats.render_requests[outcome] += 1
        else:
            outcome = str(answer.status)
        if len(self.entries) < LOG_ENTRIES:
            self.entries.append(
                {
                    "url": redact_url(request.url).text,
                    "type": request.resource_type,
                    "outcome": outcome,
                }
            )

    def notes(self, reason: str, outcome: RenderResult) -> dict[str, Any]:
        """The document's ``render`` field."""
        counts = self.counts
        aborted = {
            k.removeprefix("aborted:"): n for k, n in counts.items() if k.startswith("aborted:")
        }
        for name in ("fetched", "cached", "revalidated", "served"):
            self.rendering.stats.render_requests[name] += counts[name]
        notes: dict[str, Any] = {
            "decision": reason,
            "rendered": outcome.html is not None,
            "ms": round(outcome.elapsed * 1000, 1),
            "requests": outcome.requests,
            "fetched": counts["fetched"],
            "cached": counts["cached"] + counts["revalidated"],
            "aborted": dict(sorted(aborted.items())),
            "log": self.entries,
        }
        if outcome.error is not None:
            notes["error"] = outcome.error
        return notes


def browser_headers(result: FetchResult) -> tuple[tuple[str, str], ...]:
    """The response headers the browser is given (the body it gets is decoded)."""
    return tuple((k, v) for k, v in result.headers if k.lower() not in _NOT_PASSED)
