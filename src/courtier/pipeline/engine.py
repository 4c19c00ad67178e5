"""The crawl engine: starts, wires and stops the stages; the rules live in the stages.

The flow of one URL: seed (``seeding``) -> frontier store (``frontier_io``: leases in,
outcomes out, one store thread) -> a lane (``pages``: a seed site; ``media``: a media key)
-> the scheduler (``scheduler``: arm, book on ``KeyClocks``, launch in the slot or rebook)
-> the guarded fetch (``fetching``) -> the answer (``answers``: retry, redirect, parse;
``feedback`` + ``apply``: backoff, origin push-back, latency, late charges) -> discovery
(``discovery``: new URLs inside the seed, horizon outside, media requisites) -> the store
and the document sink. Origins are tracked live (``origins_live``); a ranking cycle can
promote horizon hosts into the seed while the crawl runs.

Stopping (deadline, SIGINT, SIGTERM, a budget spent, ``until_done`` and nothing due:
``ending``): no new starts, in-flight requests get a grace, pending writes are flushed, the
run's spend and the key clocks' floors are saved through the store, so a quick restart
starts no key early. Leased-but-unfinished URLs go back to the queue on the next start, so
a second run resumes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any

from courtier.config import Config
from courtier.frontier.base import FrontierStore, StoredRobots
from courtier.net.fetch import Fetcher
from courtier.net.guard import Guard
from courtier.net.spool import Spool
from courtier.origins.infer import InferenceResult, OriginInference
from courtier.pipeline.answers.fetching import FetcherLike
from courtier.pipeline.backends import idle_connections, open_backends
from courtier.pipeline.cluster.membership import Cluster, ClusterSpec
from courtier.pipeline.ending import EndWatch, drain, grace, open_budget, wait_for_end
from courtier.pipeline.events import Observer
from courtier.pipeline.feed.discovery import Discovery
from courtier.pipeline.feed.fresh_sources import FreshSources
from courtier.pipeline.feed.frontier_io import FrontierIO
from courtier.pipeline.feed.intake import UrlIntake
from courtier.pipeline.feed.promotion import rank_loop
from courtier.pipeline.feed.scope import ScopeRules
from courtier.pipeline.in_flight import bound_loop
from courtier.pipeline.keeping.archive import archived, document_sink, redaction_policy
from courtier.pipeline.lanes.controls import Controls
from courtier.pipeline.lanes.origins_live import infer_early
from courtier.pipeline.lanes.rendering import Renderer
from courtier.pipeline.lanes.seeding import SeedSites, adopt, freshlane_urls, seed_store
from courtier.pipeline.recovery import (
    adopt_robots,
    after_crash,
    floors_at_stop,
    load_inherited,
    restore_floors,
)
from courtier.pipeline.scheduling.budget import Budget
from courtier.pipeline.scheduling.clocks import KeyClocks
from courtier.pipeline.scheduling.timer import LoopTimer, Timer
from courtier.pipeline.stats import CrawlStats, sample_load, sample_loop_lag
from courtier.pipeline.wiring import Parts, Stages, open_renderer, wire
from courtier.pipeline.workers.crawl_pool import crawl_parse_pool
from courtier.politeness.limiter.base import Limiter
from courtier.runtime.gc_pacing import GcPacing
from courtier.sinks.documents import Sink
from courtier.url import Url, host_of_site

log = logging.getLogger(__name__)


class Engine:
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
        store: FrontierStore | None = None,
        limiter: Limiter | None = None,
        fetcher: FetcherLike | None = None,
        timer: Timer | None = None,
        sink: Sink | None = None,
        observer: Observer | None = None,
        handle_signals: bool = True,
        cluster: ClusterSpec | None = None,
        renderer: Renderer | None = None,
        until_done: bool = False,
    ) -> None:
        """``until_done``: end once nothing is due (``ending``). After ``origins``, optional
        wiring: store, limiter, fetcher, timer (defaults: SQLite
        at ``store_path``, the configured limiter, our fetcher, wall clock), the document sink
        (``out_dir/documents/``), an observer of every request, and whether SIGINT and
        SIGTERM stop the crawl (an embedding program may keep its own handlers), and a
        renderer for pages that need a browser (default: Chromium, when ``[render]`` and the
        machine allow)."""
        self.config = config
        self._renderer = renderer
        self.store_path = store_path
        self.out_dir = out_dir
        self.guard = guard
        self.address_allowed = address_allowed
        self.seeds = seeds
        self.duration, self.until_done = duration, until_done
        self.budget: Budget | None = None
        self.inference = origins
        self._store, self._limiter, self._fetcher, self._timer = store, limiter, fetcher, timer
        self._sink, self.observer, self._handle_signals = sink, observer, handle_signals
        self.cluster_spec = cluster
        self.cluster: Cluster | None = None
        self.stats = CrawlStats()
        self.gc_pacing = GcPacing(pauses=self.stats.gc_pauses)
        self.tasks: set[asyncio.Task[None]] = set()
        self._stopping, self._stopped = False, asyncio.Event()
        self._surface = config.frontier.surface_policy(config.crawl.max_depth)
        shared = cluster is not None
        self.seed = SeedSites(config, self._surface, lambda: self.timer.now(), shared=shared)
        self.sites, self.scope = self.seed.lanes, self.seed.scope
        self.intake = UrlIntake(self.stats.refused, redaction_policy(self.config))
        self.discovery = Discovery(
            self.sites,
            self.scope,
            self.stats,
            guard.policy,
            self._surface,
            self.intake,
            rules=ScopeRules(config.scope),
            adopt=self._adopt,
            sitemap_fallback=config.frontier.sitemap_fallback,
        )
        self.stages: Stages | None = None
        """The wired stages (``wiring``), once the backends are open."""
        self._began = time.monotonic()
        self._early_origins: asyncio.Task[InferenceResult] | None = None

    def stop(self, reason: str = "stopped") -> None:
        """Stop starting requests; ``run`` returns after a grace for in-flight ones. The
        first ``reason`` is the crawl's ``ended_by`` (``ending``)."""
        if self._stopping:
            return
        log.info("stopping (%s): no new requests start", reason)
        self.stats.ended_by = reason
        self._stopping = True
        self._stopped.set()
        if self.stages is not None:  # else its schedulers are made stopped (``wiring``)
            self.stages.stop(list(self.sites.values()))

    # -- the run ------------------------------------------------------------------------

    async def run(self) -> CrawlStats:
        loop = asyncio.get_running_loop()
        self.timer = self._timer or LoopTimer(loop)
        self._began = time.monotonic()
        backends = await open_backends(
            self.config,
            self.store_path,
            self.timer.now,
            cluster=self.cluster_spec,
            store=self._store,
            limiter=self._limiter,
        )
        self.lock, limiter = backends.lock, backends.limiter
        store, crawl = backends.store, self.config.crawl
        self.frontier = FrontierIO(store, queue_per_site=crawl.queue_per_site, now=self.timer.now)
        self.frontier.outage = crawl.store_outage
        self.discovery.fresh = FreshSources.of(self.config, self.frontier, self.timer)
        policy, persist = self.config.limits.policy(), self._save_floors_now
        self.clocks = KeyClocks(limiter, policy, persist=persist, timer=self.timer)
        self.controls = Controls(
            self.config, self.frontier, self.seed, self.timer, self.stats, self.clocks
        )
        self.parser = crawl_parse_pool(self.config)
        sink = self._sink or document_sink(self.config, self.out_dir)
        self.sink = archived(self.config, self.out_dir, sink, self.stats)
        signals = (signal.SIGINT, signal.SIGTERM) if self._handle_signals else ()
        for sig in signals:
            # Not the main thread (e.g. under a test runner's thread): no signal handling.
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self.stop, "signal")
        started, clean = time.monotonic(), False
        try:
            await self._begin()
            await self._start_up()
            async with contextlib.AsyncExitStack() as stack:
                fetcher = self._fetcher
                if fetcher is None:
                    settings = self.config.fetch
                    spool = Spool(self.out_dir, settings.spool_bytes)
                    spool.remove_orphans()
                    stack.callback(spool.close)
                    fetcher = await stack.enter_async_context(
                        Fetcher(
                            settings,
                            self.address_allowed,
                            spool,
                            max_idle=idle_connections(self.config),
                        )
                    )
                renderer = self._renderer or await stack.enter_async_context(
                    open_renderer(self.config)
                )
                self.stages = stages = wire(self._parts(renderer), fetcher)
                self.controls.wire(
                    stages.pages, stages.feeder, stages.origins, stages.site_lanes.rendering
                )
                await self._take_over(stages)
                await self._crawl(stages)
            await self._finish(stages)
            clean = True
        finally:
            if self.lock is not None:
                self.lock.release(clean=clean)
            for sig in signals:
                loop.remove_signal_handler(sig)
            self.sink.close()
            await self.frontier.close()
            await limiter.close()
            await self.parser.close()
            if self._early_origins is not None:
                self._early_origins.cancel()  # nothing if it is done
            self.gc_pacing.stop()
        self.stats.elapsed = time.monotonic() - started
        return self.stats

    async def _begin(self) -> None:
        """The parse workers' start goes to threads; then the collector's one full
        collection of the start, while nothing else is in flight; then origin inference's
        DNS, which runs while the store is seeded. After the DNS, the pause held every answer
        and timer of the start for 120-210 ms; before the workers' start, it held that up,
        and with it the first parse. What is built from here on is frozen as it survives its
        first young collection (gc_pacing's rules)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.parser.spawning(), 5.0)
        self.gc_pacing.start()
        seed_hosts = {host_of_site(url.site) for url in self.seeds}
        self._early_origins = infer_early(self.inference, seed_hosts)

    async def _start_up(self) -> None:
        shared = self.cluster_spec is not None
        begun, now = time.monotonic(), self.timer.now()
        released, scope = await self.frontier.call(
            lambda: seed_store(self.frontier.store, self.seeds, now, shared=shared)
        )
        if released:
            log.info("resuming: %d URLs leased by the last run are queued again", released)
        sizes = await self.frontier.call(self.frontier.store.site_sizes)
        await self.frontier.call(self.controls.load)
        self.seed.start(scope, self.seeds, sizes)
        self.stats.seed_sites = len(self.scope)
        log.info("%d seed sites in the store in %.1f s", len(scope), time.monotonic() - begun)
        self.inherited = await self.frontier.call(load_inherited, self.frontier.store, now)
        self.budget = await open_budget(self.config, self.frontier, self.stats, self.stop)
        self.stats.restored_clocks = await restore_floors(self.inherited, self.clocks, self.sites)
        await self.discovery.start_fresh(freshlane_urls(self.config, self.scope))

    def _parts(self, renderer: Renderer | None = None) -> Parts:
        return Parts(
            self.config,
            self.stats,
            self.timer,
            self.clocks,
            self.guard,
            self.observer,
            self.inference,
            self.frontier,
            self.seed,
            self.discovery,
            self.intake,
            self.parser,
            self.sink,
            self.tasks,
            lambda: self._stopping,
            self._lease_lost,
            self._save_robots,
            self._early_origins,
            self._began,
            renderer,
            self.budget,
        )

    async def _take_over(self, stages: Stages) -> None:
        """What the last run left: robots.txt answers, and clocks rebuilt after a crash; a
        worker of a shared crawl joins it (its sites come with the shards it takes)."""
        if self.cluster_spec is not None:
            self.cluster = Cluster(
                self.cluster_spec,
                self.config,
                seed=self.seed,
                site_lanes=stages.site_lanes,
                pages=stages.pages,
                frontier=self.frontier,
                timer=self.timer,
                stats=self.stats,
                flush=stages.feeder.flush,
            )
            await self.cluster.keeper.start()
        inherited, media = self.inherited, stages.media
        adopt_robots(inherited, self.config, self.sites, stages.site_lanes, media)
        if self.lock is not None and self.lock.previous_run_crashed:
            log.warning("the last crawl on this store did not stop cleanly: clocks rebuilt")
            now = self.timer.now()
            await after_crash(inherited, self.config, self.clocks, self.sites, media, now)

    async def _save_floors_now(self, floors: Mapping[str, float]) -> None:
        await self.frontier.call(self.frontier.store.save_clock_floors, floors, self.timer.now())

    async def _save_robots(self, stored: StoredRobots) -> None:
        await self.frontier.call(self.frontier.store.save_robots, [stored])

    def _load(self) -> tuple[int, int, int]:
        stages = self.stages
        assert stages is not None
        return self.parser.waiting, stages.pages.in_flight, stages.pages.max_in_flight

    async def _crawl(self, stages: Stages) -> None:
        loops: list[Coroutine[Any, Any, None]] = [
            stages.origins.run(),
            stages.feeder.flush_loop(),
            stages.feeder.due_loop(),
            rank_loop(
                self.config,
                self.frontier,
                self.stats,
                flush=stages.feeder.flush,
                admit=self.seed.admit,
                timer=self.timer,
            ),
            stages.feeder.refill_loop(),
            sample_loop_lag(self.stats),
            sample_load(self.stats, self._load),
            stages.pages.booker(),
            self.gc_pacing.run(),
            self.controls.run(),
            self.discovery.watch_fresh(),
        ]
        if stages.media_scheduler is not None:
            loops.append(stages.media_scheduler.booker())
        loops.append(bound_loop(self.config, self.timer, self.stats, stages, self.parser))
        if self.cluster is not None:
            loops.append(self.cluster.keeper.run())
        watch = EndWatch(self._parts(), stages, self.until_done, self.stop)
        loops.append(watch.run())
        background = [asyncio.create_task(coro) for coro in loops]
        try:
            for lane in list(self.sites.values()):
                stages.site_lanes.request_refill(lane)
            ends_at = await wait_for_end(self._stopped, self.duration, self.stop)
            left = ends_at - time.monotonic()
            await drain(self.tasks, grace(self.stats.ended_by, self.config, self.duration, left))
            await watch.finish()
            await self.clocks.flush_sent()
            await self._save_floors(stages)
        finally:
            for task in background:
                task.cancel()
            # Ended before the shards go back: a shard the keeper was taking while we cancel
            # would otherwise be held after stop() gave the others back, its URLs leased.
            await asyncio.gather(*background, return_exceptions=True)
            if self.cluster is not None:
                await self.cluster.keeper.stop()

    async def _finish(self, stages: Stages) -> None:
        await stages.feeder.flush()
        self.stats.evicted = self.frontier.evicted
        self.stats.store_counts = await self.frontier.call(self.frontier.store.counts)
        self.stats.top_horizon = await self.frontier.call(self.frontier.store.horizon_sites, 10)

    async def _save_floors(self, stages: Stages) -> None:
        now = self.timer.now()
        floors = await floors_at_stop(
            self.config, self.clocks, self.sites, stages.feedback, stages.media, now
        )
        await self.frontier.call(self.frontier.store.save_clock_floors, floors, now)

    # -- helpers the stages call --------------------------------------------------------

    def _adopt(self, site: str, scheme: str, owner: str, why: str) -> None:
        adopt(self.seed, self.frontier, self.stats, site, scheme, owner, why)

    def slow_origin(self, origin: str) -> None:
        """Halve ``origin``'s rate (an anomaly said so); nothing before the stages are wired."""
        if self.stages is not None:
            self.stages.feedback.slow_origin(origin)

    def _lease_lost(self, lane: Any) -> None:
        if self.cluster is not None:
            self.cluster.lease_lost(lane)
