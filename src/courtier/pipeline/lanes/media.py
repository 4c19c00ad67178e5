"""Media lanes: the images seed pages embed from object stores, CDNs and image services.

Theory of operation:
- A media host serves many customers: a path-style object-store endpoint carries hundreds of
  buckets, a CDN hostname hundreds of sites. Scheduling it per host would throttle every
  bucket behind one name, so media work is queued per *lane*: the work that shares its most
  specific limit key (``bucket:<provider>/<bucket>``, ``cdn-miss:<cdn>/<customer>``,
  ``imgsvc:<service>/<customer>``), a few requests in flight each. The scheduler is the
  same as the sites' (``scheduler.py``); only choosing work and keys differ.
- Keys (``politeness.keys.politeness_keys``): a bucket alone, with its burst tolerance; a CDN
  request on the CDN, plus the miss key and the embedding site's origin while a miss is
  expected; an image service on its customer key, plus the embedding site's origin while the
  service behaves as a cache. The miss expectation and the service's behaviour are learned
  from the answers (``origins.media``); a miss nobody expected is charged to the origin after
  the fact, never forgiven.
- A media host's robots.txt (the same cache and fetch as seed sites', booked on
  ``site:<host>``) comes first and is obeyed; a Crawl-delay it sets adds the host's site key
  to every request there.
- Feedback is the sites' (``feedback.py``): the lane backs off on 429, 503 and runs of 5xx
  (Retry-After a hard floor), its latency slows its own key, and an answer booked on an
  origin pushes back on that origin. A URL is asked at most ``MAX_ATTEMPTS`` times.
- Media URLs live in memory for the run that discovers them (bounded) and each is fetched
  once per run.
- A render's request to a media host (``render_media``) goes before the host's images.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Any

from courtier.frontier.dedup import DedupCache
from courtier.net.fetch import FetchResult
from courtier.origins.media import CacheVerdict, ServiceBehaviour, cache_verdict
from courtier.pipeline.answers.verdict import Verdict, decide, document
from courtier.pipeline.events import RequestContext
from courtier.pipeline.keeping.keeper import Keeper
from courtier.pipeline.lanes.media_lane import MediaHost, MediaItem, MediaLane, MediaWork
from courtier.pipeline.lanes.media_places import MediaPlaces, Placement
from courtier.pipeline.lanes.render_media import answer_render, refuse_render
from courtier.pipeline.lanes.services import LaneKindBase, LaneServices, RobotsOutcome, context_of
from courtier.pipeline.lanes.site import RobotsWork
from courtier.pipeline.scheduling.booker import BOOK_GATHER
from courtier.pipeline.scheduling.lanes import Launch, Wait
from courtier.politeness.backoff import BackoffState
from courtier.politeness.gcra import KeyParams, Limit
from courtier.politeness.keys import (
    KeyType,
    LimitKey,
    MediaSource,
    RequestClass,
    politeness_keys,
    site_key,
)
from courtier.politeness.robots import RobotsRules
from courtier.url import Url, UrlError, parse_url

log = logging.getLogger(__name__)

MEDIA_MAX_LEAD = 2.0
"""Seconds ahead a media request may be booked: a CDN miss waiting on a busy origin waits
unbooked, leaving the origin's near future to its pages. A same-origin media host's images
are the origin's own requests, like a site's own images: booked as far ahead as pages (else
a platform whose tenants keep its origin booked never has room for them)."""
MISS_MAX_LEAD = 0.25
"""Seconds ahead a media request booked on a customer's origin (an expected cache miss) may
be: when a busier media key (a CDN shared by hundreds of customers) sets its slot, every
second between the origin's own next free moment and that slot is lost to the origin, which
GCRA never lends back. Booked only when its slot is near, a miss leaves at most this much of
the origin idle (bench_rebook --size web: misses 2 s ahead left 1.5 s holes in standalone
sites' origins)."""


class MediaLanes(LaneKindBase):
    """The ``LaneKind`` of media keys; the engine feeds it page images (``offer``)."""

    book_wait = BOOK_GATHER  # an image is not hurried: its booking shares a round trip

    def __init__(
        self,
        services: LaneServices,
        *,
        origin_of: Callable[[str], str | None],
        arm: Callable[[MediaLane], None],
    ) -> None:
        super().__init__(services)
        config, self.lead = self.config, min(self.config.politeness.max_lead, MEDIA_MAX_LEAD)
        self.origin_of = origin_of
        self.arm = arm
        self.start_after = 0.0
        """No media request before this (after a crash: the keys used just before it are
        unknown, so every media key waits one of its intervals)."""
        self.rules = config.media.rules()
        self.policy = config.limits.policy()
        costs = config.costs.model().costs
        self.image_cost, self.robots_cost = costs[RequestClass.IMAGE], costs[RequestClass.ROBOTS]
        self.lanes: dict[str, MediaLane] = {}
        self.hosts: dict[str, MediaHost] = {}
        self.seen = DedupCache(1_000_000)
        self.queued = 0
        self.keeper = Keeper(config, self.stats, services.archive, None, services.parse)
        """Archives each answer (a text body, e.g. an SVG, redacted first)."""
        self.stopping = False
        self.places: MediaPlaces | None = None
        """Looks up image hosts that are media by their DNS, not their names (the engine
        sets it where origin inference runs)."""

    # -- intake -------------------------------------------------------------------------

    def offer(
        self,
        fetch_url: str | Url,
        referrer: str,
        redirects: int = 0,
        customer_origin: str | None = None,
        placement: Placement | None = None,
    ) -> bool:
        """Queue a media URL a page of ``referrer`` embeds. False: not a media host's URL.
        True also when the intake refused it (a placeholder in it: never fetched).
        A parsed ``Url`` (a page's image link) is taken as it is, not parsed again.
        ``customer_origin``: the referrer's origin if it is no longer known here (a redirect
        of an item offered earlier). ``placement``: where a host media by its DNS lives (an
        unknown host's first images are looked up, ``media_places``, and stay horizon)."""
        if isinstance(fetch_url, Url):
            url = fetch_url
        else:
            try:
                url = parse_url(fetch_url)
            except UrlError:
                return False
        if not self.intake.admits(url.fetch_url):
            return True  # refused and counted: no other door may take it either
        source = self.rules.media_source(url)
        if source is None:
            places = self.places
            if placement is None and places is not None:
                placement = places.placement(url)
                if placement is None and not places.known(url.site) and not redirects:
                    places.ask(url, referrer)
            if placement is None:
                return False
            source = placement.source
        else:
            placement = None  # a name that says media wins over DNS
        if self.stopping or not self.seen.first_sighting(url.canonical):
            return True
        if self.queued >= self.config.media.max_queued:
            self.stats.media_dropped += 1
            return True
        lane = self.lane_for(url, source, placement)
        origin = self.origin_of(referrer) or customer_origin
        lane.queue.append(MediaItem(url, referrer, source, redirects, origin, placement))
        self.queued += 1
        self.arm(lane)
        return True

    def lane_for(self, url: Url, source: MediaSource, placement: Placement | None) -> MediaLane:
        if placement is None:
            name = str(politeness_keys(url, rules=self.rules)[-1])
        else:
            # Its most specific key: the CDN customer's misses, the bucket, the host itself.
            name = str(placement.miss_key or placement.keys[0])
        lane = self.lanes.get(name)
        if lane is None:
            lane = self.lanes[name] = MediaLane(
                name,
                url.site,
                url.scheme,
                backoff=BackoffState(interval=self.config.site_interval),
                same_origin=source is MediaSource.SAME_ORIGIN,
                single=source is MediaSource.HOST,
            )
        self.hosts.setdefault(url.site, MediaHost())
        return lane

    # -- choosing -----------------------------------------------------------------------

    def max_lead(self, lane: MediaLane) -> float:
        if lane.same_origin:
            return self.config.politeness.max_lead
        return min(self.lead, MISS_MAX_LEAD) if lane.books_origin else self.lead

    def max_in_flight(self, lane: MediaLane) -> int:
        return 1 if lane.single else self.config.media.max_in_flight_per_key

    def choose(self, lane: MediaLane, now: float) -> MediaWork | Wait | None:
        if self.hosts[lane.site].suspended_reason is not None:
            return None
        rules = self.rules_for(lane.site, lane.scheme, now, lambda: self.arm(lane))
        if not isinstance(rules, RobotsRules):
            return rules
        while lane.queue:
            item = lane.queue.popleft()
            self.queued -= 1
            if item.render is not None and item.render.answer.done():
                continue  # the render gave up on it
            if rules.allows(item.url.fetch_url, self.token):
                return item
            self.stats.refused["robots"] += 1
            refuse_render(item.render)
        return None

    def not_before(self, lane: MediaLane, work: MediaWork, now: float) -> float:
        return max(lane.backoff.paused_until, self.start_after)

    def booking(self, lane: MediaLane, work: MediaWork) -> tuple[tuple[Limit, ...], float]:
        host = self.hosts[lane.site]
        if isinstance(work, RobotsWork):
            limits = [self._site_limit(lane.site, self.config.site_interval)]
            first = lane.queue[0] if lane.queue else None
            if first is not None and (lane.name == f"cdn-miss:{lane.site}" or first.on_origin):
                # A CDN customer's hostname (a missed robots.txt reaches its origin) or a
                # platform's media host; shared CDN hostnames answer robots.txt themselves.
                limits += [
                    self.feedback.origin_limit(key.name)
                    if key.type is KeyType.ORIGIN
                    else self.policy.limits((key,))[0]
                    for key in self._keys(lane, first)
                    if key.type in (KeyType.CDN_MISS, KeyType.ORIGIN)
                ]
            lane.books_origin = False
            return tuple(limits), self.robots_cost
        limits = []
        spaced = books_origin = False
        for key in self._keys(lane, work):
            if key.type is KeyType.ORIGIN:
                limits.append(self.feedback.origin_limit(key.name))
                books_origin = True
                continue
            if key.type is KeyType.SITE:  # a same-origin media host: its own spacing
                interval = max(self.config.site_interval, host.crawl_delay)
                limits.append(self._site_limit(lane.site, interval))
                spaced = True
                continue
            if key.type is KeyType.IMGSVC and lane.observations.behaviour is ServiceBehaviour.STORE:
                # An image service that shows no cache is limited like an object store.
                params = self.policy.types[KeyType.BUCKET].key_params()
            else:
                params = self.policy.params(key)
            if str(key) == lane.name and lane.latency.factor < 1.0:
                params = dataclasses.replace(params, interval=params.interval / lane.latency.factor)
            limits.append(Limit(str(key), params))
        if host.crawl_delay and not spaced:
            limits.append(self._site_limit(lane.site, host.crawl_delay))
        lane.books_origin = books_origin
        return tuple(limits), self.image_cost if work.render is None else work.render.cost

    def _site_limit(self, site: str, interval: float) -> Limit:
        params = self.config.limits.site
        return Limit(site_key(site), KeyParams(interval, params.burst, params.slot_width, False))

    def _keys(self, lane: MediaLane, item: MediaItem) -> tuple[LimitKey, ...]:
        caches = lane.observations.behaviour is not ServiceBehaviour.STORE  # per customer
        miss, origin = lane.observations.miss_expected, self._customer_origin(item)
        if item.placement is not None:
            return item.placement.keys_for(
                miss_expected=miss, customer_origin=origin, service_caches=caches
            )
        return politeness_keys(
            item.url,
            rules=self.rules,
            cache_miss_expected=miss,
            customer_origin=origin,
            service_caches=caches,
        )

    def _customer_origin(self, item: MediaItem) -> str | None:
        return self.origin_of(item.referrer) or item.customer_origin

    def spacing(self, key: str) -> float:
        """Seconds between requests a media host's ``site:`` key asks for: its Crawl-delay,
        else the site interval its robots.txt request was booked at (0 for other keys)."""
        if not key.startswith("site:"):
            return 0.0
        host = self.hosts.get(key.removeprefix("site:"))
        return (host.crawl_delay if host is not None else 0.0) or self.config.site_interval

    def started(self, lane: MediaLane, work: MediaWork, now: float) -> None:
        """Media keys are spaced by their bookings alone."""

    def run(self, lane: MediaLane, work: MediaWork, launch: Launch) -> Any:
        if isinstance(work, RobotsWork):
            return self._robots(lane, work, launch)
        origin = _booked_origin(launch.slot.keys)
        if work.render is not None:
            return answer_render(self, lane, work, work.render, launch, origin)
        context = context_of(
            work.url.site,
            "media",
            launch,
            origin=origin,
            attempt=lane.attempts[work.url.canonical],
            redirects=work.redirects,
            lane=lane.name,
        )
        return self._fetch(lane, work, context, launch.answered)

    # -- running ------------------------------------------------------------------------

    async def _robots(self, lane: MediaLane, work: RobotsWork, launch: Launch) -> None:
        outcome = await self.fetch_rules(lane, work, self.fetch, launch, media=True)
        if outcome is not None:
            self.adopt(work.site, outcome)

    def adopt(self, site: str, outcome: RobotsOutcome) -> None:
        """A media host's robots.txt rules are in (fetched now, or saved by an earlier run)."""
        host = self.hosts.setdefault(site, MediaHost())
        host.crawl_delay, host.suspended_reason = outcome.crawl_delay, outcome.refusal
        self.rules_ready(site, outcome)

    async def _fetch(
        self,
        lane: MediaLane,
        item: MediaItem,
        context: RequestContext,
        done: Callable[[], None],
    ) -> None:
        answer = await self.fetch(item.url.fetch_url, item.url.host, context)
        await self.answered(lane, answer, origin=context.origin, media=True)
        result = answer.result
        if result is None and not answer.transient:
            return
        key = item.url.canonical
        verdict = decide(
            answer, attempts=lane.attempts[key], suspended=lane.backoff.suspended, sitemap=False
        )
        if verdict is Verdict.RETRY:
            lane.attempts[key] += 1
            lane.queue.appendleft(item)
            self.queued += 1
        else:
            lane.attempts.pop(key, None)
        if result is None:
            return
        self.stats.media_requests[item.source.value] += 1
        cache = await self.observe_cache(lane, item, context.keys, result)
        if verdict is Verdict.REDIRECT and answer.redirect is not None:
            self._redirect(item, answer.redirect)
        done()  # the key's place in flight: keeping the answer is our own work
        extra: dict[str, Any] = {"kind": "media", "source": item.source.value}
        extra |= {"referrer": item.referrer, "keys": list(context.keys)}
        if cache is not None:
            extra["cache"] = cache.value
        kept = await self.keeper.keep(result, item.url.site)
        md5 = await kept.fingerprint(result)
        if md5 is not None:
            extra["md5"] = md5
        extra |= kept.fields()
        self.write_document(document(result, url=item.url.fetch_url, site=item.url.site, **extra))

    async def observe_cache(
        self, lane: MediaLane, item: MediaItem, keys: tuple[str, ...], result: FetchResult
    ) -> CacheVerdict | None:
        """A cache's verdict on an answer (None: no cache in front), learnt from."""
        if item.source not in _CACHES or result.status is None or result.status >= 500:
            return None
        cache = cache_verdict(result.headers)
        self.stats.cache[cache.value] += 1
        lane.observations.record(cache)
        await self._charge_unexpected_miss(lane, item, keys, cache)
        return cache

    def _redirect(self, item: MediaItem, location: str) -> None:
        target = self.intake.redirect(location, item.url.fetch_url, item.redirects)
        if target is None:
            return
        if not self.offer(
            target.fetch_url, item.referrer, item.redirects + 1, item.customer_origin
        ):
            self.stats.refused["redirect-out-of-scope"] += 1

    async def _charge_unexpected_miss(
        self, lane: MediaLane, item: MediaItem, keys: tuple[str, ...], verdict: CacheVerdict
    ) -> None:
        """A miss booked as a hit reached the customer's origin: charge it there now."""
        if verdict is not CacheVerdict.MISS or any(k.startswith("origin:") for k in keys):
            return
        if item.source not in _CACHES:  # a store's or the origin's own answer: no cache
            return
        if lane.observations.behaviour is ServiceBehaviour.STORE:
            return
        origin = self._customer_origin(item)
        if origin is None:
            return
        await self.feedback.clocks.charge(self.feedback.origin_limit(origin), self.image_cost)
        self.stats.miss_charges += 1


_CACHES = frozenset({MediaSource.CDN, MediaSource.IMGSVC})
"""Media sources with a cache in front of an origin (their answers carry cache verdicts)."""


def _booked_origin(keys: tuple[str, ...]) -> str | None:
    """The origin id among a slot's keys (a miss booked on the customer's origin)."""
    for key in keys:
        if key.startswith("origin:"):
            return key[len("origin:") :]
    return None
