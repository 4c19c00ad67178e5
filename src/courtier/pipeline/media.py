"""Media requisites: the images seed pages embed from object stores, CDNs and image services.

Theory of operation:
- A media host serves many customers: a path-style object-store endpoint carries hundreds of
  buckets, a CDN hostname hundreds of sites. Scheduling it per host (one request in flight,
  one second apart) would throttle every bucket behind one name, so media work is queued per
  *lane*: the work that shares its most specific limit key (``bucket:<provider>/<bucket>``,
  ``cdn-miss:<cdn>/<customer>``, ``imgsvc:<service>/<customer>``). Each lane books its next
  request with the same GCRA bookings and the same key clocks as the site scheduler, so a CDN
  miss booked on a customer's ``origin:`` key competes fairly with that customer's pages.
- Keys (``politeness.keys.politeness_keys``): a bucket alone, with its burst tolerance; a CDN
  request on the CDN, plus the miss key and the embedding site's origin while a miss is
  expected; an image service on its customer key, plus the embedding site's origin while the
  service behaves as a cache. The miss expectation and the service's behaviour are learned
  from the answers (``origins.media``); a miss nobody expected is charged to the origin after
  the fact, never forgiven.
- A media host's robots.txt is fetched (booked on ``site:<host>``) before anything else on
  it, obeyed for every URL, and a Crawl-delay it sets adds the host's site key to every
  request there.
- 429, 503 and runs of 5xx back the lane off (Retry-After is a hard floor); a URL answered
  that way is tried at most ``MAX_ATTEMPTS`` times.
- Media URLs live in memory for the run that discovers them (bounded; a dropped or unfinished
  one comes back when its page is refreshed) and each is fetched once per run.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from courtier.config import Config
from courtier.frontier.dedup import DedupCache
from courtier.net.fetch import Fetcher, FetchResult
from courtier.net.guard import Guard
from courtier.origins.media import CacheObservations, CacheVerdict, ServiceBehaviour, cache_verdict
from courtier.pipeline.discovery import MAX_REDIRECTS
from courtier.pipeline.robots_fetch import REDIRECTS, fetch_robots
from courtier.pipeline.stats import CrawlStats
from courtier.politeness.backoff import (
    BackoffParams,
    BackoffState,
    after_response,
    parse_retry_after,
)
from courtier.politeness.gcra import KeyParams, Limit, Refusal, Slot, book, charge_after
from courtier.politeness.keys import KeyType, LimitKey, MediaSource, RequestClass, politeness_keys
from courtier.politeness.robots import RobotsRules, RobotsStatus, rules_from_response
from courtier.url import Url, UrlError, parse_url

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 3
TRANSIENT_REFUSALS = frozenset({"timeout", "dns-error"})
MEDIA_MAX_LEAD = 2.0
"""Seconds ahead a media request may be booked: a slot held counts against the media cap,
so a CDN miss waiting on a busy origin waits unbooked, leaving capacity to other lanes."""


@dataclass(frozen=True, slots=True)
class MediaItem:
    url: Url
    referrer: str
    """The seed site whose page embeds it: the customer whose origin a cache miss reaches."""
    source: MediaSource
    redirects: int = 0


@dataclass(slots=True)
class MediaLane:
    name: str
    site: str
    """The media host's site key (host[:port]) whose robots.txt governs the lane."""
    queue: deque[MediaItem] = field(default_factory=deque)
    in_flight: int = 0
    timer: asyncio.TimerHandle | None = None
    booked: MediaItem | None = None
    slot: Slot | None = None
    keys: tuple[LimitKey, ...] = ()
    ready: bool = False
    """Queued for capacity (``MediaCrawl.ready``), not booked."""
    backoff: BackoffState = field(default_factory=lambda: BackoffState(interval=1.0))
    attempts: Counter[str] = field(default_factory=Counter)
    observations: CacheObservations = field(default_factory=CacheObservations)


