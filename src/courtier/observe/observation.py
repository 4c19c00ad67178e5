"""``Observation``: the engine's observer, fanning every request out to the request log,
the metrics and the anomaly detector, and keeping the run's progress.

Theory of operation:
- ``request(event)`` runs on the event loop for every request and only appends the event
  to a queue (a deque append: well under a microsecond). One thread, the observer's, owns
  everything else: it turns events into rows, counts them into the metrics, feeds the
  anomaly detector, writes Parquet, ``OUT/anomalies.jsonl``, ``OUT/samples.jsonl`` and
  ``OUT/stats.json``. Events are immutable, so handing them over needs no lock; nothing the
  thread owns is touched by the loop.
- On the loop, a sampler reads the crawl's own counters and gauges (``CrawlSample``, from a
  probe) every ``sample_seconds``, and measures how late it woke (event loop lag). A probe
  that can count the frontier store's URLs (``EngineProbe.frontier_counts``) is asked every
  ``frontier_seconds``, never more than 2% of the time (a count is a scan on the store's
  thread); samples carry the last count. The progress view renders what the thread last
  published.
- A raised anomaly is a warning log line (structured: ``extra={"fields": ...}``), a metric,
  a row in ``OUT/anomalies.jsonl``; with ``anomaly_slowdown`` on, ``slow_down(anomaly)`` is
  called on the event loop, where the engine may slow the origin down.
- ``stop()`` (or leaving ``async with``) takes a last sample, processes every queued event
  and closes the files: after a clean stop the request log holds every request.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from prometheus_client import CollectorRegistry, start_http_server
from rich.console import Console

from courtier.observe.anomaly import Anomaly, AnomalyDetector
from courtier.observe.budgets import allowance_from, budget_from, slack_from
from courtier.observe.metrics import CrawlMetrics
from courtier.observe.probe import CrawlSample, FrontierCounts, Probe
from courtier.observe.progress import Loads, ProgressReporter, ProgressView, cancel
from courtier.observe.requestlog import RequestLogWriter, safe_name
from courtier.observe.rows import RequestRow, RowMaker, warm_up
from courtier.observe.settings import ObserveSettings
from courtier.pipeline.events import RequestEvent
from courtier.politeness.keys import CostModel, LimitPolicy, origin_key

log = logging.getLogger("courtier.observe")
anomaly_log = logging.getLogger("courtier.observe.anomaly")

ANOMALIES_FILE = "anomalies.jsonl"
SAMPLES_FILE = "samples.jsonl"
STATS_FILE = "stats.json"
TICK = 0.2
"""Seconds the observer's thread sleeps between batches."""

__all__ = ["Observation", "budget_from", "default_worker", "slack_from"]


def default_worker() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


