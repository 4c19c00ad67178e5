"""One page's render as the crawl answers it: every request the browser makes, fetched
through the site's lane, taken from the cache, or aborted with its reason
(``rendering`` has the rules)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from typing import TYPE_CHECKING, Any

from courtier.frontier.base import LeasedUrl
from courtier.net.fetch import FetchResult
from courtier.net.spool import body_bytes
from courtier.pipeline.answers.fetching import Answer
from courtier.pipeline.lanes.render_cache import CachedAsset
from courtier.pipeline.lanes.site import RenderFetch, SiteLane, target_of
from courtier.render.intercept import Abort, BrowserRequest, Fulfil, RenderResult
from courtier.sinks.redact import redact_url
from courtier.url import Url, UrlError, parse_url

if TYPE_CHECKING:
    from courtier.pipeline.lanes.rendering import Rendering

log = logging.getLogger(__name__)

STATIC = frozenset({"script", "stylesheet"})
"""Request types kept across renders and charged as static files."""
_PASSED_ON = ("accept", "accept-language", "content-type", "x-requested-with")
"""Request headers of the browser's the fetch sends on."""
LOG_ENTRIES = 100
"""Requests of one render listed in its document (all are counted)."""


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
        if request.navigation and self._is_the_page(request.url):
            self.counts["served"] += 1
            body = self.shell.body
            if self.shell.spooled is not None:
                body = await asyncio.to_thread(body_bytes, self.shell.spooled)
            return Fulfil(self.shell.status or 200, self.shell.headers, body)
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
        if request.resource_type not in STATIC:
            return await self._get(request, lane, url, None)
        # One fetch of a script at a time for all renders: the others wait for its answer.
        pending = rendering.pending.get(url.fetch_url)
        if pending is not None:
            shared = await asyncio.shield(pending)
            if isinstance(shared, Fulfil):
                self.counts["cached"] += 1
            return shared
        cached = rendering.cache.get(url.fetch_url)
        if cached is not None and cached.fresh_until > rendering.timer.now():
            self.counts["cached"] += 1
            return Fulfil(cached.status, cached.headers, cached.body)
        future: asyncio.Future[Fulfil | Abort] = asyncio.get_running_loop().create_future()
        rendering.pending[url.fetch_url] = future
        answer: Fulfil | Abort = Abort("budget")
        try:
            answer = await self._get(request, lane, url, cached)
        finally:
            del rendering.pending[url.fetch_url]
            future.set_result(answer)
        return answer

    async def _get(
        self, request: BrowserRequest, lane: SiteLane, url: Url, cached: CachedAsset | None
    ) -> Fulfil | Abort:
        """``url`` fetched through ``lane`` (with ``cached``'s validators when there is one)."""
        rendering = self.rendering
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
        if request.resource_type in STATIC and result.status is not None:
            rendering.cache.store(url.fetch_url, result.status, result.headers, body, now)
        self.counts["fetched"] += 1
        return Fulfil(result.status or 502, result.headers, body)

    def _is_the_page(self, url: str) -> bool:
        """Is ``url`` the page itself, however the browser spells it?"""
        if url in (self.item.fetch_url, self.shell.url):
            return True
        try:
            return parse_url(url).fetch_url == self.item.fetch_url
        except UrlError:
            return False

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
