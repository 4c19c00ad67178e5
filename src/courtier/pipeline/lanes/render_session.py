"""One page's render as the crawl answers it: every request the browser makes, fetched
through the site's lane (or a media lane, ``render_media``), taken from the cache, or
aborted with its reason (``rendering`` has the rules)."""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from courtier.frontier.base import LeasedUrl
from courtier.net.fetch import FetchResult
from courtier.net.spool import body_bytes
from courtier.pipeline.answers.fetching import Answer
from courtier.pipeline.lanes.media_places import Placement
from courtier.pipeline.lanes.render_cache import CachedAsset
from courtier.pipeline.lanes.render_media import ROBOTS, ask_media
from courtier.pipeline.lanes.site import RenderFetch, SiteLane, target_of
from courtier.politeness.keys import KeyType, LimitKey, MediaSource
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


@dataclass(frozen=True, slots=True)
class Outside:
    """A host outside the seed: fetched through the media lanes if it is a media host or
    one ``[render] hosts`` names (``placement``: its own site key), else aborted."""

    placement: Placement | None


Where = SiteLane | Outside


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
        self.queued: list[tuple[SiteLane | None, RenderFetch]] = []

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
        where = self._lane_of(url)
        if isinstance(where, Abort):
            return where
        rendering = self.rendering
        if isinstance(where, SiteLane):  # (a media lane asks its host's robots.txt itself)
            rules = rendering.robots.rules(where.site, rendering.timer.now())
            if rules is None or not rules.allows(url.fetch_url, rendering.token):
                return Abort("robots")
        if request.resource_type not in STATIC:
            return await self._get(request, where, url, None)
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
            answer = await self._get(request, where, url, cached)
        finally:
            del rendering.pending[url.fetch_url]
            future.set_result(answer)
        return answer

    async def _get(
        self, request: BrowserRequest, where: Where, url: Url, cached: CachedAsset | None
    ) -> Fulfil | Abort:
        """``url`` fetched through ``where`` (with ``cached``'s validators if there is one)."""
        rendering = self.rendering
        if self.sent >= rendering.config.max_requests:
            return Abort("budget")
        headers = {k: v for k, v in request.headers.items() if k.lower() in _PASSED_ON}
        if cached is not None:
            headers.update(cached.validators())
        cost = rendering.cost_of(request.resource_type, url.target, self.page_target)
        answer = await self._fetch(where, url, request.resource_type, cost, headers, cached)
        if isinstance(answer, Abort):
            return answer
        result = answer.result  # (kept by the lane that fetched it: ``RenderFetch.deliver``)
        if result is None:
            return Abort(ROBOTS if answer.refusal == ROBOTS else f"guard:{answer.refusal}")
        now = rendering.timer.now()
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

    def _lane_of(self, url: Url) -> Where | Abort:
        rendering = self.rendering
        lane = rendering.lanes.get(url.site)
        if lane is not None:
            return lane
        if url.site in rendering.scope:
            return Abort("not-ours")
        verdict = rendering.judge_name(url.host)
        if verdict is not None and not verdict.allowed:
            return Abort(f"guard:{verdict.reason}")
        if rendering.media is None:
            return Abort("third-party")
        if url.host in rendering.hosts:
            key = LimitKey(KeyType.SITE, url.site)
            return Outside(Placement(MediaSource.HOST, (key,), why="[render] hosts"))
        return Outside(None)

    async def _fetch(
        self,
        where: Where,
        url: Url,
        kind: str,
        cost: float,
        headers: dict[str, str],
        cached: CachedAsset | None,
    ) -> Answer | Abort:
        """Queue the request on its lane and wait for its answer; ``budget``: the page's
        time ran out before it started (it is withdrawn), or while it was out (its answer is
        still kept)."""
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            return Abort("budget")
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        page = self.item.fetch_url
        sent = headers if cached is not None else None  # the validators it was sent with
        keep = functools.partial(self.rendering.keeper.keep, site=url.site, sent=sent)
        work = RenderFetch(
            url.fetch_url, url.host, kind, cost, headers, future, page, self.decision, keep
        )
        if isinstance(where, SiteLane):
            where.renders.append(work)
            self.rendering.arm(where)
            self.queued.append((where, work))
        else:
            media = self.rendering.media
            if media is None or media.stopping:
                return Abort("stopping")
            if not ask_media(media, url, work, self.lane.site, where.placement):
                return Abort("third-party")
            self.queued.append((None, work))
        self.sent += 1
        try:
            return await asyncio.wait_for(asyncio.shield(future), remaining)
        except TimeoutError:
            return Abort("budget")
        finally:
            if not future.done():
                future.cancel()

    def close(self) -> None:
        """The render ended: whatever it still waits for is withdrawn."""
        for lane, work in self.queued:
            if not work.answer.done():
                work.answer.cancel()  # a media lane skips it when its turn comes
            if lane is not None and work in lane.renders:
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