class Observation:
    """The observer of one crawl (implements ``courtier.pipeline.events.Observer``)."""

    def __init__(
        self,
        out_dir: Path,
        settings: ObserveSettings | None = None,
        *,
        limits: LimitPolicy | None = None,
        costs: CostModel | None = None,
        registry: CollectorRegistry | None = None,
        console: Console | None = None,
        slow_down: Callable[[Anomaly], None] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``limits`` and ``costs`` are the crawl's (``config.limits.policy()``,
        ``config.costs.model()``): budgets and cost classes in rows come from them."""
        self.out_dir = out_dir
        self.settings = settings = settings or ObserveSettings()
        self.clock = clock
        policy = limits or LimitPolicy()
        allowance = allowance_from(policy)  # the policy is asked once per key
        self.budget_of = budget_from(policy, allowance)
        self.slack_of = slack_from(policy, allowance)
        self.worker = settings.worker or default_worker()
        started = clock()
        self.run_id = (
            time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(started)) + "-" + safe_name(self.worker)
        )
        self._events: deque[RequestEvent] = deque()
        self._controls: deque[tuple[str, Any]] = deque()
        self._wake = threading.Event()
        self._closing = False
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._probe: Probe | None = None
        self._frontier: FrontierCounts | None = None
        self._frontier_counts: dict[str, int] = {}
        self._server: Any = None
        self._slow_down = slow_down
        self.console = console or Console(stderr=True)
        # -- owned by the observer's thread from start() on --
        self.rows = RowMaker(costs or CostModel(), self.budget_of)
        self.metrics = CrawlMetrics(registry, pending=lambda: len(self._events))
        self.detector = AnomalyDetector(settings, self.budget_of)
        self.loads = Loads(
            lambda origin: self.origin_budget(origin), lambda origin: self.origin_slack(origin)
        )
        self.request_log: RequestLogWriter | None = None
        self.anomalies_raised = 0
        self.internal_errors = 0
        self._last_sample: CrawlSample | None = None
        self._last_stats = started
        self._view: ProgressView | None = None
        self.started_at = started

    # -- the Observer protocol (event loop) -------------------------------------------------

    def request(self, event: RequestEvent) -> None:
        self._events.append(event)

    # -- wiring -----------------------------------------------------------------------------

    def watch(self, probe: Probe) -> None:
        """Where the crawl's counters and gauges come from (e.g. ``engine_probe(engine)``;
        a probe with a ``frontier_counts`` coroutine gets the frontier counted too)."""
        self._probe = probe
        self._frontier = getattr(probe, "frontier_counts", None)

    def origin_budget(self, origin: str | None) -> float | None:
        return None if origin is None else self.budget_of(origin_key(origin))

    def origin_slack(self, origin: str | None) -> float:
        """Seconds an origin's GCRA lets requests start beyond its rate: its burst tolerance
        plus its slot width (``progress.gcra_bound``)."""
        return 0.0 if origin is None else self.slack_of(origin_key(origin))

    @property
    def registry(self) -> CollectorRegistry:
        return self.metrics.registry

    @property
    def metrics_port(self) -> int | None:
        """The port the metrics server listens on (None: no server)."""
        return None if self._server is None else int(self._server.server_address[1])

    @property
    def view(self) -> ProgressView | None:
        return self._view

    def redacted(self, kind: str, count: int = 1) -> None:
        """The document sink redacted ``count`` values of ``kind`` (api-key, email, ...)."""
        self.metrics.redacted(kind, count)

    # -- lifecycle --------------------------------------------------------------------------

    async def __aenter__(self) -> Observation:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    async def start(self) -> None:
        """Start the thread, the metrics server and, on the loop, the sampler and progress."""
        self.out_dir.mkdir(parents=True, exist_ok=True)
        s = self.settings
        if s.request_log:
            self.request_log = RequestLogWriter(
                self.out_dir, s, run=self.run_id, worker=self.worker, clock=self.clock
            )
        if s.metrics_port is not None:
            self._server, _thread = start_http_server(
                s.metrics_port, addr=s.metrics_host, registry=self.metrics.registry
            )
            log.info("metrics on http://%s:%d/metrics", s.metrics_host, self.metrics_port)
        self._thread = threading.Thread(target=self._run, name="courtier-observer", daemon=True)
        self._thread.start()
        self._loop = asyncio.get_running_loop()
        self._tasks.append(asyncio.create_task(self._sampler()))
        if self._frontier is not None and s.frontier_seconds > 0:
            self._tasks.append(asyncio.create_task(self._frontier_sampler(self._frontier)))
        reporter = ProgressReporter(
            lambda: self._view, self.console, live=s.live, every=s.progress_seconds
        )
        if not reporter.live:
            progress_log = logging.getLogger("courtier.observe.progress")
            if progress_log.level == logging.NOTSET:
                progress_log.setLevel(logging.INFO)
        self._tasks.append(asyncio.create_task(reporter.run()))

    async def flush(self) -> None:
        """Wait until every event so far is counted and written to a complete file."""
        if self._thread is None:
            return
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()

        def finished() -> None:
            loop.call_soon_threadsafe(_resolve, done)

        self._controls.append(("flush", finished))
        self._wake.set()
        await done

    async def stop(self) -> None:
        for task in self._tasks:
            await cancel(task)
        self._tasks.clear()
        self._take_sample(None)
        if self._thread is not None:
            self._closing = True
            self._wake.set()
            await asyncio.to_thread(self._thread.join)
            self._thread = None
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    # -- the loop side ----------------------------------------------------------------------

    async def _sampler(self) -> None:
        loop = asyncio.get_running_loop()
        period = self.settings.sample_seconds
        while True:
            before = loop.time()
            await asyncio.sleep(period)
            self._take_sample(max(0.0, loop.time() - before - period))

    def _take_sample(self, lag: float | None) -> None:
        if self._probe is None:
            return
        try:
            sample = self._probe()
        except Exception:  # a probe must never break the crawl
            log.exception("the crawl probe failed")
            return
        if lag is not None:
            sample = dataclasses.replace(sample, loop_lag=lag)
        if not sample.frontier and self._frontier_counts:  # the end's count wins when there
            sample = dataclasses.replace(sample, frontier=self._frontier_counts)
        self._controls.append(("sample", sample))

    async def _frontier_sampler(self, counts: FrontierCounts) -> None:
        """Count the frontier's URLs every ``frontier_seconds``, and never more than 2% of
        the time (a count is a scan of the store; its thread also leases and writes)."""
        loop = asyncio.get_running_loop()
        while True:
            began = loop.time()
            try:
                found = await counts()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a count must never break the crawl
                log.debug("the frontier could not be counted: %s", exc)
                found = None
            took = loop.time() - began
            if found is None:  # the store is not open yet: ask again soon
                await asyncio.sleep(1.0)
                continue
            self._frontier_counts = found
            await asyncio.sleep(max(self.settings.frontier_seconds, 50 * took, 1.0))

    # -- the observer's thread --------------------------------------------------------------

    def _run(self) -> None:
        if self.request_log is not None:
            warm_up()
        anomalies = self.out_dir / ANOMALIES_FILE
        samples = self.out_dir / SAMPLES_FILE
        with (
            anomalies.open("a", encoding="utf-8") as a_file,
            samples.open("a", encoding="utf-8") as s_file,
        ):
            while not self._closing:
                self._wake.wait(TICK)
                self._wake.clear()
                self._batch(a_file, s_file)
            self._batch(a_file, s_file)
            self._finish()

    def _batch(self, a_file: Any, s_file: Any) -> None:
        try:
            self._drain(a_file, s_file)
        except Exception:
            self.internal_errors += 1
            log.exception("the observer failed on a batch; it goes on")

    def _drain(self, a_file: Any, s_file: Any) -> None:
        raised: list[Anomaly] = []
        events, rows, metrics, detector, loads = (
            self._events,
            self.rows,
            self.metrics,
            self.detector,
            self.loads,
        )
        request_log = self.request_log
        watch = self.settings.anomalies
        row_of, popleft, add, observe = rows.row_of, events.popleft, loads.add, detector.observe
        batch: list[RequestRow] = []
        try:
            while events:
                row = row_of(popleft())
                batch.append(row)
                add(row)
                if watch:
                    raised += observe(row)
        finally:  # a row that broke the detector is still counted and logged
            metrics.record_all(batch)  # one lock for the batch, not one a row
            if request_log is not None:
                request_log.add_all(batch)
        now = self.clock()
        if watch:
            raised += detector.advance(now)
        for anomaly in raised:
            self._announce(anomaly, a_file)
        flushes: list[Callable[[], None]] = []
        while self._controls:
            kind, value = self._controls.popleft()
            if kind == "sample":
                self._sampled(value, s_file)
            elif kind == "flush":
                flushes.append(value)
        if request_log is not None:
            before = request_log.rows_written
            if flushes:
                request_log.flush(now)
            else:
                request_log.maybe_flush(now)
            metrics.written(request_log.rows_written - before, len(request_log.files))
        a_file.flush()
        self._view = loads.view(now, self.rows_written, len(detector.active), self.started_at)
        if now - self._last_stats >= self.settings.stats_seconds:
            self._write_stats(now)
        for resolve in flushes:
            resolve()

    @property
    def rows_written(self) -> int:
        return self.request_log.rows_written if self.request_log is not None else 0

    def _sampled(self, sample: CrawlSample, s_file: Any) -> None:
        self._last_sample = sample
        self.metrics.sampled(sample)
        self.loads.sampled(sample)
        s_file.write(json.dumps(sample.to_json(), default=str) + "\n")
        s_file.flush()

    def _announce(self, anomaly: Anomaly, a_file: Any) -> None:
        data = anomaly.to_json()
        a_file.write(json.dumps(data) + "\n")
        self.metrics.anomaly(anomaly)
        if anomaly.state == "raised":
            self.anomalies_raised += 1
        anomaly_log.warning(
            "anomaly %s: %s %s %s: %s",
            anomaly.state,
            anomaly.scope,
            anomaly.name,
            anomaly.signal,
            anomaly.detail,
            extra={"fields": {"anomaly": data}},
        )
        hook, loop = self._slow_down, self._loop
        if hook is not None and self.settings.anomaly_slowdown and loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody to tell
                loop.call_soon_threadsafe(hook, anomaly)

    def _finish(self) -> None:
        if self.request_log is not None:
            try:
                before = self.request_log.rows_written
                self.request_log.close()
                written = self.request_log.rows_written - before
                self.metrics.written(written, len(self.request_log.files))
            except Exception:
                self.internal_errors += 1
                log.exception("the request log could not be closed")
        self._write_stats(self.clock())

    def stats(self, now: float) -> dict[str, Any]:
        """What ``OUT/stats.json`` holds: the crawl's counters and the observer's own."""
        sample = self._last_sample
        crawl: dict[str, Any] = dict(sample.stats) if sample is not None else {}
        view = self._view
        return {
            "time": now,
            "run": self.run_id,
            "worker": self.worker,
            "elapsed_s": round(now - self.started_at, 3),
            "crawl": crawl,
            "in_flight": dict(sample.in_flight) if sample is not None else {},
            "queues": dict(sample.queues) if sample is not None else {},
            "progress": view.fields() if view is not None else {},
            "observer": {
                "requests": self.loads.requests,
                "rows_written": self.rows_written,
                "files": [p.name for p in (self.request_log.files if self.request_log else [])],
                "anomalies_raised": self.anomalies_raised,
                "anomalies_active": [a.to_json() for a in self.detector.active.values()],
                "internal_errors": self.internal_errors,
            },
        }

    def _write_stats(self, now: float) -> None:
        """``stats.json``, and ``stats-WORKER.json``: workers sharing one output directory
        each keep their own (``stats.json`` is the last one written)."""
        self._last_stats = now
        text = json.dumps(self.stats(now), indent=1, default=str) + "\n"
        for name in (STATS_FILE, f"stats-{safe_name(self.worker)}.json"):
            path = self.out_dir / name
            temporary = path.with_name(f".{path.name}.tmp")
            temporary.write_text(text)
            os.replace(temporary, path)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
