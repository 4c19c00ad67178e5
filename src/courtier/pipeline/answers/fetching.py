"""One guarded fetch for every request the crawl makes, returning an ``Answer``.

Rules:
- A host whose owner opted out (``controls``) is refused before anything else, for every
  kind of request (reason ``opted-out``, final).
- The host is resolved through the SSRF guard first; a refused host is never connected to
  and its ``Answer`` carries the guard's reason (``timeout`` and ``dns-error`` are transient:
  retried with backoff, never final).
- The fetcher connects only to the addresses the guard approved (pinning) and does not
  follow redirects: a ``Location`` is new work, booked and guarded again.
- What a response says in its headers is read by functions that cannot raise.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Protocol

from courtier.net.fetch import FetchResult
from courtier.net.guard import Resolution
from courtier.net.headers import retry_after_seconds
from courtier.pipeline.events import NoObserver, Observer, RequestContext, RequestEvent
from courtier.pipeline.stats import CrawlStats

log = logging.getLogger(__name__)

TRANSIENT_REFUSALS = frozenset({"timeout", "dns-error"})
"""Guard refusals that may pass on their own: retried with backoff, not recorded as final."""
REDIRECTS = frozenset({301, 302, 303, 307, 308})
"""What a redirect is, for pages, robots.txt and media alike."""
_SPACED = frozenset({"page", "sitemap", "robots", "robots-hop"})
"""Requests whose real start spaces their site's next one (media keys: by booking alone)."""
OPTED_OUT = "opted-out"
"""The refusal of a host whose owner asked not to be crawled."""
MAX_ATTEMPTS = 3
"""A URL answered 429/503/5xx/no answer this often is given up for this run."""


class Resolver(Protocol):
    async def resolve(self, host: str) -> Resolution: ...


class FetcherLike(Protocol):
    async def fetch(
        self,
        url: str,
        host: str,
        addresses: tuple[str, ...],
        *,
        headers: Mapping[str, str] | None = None,
        on_sent: Callable[[float], None] | None = None,
        spool: bool = False,
    ) -> FetchResult: ...


@dataclass(frozen=True, slots=True)
class Answer:
    url: str
    result: FetchResult | None
    refusal: str | None = None
    """The guard's reason when it refused the host (``result`` is then None)."""
    retry_after: float | None = None
    """Seconds the server asked us to wait (Retry-After), read safely; unclamped."""

    @property
    def status(self) -> int | None:
        return None if self.result is None else self.result.status

    @property
    def transient(self) -> bool:
        return self.result is None and self.refusal in TRANSIENT_REFUSALS

    @property
    def redirect(self) -> str | None:
        """The Location of a redirect answer (None for anything else)."""
        result = self.result
        if result is None or result.status not in REDIRECTS or not result.location:
            return None
        return result.location

    @property
    def ok(self) -> bool:
        return (
            self.result is not None
            and self.result.status is not None
            and (200 <= self.result.status < 300)
        )

    @property
    def retryable(self) -> bool:
        """No answer, 429 or 5xx: worth asking again later (within ``MAX_ATTEMPTS``)."""
        status = self.status
        return self.transient or (
            self.result is not None and (status is None or status == 429 or status >= 500)
        )


class GuardedFetch:
    def __init__(
        self,
        guard: Resolver,
        fetcher: FetcherLike,
        stats: CrawlStats,
        wall_clock: Callable[[], float],
        observer: Observer | None = None,
        sent: Callable[[str, float], Awaitable[None]] | None = None,
        opted_out: Collection[str] = frozenset(),
    ) -> None:
        self.guard = guard
        self.opted_out = opted_out
        """Hosts never asked again (a live set: the operator's controls add to it)."""
        self.fetcher = fetcher
        self.stats = stats
        self.wall_clock = wall_clock
        self.observer: Observer = observer or NoObserver()
        self.sent = sent
        """(site, when its request really went out): the site's clock is spaced from it."""

    async def __call__(
        self,
        url: str,
        host: str,
        context: RequestContext,
        *,
        on_send: Callable[[], None] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Answer:
        robots = context.kind in ("robots", "robots-hop")
        if host in self.opted_out:
            self.stats.refused[OPTED_OUT] += 1
            self.observer.request(RequestEvent(context, url, self.wall_clock(), None, OPTED_OUT))
            return Answer(url, None, OPTED_OUT)
        resolution = await self.guard.resolve(host)
        if not resolution.allowed:
            self.stats.refused[resolution.reason] += 1
            log.info("refused %s: %s (%s)", url, resolution.reason, resolution.detail)
            event = RequestEvent(context, url, self.wall_clock(), None, resolution.reason)
            self.observer.request(event)
            return Answer(url, None, resolution.reason)
        if on_send is not None:
            on_send()
        # robots.txt is read from memory (and cut at its own limit); bigger bodies may spool
        result = await self.fetcher.fetch(
            url,
            host,
            resolution.addresses,
            headers=headers or None,
            on_sent=context.sent,
            spool=not robots,
        )
        self.stats.record_fetch(result, robots=robots)
        if self.sent is not None and result.sent_at is not None and context.kind in _SPACED:
            await self.sent(context.site, result.sent_at)
        self.observer.request(RequestEvent(context, url, result.started_at, result, None))
        wait = retry_after_seconds(result.retry_after, self.wall_clock())
        return Answer(url, result, None, wait)
