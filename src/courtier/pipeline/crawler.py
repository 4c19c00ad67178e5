"""The crawl engine: the imperative shell that wires frontier, politeness, guard and fetcher.

Theory of operation:
- Every site has a ``SiteRuntime``: a small in-memory queue of leased URLs, its robots rules,
  its backoff state and the earliest monotonic time its next request may start. A site with
  work is armed with one ``loop.call_at`` timer for that time; the event loop's own timer
  heap is the schedule, so an idle or saturated site costs nothing.
- Every request is booked (GCRA with bounded slack, ``courtier.politeness.gcra``) on its
  limit keys: its site, and its inferred origin (``courtier.origins``). The booking returns a
  slot; a timer that fires after the slot's deadline forfeits it and books again (counted:
  the rebook rate), and the event loop's lag is sampled, because both say whether the loop
  keeps its appointments.
- Site spacing is start-to-start and anchored on the moment a request's headers go out, so
  a late start never lets the next one come early.
- One request in flight per site (configurable), a global cap on requests in flight.
- Only seed sites are fetched (``discovery.py`` turns what a fetch reveals into frontier
  work; links to other sites are horizon, never fetched). Redirects are not followed by the
  HTTP client: a ``Location`` becomes new work that goes through scope, robots, spacing and
  the SSRF guard again, with a hop budget. The one exception: images seed pages embed from
  object stores, CDNs and image services, fetched by ``media.py`` on their own keys (bucket,
  CDN and the customer's origin on a miss, image service), in lanes keyed by those keys.
- Feedback after every answer (``feedback.py``): backoff (Retry-After, 429/503, runs of
  5xx), latency feedback per site and origin, an origin pause when several of its sites push
  back, and a charge for a response dearer than its URL looked. A ranking cycle can promote
  horizon hosts into the seed while the crawl runs.
- Parsing runs in a process pool; store access runs on one store thread in batches. The
  event loop only schedules, fetches and moves small records.
- Stopping (deadline, SIGINT, SIGTERM): no new starts, in-flight requests get a short grace,
  pending writes are flushed. Leased-but-unfinished URLs go back to the queue on the next
  start, so a second run resumes.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import multiprocessing
import signal
import time
import zlib
from collections import deque
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar, cast

from courtier.config import Config
from courtier.frontier.base import (
    HorizonLink,
    HostEdge,
    LeasedUrl,
    NewUrl,
    Outcome,
    SiteState,
    UrlLane,
    UrlStatus,
)
from courtier.frontier.split import Lane as SplitLane
from courtier.frontier.split import decide as split_decide
from courtier.frontier.split import target_discovery_share
from courtier.frontier.sqlite_store import SqliteFrontier
from courtier.frontier.surface import decide_depth_cap
from courtier.graph.cycle import ranking_cycle
from courtier.graph.pagerank import GraphError
from courtier.net.fetch import Fetcher, FetchResult
from courtier.net.guard import Guard
from courtier.origins.header_evidence import probe_response
from courtier.origins.infer import InferenceResult, OriginInference
from courtier.origins.store import OriginStore
from courtier.origins.tls_evidence import tls_facts
from courtier.pipeline.clocks import load_clocks, save_clocks
from courtier.pipeline.discovery import Discovery
from courtier.pipeline.feedback import Feedback
from courtier.pipeline.media import MediaCrawl
from courtier.pipeline.parse import ParsedPage, parse_page, parse_sitemap_links
from courtier.pipeline.robots_fetch import fetch_robots
from courtier.pipeline.site import ROBOTS_WORK, UNRESOLVED, SiteRuntime, target_of
from courtier.pipeline.stats import CrawlStats
from courtier.politeness.backoff import BackoffState
from courtier.politeness.gcra import KeyParams, Limit, Refusal, book
from courtier.politeness.keys import KeyType, LimitKey, RequestClass, guess_origin
from courtier.politeness.robots import RobotsStatus, rules_from_response
from courtier.sinks.documents import DocumentSink
from courtier.url import Url, UrlError, host_of_site, parse_url

log = logging.getLogger(__name__)

T = TypeVar("T")

MAX_ATTEMPTS = 3
"""A URL answered 429/503/no-answer this often is given up for this run."""
TRANSIENT_REFUSALS = frozenset({"timeout", "dns-error"})
"""Guard refusals that may pass on their own: retried with backoff, not recorded as final."""
_HTML_TYPES = ("text/html", "application/xhtml+xml")
EVIDENCE_SETTLE = 5.0
"""Seconds to gather more header evidence before re-clustering origins on it."""


class Crawler:
    def __init__(
        self,
        config: Config,
        *,
        store_path: Path,
        out_dir: Path,
        guard: Guard,
        address_allowed: Callable[[str], bool],
        seeds: list[Url],
        duration: float | None = None,
        origins: OriginInference | None = None,
    ) -> None:
        self.config = config
        self.store_path = store_path
        self.out_dir = out_dir
        self.guard = guard
        self.address_allowed = address_allowed
        self.seeds = seeds
        self.duration = duration
        self.origins = origins
        """Origin inference (DNS evidence); without it a site's origin is its address set."""
        self._origins_ready = asyncio.Event()
        self._observed_hosts: set[str] = set()
        """Hosts whose home page's headers went to origin inference."""
        self._new_evidence = asyncio.Event()
        """Set when inference got evidence that should re-cluster the origins soon."""
        self.media: MediaCrawl | None = None
        """Page requisites on media hosts (``[media] fetch``), started with the fetcher."""
        self.stats = CrawlStats()
        self._sites: dict[str, SiteRuntime] = {}
        self._scope: set[str] = set()
        self._outcomes: list[Outcome] = []
        self._ready: deque[SiteRuntime] = deque()
        """Sites with work waiting for capacity before they book (see ``_has_capacity``)."""
        self._refill: set[str] = set()
        self._refill_event = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self._in_flight = 0
        self._stopping = False
        self._stopped = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tats: dict[str, float] = {}
        """GCRA state of every limit key (the embedded default keeps it in memory)."""
        self._costs = config.costs.model()
        self._policy = config.limits.policy()
        self._surface_policy = config.frontier.surface_policy(config.crawl.max_depth)
        self._split = config.frontier.split_policy()
        self.discovery = Discovery(
            self._sites, self._scope, self.stats, guard.policy, self._surface_policy
        )
        self._lookups = asyncio.Semaphore(64)
        """Origin lookups at once: a start-up burst must not flood the resolver."""
        self.feedback = Feedback(
            config,
            tats=self._tats,
            costs=self._costs,
            policy=self._policy,
            stats=self.stats,
            clock=self._now,
        )
        """Backoff, latency feedback, origin pauses and cost corrections after each answer."""

    # -- plumbing -----------------------------------------------------------------------

    async def _db(self, fn: Callable[..., T], *args: Any) -> T:
        assert self._loop is not None
        return await self._loop.run_in_executor(self._store_exec, fn, *args)

    def _now(self) -> float:
        """The event loop's time (set when ``run`` starts)."""
        assert self._loop is not None
        return self._loop.time()

    def stop(self) -> None:
        """Stop starting requests; ``run`` returns after a short grace for in-flight ones."""
        if not self._stopping:
            log.info("stopping: no new requests start")
            self._stopping = True
            self._stopped.set()
            if self.media is not None:
                self.media.stop()
            for rt in self._sites.values():
                if rt.timer is not None:
                    rt.timer.cancel()
                    rt.timer = None

    # -- the run ------------------------------------------------------------------------

    async def run(self) -> CrawlStats:
        self._loop = asyncio.get_running_loop()
        self._store_exec = ThreadPoolExecutor(1, thread_name_prefix="courtier-store")
        # Spawned, not forked: this process has threads (the store thread, the terminal's
        # status line), and a forked worker could inherit a lock one of them held and hang.
        self._parse_pool: Executor = ProcessPoolExecutor(
            self.config.crawl.parse_workers, mp_context=multiprocessing.get_context("spawn")
        )
        # Start the workers now (imports take a moment), not on the first page.
        self._parse_pool.submit(parse_page, b"<html></html>", "http://warm-up.invalid/")
        self.frontier = SqliteFrontier(self.store_path)
        self.sink = DocumentSink(self.out_dir)
        for sig in (signal.SIGINT, signal.SIGTERM):
            # Not the main thread (e.g. under a test runner's thread): no signal handling.
            with contextlib.suppress(NotImplementedError, RuntimeError):
                self._loop.add_signal_handler(sig, self.stop)
        started = time.monotonic()
        try:
            await self._start_up()
            async with Fetcher(self.config.fetch, self.address_allowed) as self.fetcher:
                if self.config.media.fetch:
                    self.media = self._media_crawl()
                    self.discovery.media = self.media.offer
                background = [
                    asyncio.create_task(self._infer_origins()),
                    asyncio.create_task(self._flush_loop()),
                    asyncio.create_task(self._due_loop()),
                    asyncio.create_task(self._rank_loop()),
                    asyncio.create_task(self._refill_loop()),
                    asyncio.create_task(self._lag_monitor()),
                ]
                for site in list(self._sites):
                    self._request_refill(self._sites[site])
                await self._wait_for_end()
                await self._drain()
                await self._db(save_clocks, self.store_path, self._clock_floors(), time.time())
                for task in background:
                    task.cancel()
                await asyncio.gather(*background, return_exceptions=True)
            await self._flush()
            self.stats.store_counts = await self._db(self.frontier.counts)
            self.stats.top_horizon = await self._db(self.frontier.horizon_sites, 10)
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._loop.remove_signal_handler(sig)
            self.sink.close()
            await self._db(self.frontier.close)
            self._store_exec.shutdown(wait=True)
            self._parse_pool.shutdown(wait=True, cancel_futures=True)
        self.stats.elapsed = time.monotonic() - started
        return self.stats

    def _media_crawl(self) -> MediaCrawl:
        assert self._loop is not None
        return MediaCrawl(
            self.config,
            loop=self._loop,
            tats=self._tats,
            fetcher=self.fetcher,
            guard=self.guard,
            stats=self.stats,
            tasks=self._tasks,
            origin_of=self._origin_of_site,
            origin_limit=self.feedback.origin_limit,
            write_document=self.sink.write,
            backoff_params=self.feedback.backoff_params,
        )

    def _origin_of_site(self, site: str) -> str | None:
        rt = self._sites.get(site)
        if rt is None or rt.origin is None or rt.origin is UNRESOLVED:
            return None
        return rt.origin

    async def _start_up(self) -> None:
        now = time.time()
        released = await self._db(self.frontier.release_leases)
        if released:
            log.info("resuming: %d URLs leased by the last run are queued again", released)
        await self._db(self.frontier.add_sites, [u.site for u in self.seeds], SiteState.SEED, now)
        roots = [NewUrl(u.canonical, u.fetch_url, u.site, 0) for u in self.seeds]
        await self._db(self.frontier.write_batch, roots, [], [], now)
        in_scope = await self._db(self.frontier.sites_in_state, SiteState.SEED, SiteState.REQUESTED)
        self._scope.update(in_scope)
        schemes = {u.site: u.scheme for u in self.seeds}
        assert self._loop is not None
        start = self._loop.time()
        interval = self.config.site_interval
        for site in self._scope:
            self._sites[site] = SiteRuntime(
                site=site,
                host=host_of_site(site),
                scheme=schemes.get(site, "http"),
                backoff=BackoffState(interval=interval),
                margin=self.config.politeness.start_margin,
                # Spread first starts over one interval: sites started in phase stay in
                # phase, and thousands of requests due in the same millisecond make the
                # loop late for all of them (and flood the resolver).
                next_start=start + interval * (zlib.crc32(site.encode()) % 1024) / 1024,
            )
        self.stats.seed_sites = len(self._scope)
        sizes = await self._db(self.frontier.site_sizes)
        for site, rt in self._sites.items():
            rt.discovered, rt.backlog = sizes.get(site, (0, 0))
            rt.depth_cap = decide_depth_cap(rt.discovered, None, self._surface_policy).cap
        self._restore_clocks(await self._db(load_clocks, self.store_path, time.time()))
        fresh = self._freshlane_urls()
        if fresh:
            interval = self.config.frontier.freshlane_interval
            await self._db(self.frontier.set_freshlane, fresh, interval, now)

    def _freshlane_urls(self) -> list[NewUrl]:
        urls = []
        for raw in self.config.frontier.freshlane:
            try:
                url = parse_url(raw)
            except UrlError as exc:
                log.warning("freshlane source %r skipped: %s", raw, exc)
                continue
            if url.site not in self._scope:
                log.warning("freshlane source %s skipped: its site is not in the seed", raw)
                continue
            urls.append(NewUrl(url.canonical, url.fetch_url, url.site, 0, 0, UrlLane.FRESHLANE))
        return urls

    def _wall_offset(self) -> float:
        """Add to a loop time to get a wall-clock time."""
        assert self._loop is not None
        return time.time() - self._loop.time()

    def _clock_floors(self) -> dict[str, float]:
        """Per limit key, the wall-clock time before which nothing may start on it.

        A TAT also holds slots booked for requests this run will never make; the floor keeps
        only what requests already started demand: at most one request of the dearest class
        from now (an origin), one image (a bucket, CDN or image-service key, a media host's
        site key), or the site's own next start and pause.
        """
        assert self._loop is not None
        now, offset = self._loop.time(), self._wall_offset()
        dearest = max(self._costs.costs.values())
        image = self._costs.costs[RequestClass.IMAGE]
        floors: dict[str, float] = {}
        for key, tat in self._tats.items():
            if tat <= now:
                continue
            kind, _, name = key.partition(":")
            if kind == KeyType.ORIGIN.value:
                params = self._policy.params(LimitKey(KeyType.ORIGIN, name))
                factor = self.feedback.origin_factor(name)
                tat = min(tat, now + dearest * params.interval / factor)
                floors[key] = tat + offset
            elif kind != KeyType.SITE.value or name not in self._sites:
                # Media keys and media hosts' site keys (seed sites are handled below).
                try:
                    params = self._policy.params(LimitKey.parse(key))
                except ValueError:
                    continue
                spacing = self.media.spacing(key) if self.media is not None else 0.0
                floors[key] = min(tat, now + image * max(params.interval, spacing)) + offset
        for rt in self._sites.values():
            floors[f"site:{rt.site}"] = max(rt.next_start, rt.backoff.paused_until) + offset
        return floors

    def _restore_clocks(self, floors: dict[str, float]) -> None:
        offset = self._wall_offset()
        for key, wall in floors.items():
            when = wall - offset
            self._tats[key] = max(self._tats.get(key, when), when)
            rt = self._sites.get(key.removeprefix("site:")) if key.startswith("site:") else None
            if rt is not None:
                rt.next_start = max(rt.next_start, when)
        self.stats.restored_clocks = len(floors)

    async def _wait_for_end(self) -> None:
        assert self._loop is not None
        if self.duration is None:
            await self._stopped.wait()
            return
        # Leave room for in-flight requests and the final flush inside the duration.
        grace = min(5.0, max(0.5, self.duration * 0.1))
        try:
            await asyncio.wait_for(self._stopped.wait(), max(0.0, self.duration - grace))
        except TimeoutError:
            self.stop()

    async def _drain(self) -> None:
        if not self._tasks:
            return
        grace = 2.0 if self.duration is None else min(2.0, max(0.2, self.duration * 0.05))
        _done, pending = await asyncio.wait(set(self._tasks), timeout=grace)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)

    # -- scheduling ---------------------------------------------------------------------
    #
    # A site with work books its next request (GCRA over its limit keys), arms one timer for
    # the slot's start, and starts the request when the timer fires inside the slot. A timer
    # that fires after the slot's deadline forfeits the slot (it stays consumed) and books
    # again: the rebook rate. A booking refused for maximum lead books again when it can
    # succeed; its URL goes back to the front of the site's queue.

    def _arm(self, rt: SiteRuntime) -> None:
        """Book the site's next request and arm its timer, if it has work and no timer."""
        if self._stopping or rt.timer is not None:
            return
        if rt.in_flight >= self.config.politeness.max_in_flight_per_site:
            return
        assert self._loop is not None
        if rt.booked is not None:
            self._book(rt, rt.booked)
            return
        if rt.origin is UNRESOLVED:
            if rt.backoff.paused_until > self._loop.time():
                rt.timer = self._loop.call_at(rt.backoff.paused_until, self._retry_booking, rt)
            else:
                self._start_origin_lookup(rt)
            return
        robots = rt.robots
        if (
            robots is None
            or robots.status is RobotsStatus.DISALLOW_ALL  # ask again when it expires
            or self._loop.time() >= robots.expires_at
        ):
            self._book(rt, ROBOTS_WORK)
            return
        item = self._next_allowed(rt)
        if item is None:
            return
        self._book(rt, item)

    def _has_capacity(self) -> bool:
        # The cap on requests in flight (a fetch counts until its page is parsed) gates
        # *booking*; a slot once booked is honoured even if the cap was reached meanwhile.
        # Forfeiting it instead would still spend its keys (an origin's budget among them):
        # when fetching outpaced parsing, that burned most of every origin's budget on
        # slots nobody used. So in flight may exceed the cap by the slots already booked.
        return self._in_flight < self.config.crawl.max_in_flight

    def _release(self) -> None:
        while self._ready and self._has_capacity() and not self._stopping:
            rt = self._ready.popleft()
            rt.ready = False
            self._arm(rt)

    def _book(self, rt: SiteRuntime, work: LeasedUrl | str) -> None:
        assert self._loop is not None
        now = self._loop.time()
        earliest = max(now, rt.next_start, rt.backoff.paused_until)
        if rt.robots is not None and rt.robots.status is RobotsStatus.DISALLOW_ALL:
            # Unreachable robots.txt: nothing may be fetched until we have asked again.
            earliest = max(earliest, rt.robots.expires_at)
        if earliest > now:
            # The site itself must wait (spacing, backoff, robots): book when that is over,
            # so a long site pause never holds a slot on a key other sites share.
            rt.booked, rt.slot = work, None
            rt.timer = self._loop.call_at(earliest, self._retry_booking, rt)
            return
        if not self._has_capacity():
            rt.booked, rt.slot = work, None
            if not rt.ready:
                rt.ready = True
                self._ready.append(rt)
            return
        target = (
            "/robots.txt" if work is ROBOTS_WORK else target_of(cast(LeasedUrl, work).fetch_url)
        )
        cost = self._costs.cost_of_target(target)
        limits = self._limits_for(rt)
        booking, updates = book(
            self._tats, now, limits, cost, max_lead=self.config.politeness.max_lead
        )
        if isinstance(booking, Refusal):
            # A saturated key: nothing consumed; the work waits (in memory for this one URL,
            # in the frontier for the rest) until a booking can succeed.
            self.stats.lead_refusals += 1
            rt.booked, rt.slot = work, None
            rt.timer = self._loop.call_at(booking.not_before, self._retry_booking, rt)
            return
        self._tats.update(updates)
        self.stats.slots += 1
        rt.booked, rt.slot = work, booking
        rt.timer = self._loop.call_at(booking.start, self._launch, rt)

    def _retry_booking(self, rt: SiteRuntime) -> None:
        rt.timer = None
        self._arm(rt)

    def _limits_for(self, rt: SiteRuntime) -> tuple[Limit, ...]:
        # The site key's interval is the site's own: Crawl-delay, backoff and latency
        # feedback on top of [limits.site]; the other keys take [limits.<type>] as they are,
        # an origin slowed by its own latency feedback.
        limits = self.config.limits
        site = Limit(
            f"site:{rt.site}",
            KeyParams(rt.interval, limits.site.burst, limits.site.slot_width, weighted=False),
        )
        if rt.origin is None or rt.origin is UNRESOLVED:
            return (site,)
        return (site, self.feedback.origin_limit(rt.origin))

    def _start_origin_lookup(self, rt: SiteRuntime) -> None:
        """Resolve the host once before its first booking, to know which origin it books on."""
        if rt.origin_lookup:
            return
        rt.origin_lookup = True
        assert self._loop is not None
        task = self._loop.create_task(self._lookup_origin(rt))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _lookup_origin(self, rt: SiteRuntime) -> None:
        if self.origins is not None:
            await self._origins_ready.wait()
            inferred = self.origins.origin_of(rt.host)
            if inferred is not None:
                rt.origin_lookup = False
                rt.origin = inferred
                self._arm(rt)
                return
        # No inference, or none for this host (its DNS failed): its address set decides.
        async with self._lookups:
            resolution = await self.guard.resolve(rt.host)
        rt.origin_lookup = False
        if not resolution.allowed and resolution.reason in TRANSIENT_REFUSALS:
            # Unknown is not "no origin": never book on the site key alone because DNS was
            # slow. Back off and ask again.
            self.feedback.back_off(rt, None, None)
            self._arm(rt)
            return
        # A refused host books on its site key alone; the fetch is refused by the guard.
        rt.origin = guess_origin(None, resolution.addresses) if resolution.allowed else None
        self._arm(rt)

    def _launch(self, rt: SiteRuntime) -> None:
        assert self._loop is not None
        rt.timer = None
        if self._stopping:
            return
        slot, work = rt.slot, rt.booked
        assert slot is not None and work is not None
        if slot.is_missed(self._loop.time()):
            self.stats.missed_slots += 1
            rt.slot = None
            self._book(rt, work)  # the forfeited slot stays consumed: no bunching
            return
        rt.booked, rt.slot = None, None
        if work is ROBOTS_WORK:
            self._start(rt, self._fetch_robots(rt))
        else:
            self._start(rt, self._fetch_url(rt, cast(LeasedUrl, work), slot.cost))

    def _start(self, rt: SiteRuntime, coro: Any) -> None:
        assert self._loop is not None
        rt.in_flight += 1
        self._in_flight += 1
        # Reserve the spacing now; the real start (after DNS) moves it later if needed.
        rt.next_start = max(rt.next_start, self._loop.time() + rt.interval)
        task = self._loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(lambda t: self._finished(rt, t))

    def _finished(self, rt: SiteRuntime, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        rt.in_flight -= 1
        self._in_flight -= 1
        if not task.cancelled() and task.exception() is not None:
            log.error("fetch task for %s failed", rt.site, exc_info=task.exception())
            self.stats.internal_errors += 1
        self._arm(rt)
        self._release()

    def _next_allowed(self, rt: SiteRuntime) -> LeasedUrl | None:
        """The next URL to fetch: fastlane and freshlane first, then refresh or discovery as
        the split decides; URLs robots.txt refuses cost no request."""
        token = self.config.fetch.user_agent_token
        while rt.queue:
            item = self._pick(rt)
            assert rt.robots is not None
            if rt.robots.allows(item.fetch_url, token):
                return item
            self.stats.refused["robots"] += 1
            self._outcome(item.id, UrlStatus.REFUSED, None)
        if not rt.store_empty:
            self._request_refill(rt)
        return None

    def _pick(self, rt: SiteRuntime) -> LeasedUrl:
        """Remove and return the queued URL to serve next (the queue holds a few dozen)."""
        first: dict[UrlLane, int] = {}
        for index, queued in enumerate(rt.queue):
            first.setdefault(queued.lane, index)
        for lane in (UrlLane.FASTLANE, UrlLane.FRESHLANE):
            if lane in first:
                return self._take(rt, first[lane])
        target = target_discovery_share(rt.backlog, 1.0 / rt.interval, self._split)
        lane_chosen, rt.split = split_decide(
            rt.split,
            target,
            discovery_ready=UrlLane.DISCOVERY in first,
            refresh_ready=UrlLane.REFRESH in first,
        )
        if lane_chosen is SplitLane.REFRESH:
            return self._take(rt, first[UrlLane.REFRESH])
        if UrlLane.DISCOVERY in first:
            rt.backlog = max(0, rt.backlog - 1)
            return self._take(rt, first[UrlLane.DISCOVERY])
        return rt.queue.popleft()

    @staticmethod
    def _take(rt: SiteRuntime, index: int) -> LeasedUrl:
        item = rt.queue[index]
        del rt.queue[index]
        return item

    def _mark_started(self, rt: SiteRuntime) -> None:
        assert self._loop is not None
        rt.next_start = max(rt.next_start, self._loop.time() + rt.interval)

    # -- fetching -----------------------------------------------------------------------

    async def _fetch_robots(self, rt: SiteRuntime) -> None:
        config = self.config.robots

        async def get(url: str, host: str) -> FetchResult | None:
            return await self._guarded_fetch(rt, url, host, robots=True)

        url = f"{rt.scheme}://{rt.site}/robots.txt"
        result = await fetch_robots(get, url, rt.host, config.max_redirects)
        if result is None and rt.refusal in TRANSIENT_REFUSALS:
            # DNS trouble says nothing about robots.txt: back off and ask again.
            self.feedback.back_off(rt, None, None)
            return
        status = None if result is None else result.status
        body = b"" if result is None else result.body
        rt.robots = rules_from_response(
            status,
            body,
            asyncio.get_running_loop().time(),
            max_age=config.max_age,
            retry_unreachable=config.retry_unreachable,
            max_bytes=config.max_bytes,
        )
        if self.config.frontier.sitemaps:
            self.discovery.queue_sitemaps(rt, rt.robots.sitemaps())
        delay = rt.robots.crawl_delay(self.config.fetch.user_agent_token)
        rt.crawl_delay = delay or 0.0
        # The robots.txt request itself counts: the first page waits a full Crawl-delay.
        rt.next_start = max(rt.next_start, rt.last_sent + rt.interval)
        self.stats.robots[rt.robots.status.value] += 1

    async def _guarded_fetch(
        self, rt: SiteRuntime, url: str, host: str, *, robots: bool
    ) -> FetchResult | None:
        """Resolve ``host`` through the guard, then fetch ``url`` (a canonical fetch URL).

        None when the guard refuses; the reason is left in ``rt.refusal``.
        """
        resolution = await self.guard.resolve(host)
        if not resolution.allowed:
            rt.refusal = resolution.reason
            self.stats.refused[resolution.reason] += 1
            log.info("refused %s: %s (%s)", url, resolution.reason, resolution.detail)
            return None
        rt.refusal = None
        self._mark_started(rt)
        result = await self.fetcher.fetch(url, host, resolution.addresses)
        if result.sent_at is not None:
            # The server sees the request when its headers arrive: space from that moment.
            rt.last_sent = result.sent_at
            rt.next_start = max(rt.next_start, result.sent_at + rt.interval)
        self.stats.record_fetch(result, robots=robots)
        return result

    async def _fetch_url(self, rt: SiteRuntime, item: LeasedUrl, cost: float) -> None:
        assert self._loop is not None
        result = await self._guarded_fetch(rt, item.fetch_url, rt.host, robots=False)
        if result is None:
            if rt.refusal in TRANSIENT_REFUSALS:
                self.feedback.back_off(rt, None, None)
                self._retry_or_fail(rt, item, None)
            else:
                self._outcome(item.id, UrlStatus.REFUSED, None)
            return
        self.feedback.back_off(rt, result.status, result.retry_after)
        self.feedback.answered(rt, result)
        self.feedback.charge_response_type(rt, item, result, cost=cost)
        status = result.status
        if status is None or status in (429, 503):
            if not self._retry_or_fail(rt, item, status):
                self._document(item, result, None)
            return
        rt.attempts.pop(item.id, None)
        page: ParsedPage | None = None
        if 300 <= status < 400 and result.location:
            self.discovery.redirect(rt, item, result.location)
        elif 200 <= status < 300 and item.fetch_url in self.discovery.sitemaps:
            sitemap = await self._loop.run_in_executor(
                self._parse_pool, parse_sitemap_links, result.body, result.url
            )
            self.discovery.sitemap(rt, sitemap)
        elif 200 <= status < 300 and result.content_type.lower().startswith(_HTML_TYPES):
            page = await self._loop.run_in_executor(
                self._parse_pool, parse_page, result.body, result.url
            )
            self.discovery.page(rt, item, page)
            if target_of(item.fetch_url) == "/":
                self._observe_headers(rt, result)
        fingerprint = None
        if page is not None:
            fingerprint = page.fingerprint
        elif 200 <= status < 300 and result.body:
            # Not parsed (images, feeds, text): the raw bytes' MD5, cheap enough for the loop.
            fingerprint = hashlib.md5(result.body, usedforsecurity=False).hexdigest()
        self._outcome(item.id, UrlStatus.DONE, status, fingerprint)
        self._document(item, result, page)
        if item.lane is UrlLane.FRESHLANE:
            # A fast source falls due again in freshlane_interval: look for it then (after the
            # outcome has been written), not at the next idle-site sweep.
            delay = self.config.frontier.freshlane_interval + 2 * self.config.crawl.flush_interval
            self._loop.call_later(delay, self._look_again, rt)

    def _observe_headers(self, rt: SiteRuntime, result: FetchResult) -> None:
        """The home page's headers (and, over https, the certificate) are evidence for origin
        inference at no extra request: headers are kept only where DNS is indeterminate,
        certificates corroborate; both count from the next re-check."""
        if self.origins is None or rt.host in self._observed_hosts or result.status is None:
            return
        self._observed_hosts.add(rt.host)
        # Only a not-found page's body counts in a fingerprint: the home page's headers are
        # what matters, so its body (maybe megabytes) is not hashed on the event loop.
        home = probe_response(result.status, list(result.headers), b"", rt.host)
        if self.origins.observe(rt.host, home, None):
            self.stats.header_evidence += 1
            self._new_evidence.set()
        if result.peercert is not None and self.origins.observe_tls(
            rt.host, tls_facts(result.peercert, result.peercert_der)
        ):
            self.stats.tls_evidence += 1
            self._new_evidence.set()

    def _retry_or_fail(self, rt: SiteRuntime, item: LeasedUrl, status: int | None) -> bool:
        """Queue ``item`` again (True) unless it has used its attempts (False: failed)."""
        rt.attempts[item.id] += 1
        if rt.attempts[item.id] < MAX_ATTEMPTS and not rt.backoff.suspended:
            rt.queue.appendleft(item)
            return True
        self._outcome(item.id, UrlStatus.FAILED, status)
        return False

    def _outcome(
        self,
        url_id: int,
        status: UrlStatus,
        http_status: int | None,
        fingerprint: str | None = None,
    ) -> None:
        self._outcomes.append(Outcome(url_id, status, http_status, time.time(), fingerprint))

    def _document(self, item: LeasedUrl, result: FetchResult, page: ParsedPage | None) -> None:
        record: dict[str, Any] = {
            "url": item.fetch_url,
            "site": item.site,
            "depth": item.depth,
            "status": result.status,
            "fetched_at": round(result.started_at, 3),
            "elapsed_ms": round(result.elapsed * 1000, 1),
            "content_type": result.content_type,
            "bytes": len(result.body),
        }
        if result.truncated:
            record["truncated"] = True
        if result.error:
            record["error"] = result.error
        if result.location:
            record["location"] = result.location
        if page is not None:
            record["title"] = page.title
            record["links"] = [link.fetch_url for link in page.links]
            record["images"] = [image.fetch_url for image in page.images]
        self.sink.write(record)

    # -- background loops ---------------------------------------------------------------

    def _request_refill(self, rt: SiteRuntime) -> None:
        if not rt.refill_requested:
            rt.refill_requested = True
            self._refill.add(rt.site)
            self._refill_event.set()

    async def _refill_loop(self) -> None:
        limit = self.config.crawl.queue_per_site
        while True:
            await self._refill_event.wait()
            self._refill_event.clear()
            sites, self._refill = self._refill, set()
            leased = await self._db(self._lease_many, sorted(sites), limit)
            for site in sites:
                rt = self._sites[site]
                rt.refill_requested = False
                items = leased.get(site, [])
                rt.store_empty = len(items) < limit
                rt.queue.extend(items)
                if items or rt.robots is None:
                    self._arm(rt)

    def _lease_many(self, sites: list[str], limit: int) -> dict[str, list[LeasedUrl]]:
        # Due work of every lane, in serving order: fastlane, freshlane, refresh, discovery.
        # When due work fills a site's batch without discovery, lease some discovery too, so
        # the split has both lanes to choose from.
        now = time.time()
        leased = self.frontier.lease_due(limit, sites, now)
        for site, items in leased.items():
            if len(items) >= limit and all(i.lane is not UrlLane.DISCOVERY for i in items):
                items.extend(self.frontier.lease(site, max(1, limit // 2), now))
        return leased

    def _look_again(self, rt: SiteRuntime) -> None:
        if not self._stopping and not rt.queue:
            rt.store_empty = False
            self._request_refill(rt)

    async def _due_loop(self) -> None:
        """Look again for sites whose store had nothing due: refresh work falls due with time,
        and ``courtier recrawl`` (fastlane) can add work from another process."""
        while True:
            await asyncio.sleep(self.config.crawl.due_recheck)
            for rt in self._sites.values():
                if rt.store_empty:
                    self._look_again(rt)

    async def _infer_origins(self) -> None:
        """Infer origins of the seed sites before their first booking, then keep them fresh:
        DNS answers expire, and a site whose origin changes books on its new one."""
        if self.origins is None:
            self._origins_ready.set()
            return
        hosts = sorted({rt.host for rt in self._sites.values()})
        try:
            result = await self.origins.add(hosts)
        finally:
            self._origins_ready.set()
        while True:
            self.stats.origins = len({a.origin for a in result.assignments.values()})
            await self._db(self._save_origins, result)
            for change in result.changes:
                self._carry_origin_clock(change.old, change.new)
                for rt in self._sites.values():
                    if rt.host == change.site and rt.origin is not UNRESOLVED:
                        rt.origin = change.new
            # Re-check when DNS answers expire, or soon after new header evidence arrived
            # (a short wait gathers the home pages of many sites into one re-clustering).
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._new_evidence.wait(), self.config.crawl.origin_recheck)
                await asyncio.sleep(EVIDENCE_SETTLE)
            self._new_evidence.clear()
            result = await self.origins.recheck()

    def _carry_origin_clock(self, old: str | None, new: str) -> None:
        """A site that moves to another origin id (new evidence renamed or regrouped it)
        brings its old origin's clock along: a fresh key must not let it start early."""
        if old is None or old == new:
            return
        before = self._tats.get(f"origin:{old}")
        if before is not None:
            key = f"origin:{new}"
            self._tats[key] = max(self._tats.get(key, before), before)

    def _save_origins(self, result: InferenceResult) -> None:
        with OriginStore(self.store_path) as store:
            store.save(result.assignments.values(), time.time(), result.recheck_at)

    async def _flush_loop(self) -> None:
        while True:
            await asyncio.sleep(self.config.crawl.flush_interval)
            await self._flush()

    async def _flush(self) -> None:
        new_urls, horizon, edges, evictions = self.discovery.drain()
        outcomes, self._outcomes = self._outcomes, []
        if not (new_urls or outcomes or horizon or evictions):
            return
        fed = await self._db(
            self._write, new_urls, outcomes, horizon, evictions, edges, time.time()
        )
        self.sink.flush()
        self.stats.new_urls += len(new_urls)
        for site in fed:
            rt = self._sites.get(site)
            if rt is not None and rt.store_empty:
                rt.store_empty = False
                if not rt.queue:
                    self._request_refill(rt)

    def _write(
        self,
        new_urls: list[NewUrl],
        outcomes: list[Outcome],
        horizon: list[HorizonLink],
        evictions: list[tuple[str, int]],
        edges: list[HostEdge],
        now: float,
    ) -> list[str]:
        fed = self.frontier.write_batch(new_urls, outcomes, horizon, now, host_edges=edges)
        for site, cap in evictions:
            self.stats.evicted += self.frontier.evict_deeper(site, cap)
        return fed

    async def _rank_loop(self) -> None:
        """The controlled crawl's cycle: rank the host graph, promote the best horizon hosts,
        and crawl them from now on (scope, origin, robots.txt and all)."""
        k = self.config.frontier.promote
        if k <= 0:
            return
        while True:
            await asyncio.sleep(self.config.frontier.rank_every)
            await self._flush()  # rank what has been seen, not what is still in memory
            try:
                cycle, _seen, _n = await self._db(ranking_cycle, self.frontier, k, time.time())
            except GraphError as exc:
                log.warning("ranking cycle skipped: %s", exc)
                continue
            for decision in cycle.promoted:
                self._admit_site(decision.host)
                self.stats.promoted.append((decision.host, decision.score))

    def _admit_site(self, site: str) -> None:
        """A site joins the seed while the crawl runs (its root URL is in the store)."""
        if site in self._sites:
            return
        self._scope.add(site)
        rt = SiteRuntime(
            site=site,
            host=host_of_site(site),
            backoff=BackoffState(interval=self.config.site_interval),
            margin=self.config.politeness.start_margin,
        )
        rt.depth_cap = decide_depth_cap(0, None, self._surface_policy).cap
        self._sites[site] = rt
        if self.origins is not None:
            task = asyncio.get_running_loop().create_task(self._infer_one(rt))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        else:
            self._request_refill(rt)

    async def _infer_one(self, rt: SiteRuntime) -> None:
        assert self.origins is not None
        await self.origins.add([rt.host])
        self._request_refill(rt)

    async def _lag_monitor(self) -> None:
        """Sample how late the event loop wakes: the root cause of missed slots."""
        assert self._loop is not None
        period = 0.05
        while True:
            before = self._loop.time()
            await asyncio.sleep(period)
            self.stats.record_lag(self._loop.time() - before - period)
