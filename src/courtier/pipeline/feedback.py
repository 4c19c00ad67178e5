"""Feedback: what the engine does after an answer to keep the servers comfortable.

Rules:
- Backoff per site (``politeness.backoff``): Retry-After is a hard floor; 429/503 pause the
  site (Retry-After, else ``default_retry_after``) and double its spacing; a run of failures
  (5xx, no answer, DNS trouble) backs off exponentially, and past ``suspend_after_errors``
  suspends the site for ``suspend_for`` (counted).
- Latency feedback (``politeness.latency``) on the site and on its origin: answers slowing
  down cut the key's rate before errors start. Errors (no answer, 5xx, 429) are no latency
  samples. A site cut slows its very next request.
- An origin pauses when ``origin_pause_sites`` of its sites answer 429/503 within
  ``origin_pause_window`` seconds: its clock moves to the end of the Retry-After (or
  ``default_retry_after``), so no site on it starts before then.
- A response whose type makes it dearer than its URL looked (an image URL answering a page) is
  charged the difference on its origin; never credited.

Theory of operation:
- Everything here acts on shared state only: the key clocks (``tats``, the same dict the
  engine and the media crawl book on) and the answering site's ``SiteRuntime`` (its backoff,
  latency and next start). The origins' own latency states live here; ``origin_limit`` turns
  one into the origin's booking limit (configured interval divided by the rate factor), which
  the engine, the media crawl's CDN misses and the clock floors saved for the next run use.
- The engine calls, after every answer, in this order: ``back_off``, ``answered`` (latency and
  origin push-back), ``charge_response_type``; after a transient guard refusal (DNS trouble)
  only ``back_off`` with no status.
- Times are the event loop's (``clock``); a Retry-After date is read against the wall clock.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections.abc import Callable

from courtier.config import Config
from courtier.frontier.base import LeasedUrl
from courtier.net.fetch import FetchResult
from courtier.pipeline.site import UNRESOLVED, SiteRuntime, target_of
from courtier.pipeline.stats import CrawlStats
from courtier.politeness.backoff import BackoffParams, after_response, parse_retry_after
from courtier.politeness.gcra import Limit, charge_after
from courtier.politeness.keys import CostModel, KeyType, LimitKey, LimitPolicy
from courtier.politeness.latency import LatencyParams, LatencyState, observe

# The engine's logger: suspensions and origin pauses are the crawl's news, where operators
# already look for it.
log = logging.getLogger("courtier.pipeline.crawler")

_FULL_RATE = LatencyState()


class Feedback:
    """Backoff, latency feedback, origin pauses and cost corrections after every answer."""

    def __init__(
        self,
        config: Config,
        *,
        tats: dict[str, float],
        costs: CostModel,
        policy: LimitPolicy,
        stats: CrawlStats,
        clock: Callable[[], float],
    ) -> None:
        self.config = config
        self.tats = tats
        """GCRA state of every limit key, shared with the engine (and the media crawl)."""
        self.costs = costs
        self.policy = policy
        self.stats = stats
        self.clock = clock
        """The event loop's time (monotonic), read when an answer is handled."""
        self.origin_latency: dict[str, LatencyState] = {}
        self.origin_reports: dict[str, dict[str, float]] = {}
        """Per origin: site -> when it last answered 429/503."""
        params = config.politeness
        self.latency_params = LatencyParams(
            ratio=params.latency_ratio,
            min_rise=params.latency_min_rise,
            decrease=params.latency_decrease,
            increase=params.latency_increase,
            floor=params.latency_floor,
            cooldown=params.latency_cooldown,
        )
        # With one request in flight per site, every answer was sent at the site's current
        # rate, so a site needs no cooldown between cuts; an origin (many sites in flight) does.
        self.site_latency_params = (
            dataclasses.replace(self.latency_params, cooldown=0.0)
            if params.max_in_flight_per_site == 1
            else self.latency_params
        )
        self.backoff_params = BackoffParams(
            base_interval=config.site_interval,
            default_retry_after=params.default_retry_after,
            max_backoff=params.max_backoff,
            suspend_after=params.suspend_after_errors,
            suspend_for=params.suspend_for,
        )

    def origin_factor(self, origin: str) -> float:
        """The origin's latency rate factor (1.0: full rate)."""
        return self.origin_latency.get(origin, _FULL_RATE).factor

    def origin_limit(self, origin: str) -> Limit:
        """The origin's key as configured, slowed by the origin's own latency feedback."""
        params = self.policy.params(LimitKey(KeyType.ORIGIN, origin))
        factor = self.origin_latency.get(origin, _FULL_RATE).factor
        if factor < 1.0:
            params = dataclasses.replace(params, interval=params.interval / factor)
        return Limit(f"origin:{origin}", params)

    def back_off(self, rt: SiteRuntime, status: int | None, retry_after: str | None) -> None:
        """The site's backoff after an answer (``status`` None: no answer, or DNS trouble)."""
        wait = parse_retry_after(retry_after, time.time())
        rt.backoff = after_response(rt.backoff, status, wait, self.clock(), self.backoff_params)
        if rt.backoff.suspended:
            log.warning(
                "suspending %s for %.0f s after %d failures in a row",
                rt.site,
                self.config.politeness.suspend_for,
                self.config.politeness.suspend_after_errors,
            )
            self.stats.suspended_sites += 1

    def answered(self, rt: SiteRuntime, result: FetchResult) -> None:
        """Latency feedback on the site and its origin; 429/503 from several sites of one
        origin pause the whole origin."""
        now = self.clock()
        status = result.status
        origin = rt.origin if rt.origin is not UNRESOLVED else None
        if status in (429, 503) and origin is not None:
            self.origin_pushed_back(origin, rt.site, result.retry_after, now)
        if status is None or status >= 500 or status == 429 or result.latency is None:
            return
        before = rt.latency.factor
        rt.latency = observe(rt.latency, result.latency, now, self.site_latency_params)
        if rt.latency.factor < before:
            self.stats.latency_slowdowns["site"] += 1
            # The slower spacing applies to the very next request, counted from this one.
            rt.next_start = max(rt.next_start, rt.last_sent + rt.interval)
        if origin is not None:
            state = self.origin_latency.get(origin, _FULL_RATE)
            self.origin_latency[origin] = observe(state, result.latency, now, self.latency_params)
            if self.origin_latency[origin].factor < state.factor:
                self.stats.latency_slowdowns["origin"] += 1

    def origin_pushed_back(
        self, origin: str, site: str, retry_after: str | None, now: float
    ) -> None:
        """``site`` of ``origin`` answered 429/503 at ``now``: pause the origin when enough of
        its sites did so within the window."""
        params = self.config.politeness
        reports = self.origin_reports.setdefault(origin, {})
        reports[site] = now
        for other, when in list(reports.items()):
            if when < now - params.origin_pause_window:
                del reports[other]
        if len(reports) < params.origin_pause_sites:
            return
        wait = parse_retry_after(retry_after, time.time())
        until = now + (wait if wait is not None else params.default_retry_after)
        key = f"origin:{origin}"
        if self.tats.get(key, -math.inf) < until:
            # Nobody on this origin may start before ``until``: its TAT says so.
            self.tats[key] = until
            self.stats.origin_pauses += 1
            log.warning("pausing origin %s: %d of its sites pushed back", origin, len(reports))
        reports.clear()

    def charge_response_type(
        self, rt: SiteRuntime, item: LeasedUrl, result: FetchResult, *, cost: float
    ) -> None:
        """A response whose type makes it dearer than its URL looked is charged the
        difference on its origin (never credited: the booking already spaced it)."""
        if rt.origin is None or rt.origin is UNRESOLVED or not result.content_type:
            return
        actual = self.costs.cost_of_target(target_of(item.fetch_url), result.content_type)
        if actual <= cost:
            return
        limit = Limit(
            f"origin:{rt.origin}", self.policy.params(LimitKey(KeyType.ORIGIN, rt.origin))
        )
        self.tats[limit.key] = charge_after(self.tats, self.clock(), limit, actual - cost)
        self.stats.cost_corrections += 1