@dataclass(slots=True)
class MediaHost:
    site: str
    scheme: str
    robots: RobotsRules | None = None
    fetching: bool = False
    timer: asyncio.TimerHandle | None = None
    next_start: float = 0.0
    waiting: set[str] = field(default_factory=set)
    """Lanes waiting for this host's robots.txt."""
    ready: bool = False
    service: CacheObservations = field(default_factory=CacheObservations)
    """What the host's answers show about caching (decides how an image service is limited)."""


class MediaCrawl:
    """Queues, books and fetches media requisites; the crawl engine feeds it page images."""

    def __init__(
        self,
        config: Config,
        *,
        loop: asyncio.AbstractEventLoop,
        tats: dict[str, float],
        fetcher: Fetcher,
        guard: Guard,
        stats: CrawlStats,
        tasks: set[asyncio.Task[None]],
        origin_of: Callable[[str], str | None],
        origin_limit: Callable[[str], Limit],
        write_document: Callable[[dict[str, Any]], None],
        backoff_params: BackoffParams,
    ) -> None:
        self.config = config
        self.loop = loop
        self.tats = tats
        self.fetcher = fetcher
        self.guard = guard
        self.stats = stats
        self.tasks = tasks
        self.origin_of = origin_of
        self.origin_limit = origin_limit
        self.write_document = write_document
        self.backoff_params = backoff_params
        self.rules = config.media.rules()
        self.policy = config.limits.policy()
        costs = config.costs.model().costs
        self.image_cost, self.robots_cost = costs[RequestClass.IMAGE], costs[RequestClass.ROBOTS]
        self.lanes: dict[str, MediaLane] = {}
        self.hosts: dict[str, MediaHost] = {}
        self.seen = DedupCache(1_000_000)
        self.queued = 0
        self.in_flight = 0
        self.slotted = 0
        """Bookings holding a slot that has not started yet."""
        self.ready: deque[MediaLane | MediaHost] = deque()
        """Lanes and robots.txt fetches waiting for capacity, in arrival order."""
        self.stopping = False
        self.max_lead = min(self.config.politeness.max_lead, MEDIA_MAX_LEAD)

    # -- intake -------------------------------------------------------------------------

    def offer(self, fetch_url: str, referrer: str, redirects: int = 0) -> bool:
        """Queue a media URL a page of ``referrer`` embeds. False: not a media host's URL."""
        try:
            url = parse_url(fetch_url)
        except UrlError:
            return False
        source = self.rules.media_source(url)
        if source is None:
            return False
        if self.stopping or not self.seen.first_sighting(url.canonical):
            return True
        if self.queued >= self.config.media.max_queued:
            self.stats.media_dropped += 1
            return True
        name = str(politeness_keys(url, rules=self.rules)[-1])
        lane = self.lanes.get(name)
        if lane is None:
            lane = self.lanes[name] = MediaLane(
                name, url.site, backoff=BackoffState(interval=self.backoff_params.base_interval)
            )
        if url.site not in self.hosts:
            self.hosts[url.site] = MediaHost(url.site, url.scheme)
        lane.queue.append(MediaItem(url, referrer, source, redirects))
        self.queued += 1
        self.arm(lane)
        return True

    def stop(self) -> None:
        self.stopping = True
        for lane in self.lanes.values():
            if lane.timer is not None:
                lane.timer.cancel()
                lane.timer = None
        for host in self.hosts.values():
            if host.timer is not None:
                host.timer.cancel()
                host.timer = None

    # -- scheduling ---------------------------------------------------------------------
    #
    # Capacity counts requests in flight *and* slots booked but not started: a slot is booked
    # only when its request can start in it. Booking first and queueing for capacity later
    # would let slots expire in the queue, and every forfeited slot still spends its keys
    # (an origin's budget among them), so work waits for capacity before it books.

    def _has_capacity(self) -> bool:
        return self.in_flight + self.slotted < self.config.media.max_in_flight

    def _wait_for_capacity(self, waiter: MediaLane | MediaHost) -> None:
        if not waiter.ready:
            waiter.ready = True
            self.ready.append(waiter)

    def _release(self) -> None:
        """Capacity freed: let waiting lanes and robots.txt fetches book, oldest first."""
        while self.ready and self._has_capacity() and not self.stopping:
            waiter = self.ready.popleft()
            waiter.ready = False
            if isinstance(waiter, MediaLane):
                self.arm(waiter)
            else:
                self._robots_needed(waiter)

    def arm(self, lane: MediaLane) -> None:
        """Book the lane's next request and arm its timer, if it has work and room."""
        if self.stopping or lane.timer is not None:
            return
        if lane.in_flight >= self.config.media.max_in_flight_per_key:
            return
        if lane.booked is None and not lane.queue:
            return
        now = self.loop.time()
        host = self.hosts[lane.site]
        if host.robots is None or now >= host.robots.expires_at:
            host.waiting.add(lane.name)
            self._robots_needed(host)
            return
        if host.robots.status is RobotsStatus.DISALLOW_ALL:
            # Unreachable robots.txt: nothing there until it has been asked again.
            lane.timer = self.loop.call_at(host.robots.expires_at, self._retry, lane)
            return
        if lane.backoff.paused_until > now:
            lane.timer = self.loop.call_at(lane.backoff.paused_until, self._retry, lane)
            return
        if not self._has_capacity():
            self._wait_for_capacity(lane)
            return
        item = lane.booked or self._next_allowed(lane, host)
        if item is None:
            return
        keys = self._keys(lane, item)
        limits = self._limits(keys, host)
        booking, updates = book(self.tats, now, limits, self.image_cost, max_lead=self.max_lead)
        lane.booked = item
        if isinstance(booking, Refusal):
            self.stats.lead_refusals += 1
            lane.slot = None
            lane.timer = self.loop.call_at(booking.not_before, self._retry, lane)
            return
        self.tats.update(updates)
        self.stats.slots += 1
        self.slotted += 1
        lane.slot, lane.keys = booking, keys
        lane.timer = self.loop.call_at(booking.start, self._launch, lane)

    def _retry(self, lane: MediaLane) -> None:
        lane.timer = None
        self.arm(lane)

    def _next_allowed(self, lane: MediaLane, host: MediaHost) -> MediaItem | None:
        assert host.robots is not None
        token = self.config.fetch.user_agent_token
        while lane.queue:
            item = lane.queue.popleft()
            self.queued -= 1
            if host.robots.allows(item.url.fetch_url, token):
                return item
            self.stats.refused["robots"] += 1
        return None

    def _keys(self, lane: MediaLane, item: MediaItem) -> tuple[LimitKey, ...]:
        service = self.hosts[item.url.site].service.behaviour
        return politeness_keys(
            item.url,
            rules=self.rules,
            cache_miss_expected=lane.observations.miss_expected,
            customer_origin=self.origin_of(item.referrer),
            service_caches=service is not ServiceBehaviour.STORE,
        )

    def _limits(self, keys: tuple[LimitKey, ...], host: MediaHost) -> tuple[Limit, ...]:
        limits = []
        for key in keys:
            if key.type is KeyType.ORIGIN:
                limits.append(self.origin_limit(key.name))
            elif key.type is KeyType.IMGSVC and host.service.behaviour is ServiceBehaviour.STORE:
                # An image service that shows no cache is limited like an object store.
                limits.append(Limit(str(key), self.policy.types[KeyType.BUCKET].key_params()))
            else:
                limits.append(Limit(str(key), self.policy.params(key)))
        delay = self._crawl_delay(host)
        if delay:
            site = self.config.limits.site
            params = KeyParams(delay, site.burst, site.slot_width, weighted=False)
            limits.append(Limit(f"site:{host.site}", params))
        return tuple(limits)

    def spacing(self, key: str) -> float:
        """Seconds between requests a media host's ``site:`` key asks for: its Crawl-delay,
        else the site interval its robots.txt request was booked at (0 for other keys)."""
        if not key.startswith("site:"):
            return 0.0
        host = self.hosts.get(key.removeprefix("site:"))
        delay = None if host is None else self._crawl_delay(host)
        return delay or self.config.site_interval

    def _crawl_delay(self, host: MediaHost) -> float | None:
        if host.robots is None:
            return None
        return host.robots.crawl_delay(self.config.fetch.user_agent_token)

    def _launch(self, lane: MediaLane) -> None:
        lane.timer = None
        if self.stopping:
            return
        item, slot = lane.booked, lane.slot
        assert item is not None and slot is not None
        self.slotted -= 1
        if slot.is_missed(self.loop.time()):
            self.stats.missed_slots += 1
            lane.slot = None
            self.arm(lane)  # the forfeited slot stays consumed: no bunching
            return
        lane.booked, lane.slot = None, None
        lane.in_flight += 1
        self.in_flight += 1
        task = self.loop.create_task(self._fetch(lane, item, lane.keys))
        self.tasks.add(task)
        task.add_done_callback(lambda t: self._finished(lane, t))
        self.arm(lane)

    def _finished(self, lane: MediaLane, task: asyncio.Task[None]) -> None:
        self.tasks.discard(task)
        lane.in_flight -= 1
        self.in_flight -= 1
        if not task.cancelled() and task.exception() is not None:
            log.error("media fetch on %s failed", lane.name, exc_info=task.exception())
            self.stats.internal_errors += 1
        self.arm(lane)
        self._release()

    # -- fetching -----------------------------------------------------------------------

    async def _get(self, fetch_url: str, host: str) -> tuple[FetchResult | None, str | None]:
        """Fetch through the guard: (result, None), or (None, the guard's refusal reason)."""
        resolution = await self.guard.resolve(host)
        if not resolution.allowed:
            self.stats.refused[resolution.reason] += 1
            return None, resolution.reason
        result = await self.fetcher.fetch(fetch_url, host, resolution.addresses)
        return result, None

    async def _fetch(self, lane: MediaLane, item: MediaItem, keys: tuple[LimitKey, ...]) -> None:
        result, refusal = await self._get(item.url.fetch_url, item.url.host)
        if result is None:
            if refusal in TRANSIENT_REFUSALS:
                self._back_off(lane, None, None)
                self._retry_or_drop(lane, item)
            return
        self.stats.record_fetch(result, robots=False)
        self.stats.media_requests[item.source.value] += 1
        self._back_off(lane, result.status, result.retry_after)
        status = result.status
        verdict = None
        if item.source is not MediaSource.STORE and status is not None and status < 500:
            verdict = cache_verdict(result.headers)
            self.stats.cache[verdict.value] += 1
            lane.observations.record(verdict)
            self.hosts[item.url.site].service.record(verdict)
            self._charge_unexpected_miss(item, keys, verdict)
        if status is None or status in (429, 503) or status >= 500:
            self._retry_or_drop(lane, item)
        elif status in REDIRECTS and result.location and item.redirects < MAX_REDIRECTS:
            try:
                target = parse_url(result.location, item.url.fetch_url)
            except UrlError:
                self.stats.refused["invalid-location"] += 1
            else:
                if not self.offer(target.fetch_url, item.referrer, item.redirects + 1):
                    self.stats.refused["redirect-out-of-scope"] += 1
        self._document(item, result, keys, verdict)

    def _charge_unexpected_miss(
        self, item: MediaItem, keys: tuple[LimitKey, ...], verdict: CacheVerdict
    ) -> None:
        """A miss booked as a hit reached the customer's origin: charge it there now."""
        if verdict is not CacheVerdict.MISS or any(k.type is KeyType.ORIGIN for k in keys):
            return
        if item.source is MediaSource.STORE:
            return
        if self.hosts[item.url.site].service.behaviour is ServiceBehaviour.STORE:
            return
        origin = self.origin_of(item.referrer)
        if origin is None:
            return
        limit = self.origin_limit(origin)
        self.tats[limit.key] = charge_after(self.tats, self.loop.time(), limit, self.image_cost)
        self.stats.miss_charges += 1

    def _back_off(self, lane: MediaLane, status: int | None, retry_after: str | None) -> None:
        wait = parse_retry_after(retry_after, time.time())
        lane.backoff = after_response(
            lane.backoff, status, wait, self.loop.time(), self.backoff_params
        )

    def _retry_or_drop(self, lane: MediaLane, item: MediaItem) -> None:
        key = item.url.canonical
        lane.attempts[key] += 1
        if lane.attempts[key] < MAX_ATTEMPTS and not lane.backoff.suspended:
            lane.queue.appendleft(item)
            self.queued += 1
        else:
            lane.attempts.pop(key, None)

    def _document(
        self,
        item: MediaItem,
        result: FetchResult,
        keys: tuple[LimitKey, ...],
        verdict: CacheVerdict | None,
    ) -> None:
        record: dict[str, Any] = {
            "url": item.url.fetch_url,
            "site": item.url.site,
            "kind": "media",
            "source": item.source.value,
            "referrer": item.referrer,
            "status": result.status,
            "fetched_at": round(result.started_at, 3),
            "elapsed_ms": round(result.elapsed * 1000, 1),
            "content_type": result.content_type,
            "bytes": len(result.body),
            "keys": [str(k) for k in keys],
        }
        if verdict is not None:
            record["cache"] = verdict.value
        if result.status is not None and 200 <= result.status < 300 and result.body:
            record["md5"] = hashlib.md5(result.body, usedforsecurity=False).hexdigest()
        if result.error:
            record["error"] = result.error
        if result.location:
            record["location"] = result.location
        self.write_document(record)

    # -- robots.txt of media hosts --------------------------------------------------------

    def _robots_needed(self, host: MediaHost) -> None:
        if host.fetching or host.timer is not None or self.stopping:
            return
        if not self._has_capacity():
            self._wait_for_capacity(host)
            return
        now = self.loop.time()
        site = self.config.limits.site
        limit = Limit(
            f"site:{host.site}",
            KeyParams(self.config.site_interval, site.burst, site.slot_width, weighted=False),
        )
        booking, updates = book(
            self.tats,
            max(now, host.next_start),
            (limit,),
            self.robots_cost,
            max_lead=self.config.politeness.max_lead,
        )
        if isinstance(booking, Refusal):
            host.timer = self.loop.call_at(booking.not_before, self._robots_retry, host)
            return
        self.tats.update(updates)
        self.stats.slots += 1
        self.slotted += 1
        host.fetching = True
        host.timer = self.loop.call_at(booking.start, self._robots_launch, host)

    def _robots_retry(self, host: MediaHost) -> None:
        host.timer = None
        self._robots_needed(host)

    def _robots_launch(self, host: MediaHost) -> None:
        host.timer = None
        self.slotted -= 1
        if self.stopping:
            host.fetching = False
            return
        # A robots.txt fetch that starts late only delays its host; it needs no rebooking.
        self.in_flight += 1
        task = self.loop.create_task(self._fetch_robots(host))
        self.tasks.add(task)
        task.add_done_callback(self._robots_finished(host))

    def _robots_finished(self, host: MediaHost) -> Callable[[asyncio.Task[None]], None]:
        def done(task: asyncio.Task[None]) -> None:
            self.tasks.discard(task)
            self.in_flight -= 1
            host.fetching = False
            if not task.cancelled() and task.exception() is not None:
                log.error("robots.txt of %s failed", host.site, exc_info=task.exception())
                self.stats.internal_errors += 1
            waiting, host.waiting = host.waiting, set()
            for name in sorted(waiting):
                self.arm(self.lanes[name])
            self._release()

        return done

    async def _fetch_robots(self, host: MediaHost) -> None:
        config = self.config.robots

        async def get(fetch_url: str, name: str) -> FetchResult | None:
            result, _refusal = await self._get(fetch_url, name)
            if result is not None:
                self.stats.record_fetch(result, robots=True)
            return result

        url = parse_url(f"{host.scheme}://{host.site}/robots.txt")
        result = await fetch_robots(get, url.fetch_url, url.host, config.max_redirects)
        status = None if result is None else result.status
        host.robots = rules_from_response(
            status,
            b"" if result is None else result.body,
            self.loop.time(),
            max_age=config.max_age,
            retry_unreachable=config.retry_unreachable,
            max_bytes=config.max_bytes,
        )
        host.next_start = self.loop.time() + (self._crawl_delay(host) or 0.0)
        self.stats.robots[host.robots.status.value] += 1
