"""Prometheus metrics of a crawl: low cardinality, ``courtier_`` names, base units.

Rules (Prometheus's naming conventions): counters end in ``_total``, durations are seconds,
sizes bytes; labels are bounded sets (status class, key type, lane, request kind, reason
codes, phase), never a host, site, origin or URL: that detail is the request log's. Each
``CrawlMetrics`` has its own ``CollectorRegistry``, so several crawls (or tests) in one
process never collide.

Two sources: per-request figures are counted from the request rows (on the observer's
thread), and the crawl's own counters and gauges (bookings, rebooks, queues, in flight) are
read from the latest ``CrawlSample`` when Prometheus scrapes. What the crawl writes (WARC,
documents), its frontier and its process are ``output_metrics``'.
"""

from __future__ import annotations

import math
import threading
from bisect import bisect_left
from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from courtier.observe.anomaly import Anomaly
from courtier.observe.output_metrics import by_label as _by
from courtier.observe.output_metrics import counter_family as _counter
from courtier.observe.output_metrics import gauge_family as _gauge
from courtier.observe.output_metrics import register_output_metrics
from courtier.observe.probe import CrawlSample
from courtier.observe.rows import RequestRow
from courtier.politeness.keys import KeyType

LANES = frozenset({"fastlane", "freshlane", "refresh", "discovery"})
SHARE_KINDS = ("target", "realised", "mean_target")
KEY_TYPES = frozenset(t.value for t in KeyType)
PHASES = ("dns", "connect", "tls", "first_byte", "total")
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
WAIT_BUCKETS = (0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60)
LATENESS_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5)
LAG_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)


def lane_label(row: RequestRow) -> str:
    """The frontier lane of a page; ``robots`` or ``media`` otherwise (media lanes are keys)."""
    if row.kind == "media":
        return "media"
    if row.kind.startswith("robots"):
        return "robots"
    return row.lane if row.lane in LANES else row.kind


def key_type_label(row: RequestRow) -> str:
    """The type of the request's own lane key (its first key: site, bucket, cdn, imgsvc)."""
    if not row.key_types:
        return "none"
    first = row.key_types[0]
    return first if first in KEY_TYPES else "other"


class _Sampled(Collector):
    """Counters and gauges the crawl keeps itself, from the latest sample."""

    def __init__(self, pending: Callable[[], int]) -> None:
        self.sample: CrawlSample | None = None
        self.pending = pending

    def collect(self) -> Iterable[Metric]:
        sample = self.sample
        yield _gauge(
            "courtier_observer_pending_events",
            "Events waiting for the observer",
            [((), float(self.pending()))],
        )
        if sample is None:
            return
        c = sample.counter
        yield _counter(
            "courtier_bookings", "Slots booked (each on every key of a request)", [((), c("slots"))]
        )
        yield _counter(
            "courtier_rebooks",
            "Slots forfeited because the start came too late, then booked again",
            [((), c("missed_slots"))],
        )
        yield _counter(
            "courtier_booking_refusals",
            "Bookings refused, by reason",
            [
                (("lead",), c("lead_refusals")),
                (("line",), c("line_joins")),
                (("gate",), c("gate_holds")),
            ],
            ["reason"],
        )
        yield _counter(
            "courtier_origin_pauses",
            "Origins paused by 429/503 from several sites",
            [((), c("origin_pauses"))],
        )
        yield _counter(
            "courtier_internal_errors",
            "Internal errors the crawl survived",
            [((), c("internal_errors"))],
        )
        yield _counter(
            "courtier_missed_cache_charges",
            "Unexpected cache misses charged to the customer's origin",
            [((), c("miss_charges"))],
        )
        yield _counter(
            "courtier_latency_slowdowns",
            "Rate cuts by latency feedback",
            _by(sample.stats.get("latency_slowdowns")),
            ["key_type"],
        )
        yield _counter(
            "courtier_origin_holds",
            "Origin-wide holds, by cause",
            _by(sample.stats.get("origin_backoffs")),
            ["cause"],
        )
        yield _counter(
            "courtier_blocked_links",
            "Links to addresses the SSRF policy blocks (recorded, never fetched), by reason",
            _by(sample.stats.get("bait_links")),
            ["reason"],
        )
        yield _counter(
            "courtier_renders",
            "Pages rendered in headless Chromium, by outcome (rendered, not-rendered, or why "
            "the render failed)",
            _by(sample.stats.get("renders")),
            ["outcome"],
        )
        yield _counter(
            "courtier_render_requests",
            "Requests of renders, by outcome (fetched, cached, revalidated, served, "
            "aborted:<reason>)",
            _by(sample.stats.get("render_requests")),
            ["outcome"],
        )
        yield _counter(
            "courtier_parse_hook_errors",
            "Pages the parse hook gave no fields, by kind (hook-error, hook-timeout, "
            "hook-not-dict, hook-not-json, hook-too-large, hook-bad-result)",
            _by(sample.stats.get("hook_errors")),
            ["kind"],
        )
        yield _counter(
            "courtier_documents_read",
            "PDFs and feeds read by their own readers, by format (pdf-error, feed-error: "
            "unreadable)",
            _by(sample.stats.get("formats")),
            ["format"],
        )
        split = sample.stats.get("split")
        shares = split if isinstance(split, dict) else {}
        yield _gauge(
            "courtier_discovery_share",
            "The crawl's discovery share of contested decisions: its target now, the share "
            "realised and the mean target over them",
            [
                ((k,), float(shares[k]))
                for k in ("target", "realised", "mean_target")
                if k in shares
            ],
            ["kind"],
        )
        yield _gauge("courtier_seed_sites", "Sites in the seed", [((), c("seed_sites"))])
        yield _gauge("courtier_origins", "Distinct origins of the seed sites", [((), c("origins"))])
        yield _gauge(
            "courtier_in_flight_requests",
            "Requests in flight, by scheduler",
            [((k,), float(v)) for k, v in sorted(sample.in_flight.items())],
            ["scheduler"],
        )
        bounds = sample.stats.get("in_flight_bounds") or {}
        yield _gauge(
            "courtier_in_flight_bound",
            "The in-flight bound chosen from the work, by scheduler (scheduling.concurrency)",
            [((k,), float(v.get("bound", 0))) for k, v in sorted(bounds.items())],
            ["scheduler"],
        )
        yield _gauge(
            "courtier_in_flight_needed",
            "Places the lanes with work need (Little's law over them), by scheduler",
            [((k,), float(v.get("needed", 0))) for k, v in sorted(bounds.items())],
            ["scheduler"],
        )
        yield _gauge(
            "courtier_in_flight_binding",
            "1 for what binds the requests in flight now (politeness, demand, cpu, machine, "
            "operator), by scheduler",
            [((k, str(v.get("binds", ""))), 1.0) for k, v in sorted(bounds.items())],
            ["scheduler", "binds"],
        )
        yield _gauge(
            "courtier_queue_depth",
            "Work waiting in memory, by queue",
            [((k,), float(v)) for k, v in sorted(sample.queues.items())],
            ["queue"],
        )
        yield _gauge(
            "courtier_lanes",
            "Lanes by scheduling phase",
            [((k,), float(v)) for k, v in sorted(sample.lanes.items())],
            ["phase"],
        )


class _Histogram:
    """Bucket counts of one labelled histogram (``le`` semantics: a value goes to the first
    bucket whose bound is at least the value)."""

    __slots__ = ("bounds", "counts", "total")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.total = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.total += value

    def cumulative(self) -> list[tuple[str, float]]:
        running = 0
        buckets: list[tuple[str, float]] = []
        for bound, count in zip((*self.bounds, math.inf), self.counts, strict=True):
            running += count
            buckets.append(("+Inf" if bound == math.inf else repr(float(bound)), float(running)))
        return buckets


class _Family:
    __slots__ = ("bounds", "children", "doc", "kind", "labels", "name")

    def __init__(
        self,
        name: str,
        doc: str,
        labels: tuple[str, ...],
        kind: str = "counter",
        bounds: tuple[float, ...] = (),
    ) -> None:
        self.name, self.doc, self.labels, self.kind, self.bounds = name, doc, labels, kind, bounds
        self.children: dict[tuple[str, ...], Any] = {}

    def add(self, labels: tuple[str, ...], amount: float = 1.0) -> None:
        self.children[labels] = self.children.get(labels, 0.0) + amount

    def observe(self, labels: tuple[str, ...], value: float) -> None:
        child = self.children.get(labels)
        if child is None:
            child = self.children[labels] = _Histogram(self.bounds)
        child.observe(value)

    def metric(self) -> Metric:
        if self.kind == "counter":
            counter = CounterMetricFamily(self.name, self.doc, labels=self.labels)
            for labels, value in sorted(self.children.items()):
                counter.add_metric(list(labels), value)
            return counter
        histogram = HistogramMetricFamily(self.name, self.doc, labels=self.labels)
        for labels, child in sorted(self.children.items()):
            histogram.add_metric(list(labels), child.cumulative(), child.total)
        return histogram


class _Accumulated(Collector):
    """Per-request counters and histograms as plain numbers under one lock: the observer's
    thread counts a row with dictionary updates, a scrape copies them out."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.families: list[_Family] = []

    def family(
        self,
        name: str,
        doc: str,
        labels: tuple[str, ...] = (),
        kind: str = "counter",
        bounds: tuple[float, ...] = (),
    ) -> _Family:
        family = _Family(name, doc, labels, kind, bounds)
        self.families.append(family)
        return family

    def collect(self) -> Iterable[Metric]:
        with self.lock:
            return [family.metric() for family in self.families]


class CrawlMetrics:
    """Every metric of one crawl, in its own registry (see the module rules)."""

    def __init__(
        self, registry: CollectorRegistry | None = None, pending: Callable[[], int] = lambda: 0
    ) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        acc = self._accumulated = _Accumulated()
        self.lock = acc.lock
        self.requests = acc.family(
            "courtier_requests",
            "Requests by kind, lane, status class (refused: the SSRF guard stopped it) and the "
            "type of the request's own limit key",
            ("kind", "lane", "status_class", "key_type"),
        )
        self.key_requests = acc.family(
            "courtier_key_requests",
            "Requests started, counted once on every limit key they were booked on, by key type",
            ("key_type",),
        )
        self.cost_units = acc.family(
            "courtier_cost_units",
            "Cost units of the requests sent (booked plus charged late)",
            ("kind",),
        )
        self.bytes = acc.family(
            "courtier_response_bytes", "Response body bytes (decompressed)", ("kind",)
        )
        self.refusals = acc.family(
            "courtier_ssrf_refusals", "Hosts the SSRF guard refused, by reason", ("reason",)
        )
        self.errors = acc.family(
            "courtier_fetch_errors", "Requests that got no answer, by failure", ("error",)
        )
        self.cache = acc.family(
            "courtier_cache_verdicts", "Cache verdicts of media answers", ("verdict",)
        )
        self.origin_changes = acc.family(
            "courtier_origin_changes", "Sites whose requests moved to another origin id"
        )
        self.phases = acc.family(
            "courtier_request_duration_seconds",
            "Request latency by phase (dns, connect, tls, first_byte, total)",
            ("phase",),
            "histogram",
            LATENCY_BUCKETS,
        )
        self.wait = acc.family(
            "courtier_slot_wait_seconds",
            "From booking to the slot's start",
            ("key_type",),
            "histogram",
            WAIT_BUCKETS,
        )
        self.lateness = acc.family(
            "courtier_slot_lateness_seconds",
            "How late requests started within their slots",
            ("key_type",),
            "histogram",
            LATENESS_BUCKETS,
        )
        r.register(acc)
        self.anomalies = Counter(
            "courtier_anomalies",
            "Anomalies raised, by scope and signal",
            ["scope", "signal"],
            registry=r,
        )
        self.active = Gauge(
            "courtier_anomalies_active",
            "Anomalies raised and not cleared",
            ["scope", "signal"],
            registry=r,
        )
        self.redactions = Counter(
            "courtier_redactions",
            "Values redacted from stored documents, by kind",
            ["kind"],
            registry=r,
        )
        self.log_rows = Counter(
            "courtier_request_log_rows", "Rows written to the request log", registry=r
        )
        self.log_files = Gauge(
            "courtier_request_log_files", "Parquet files of the request log", registry=r
        )
        self.lag = Histogram(
            "courtier_event_loop_lag_seconds",
            "How late the event loop woke for a timer",
            buckets=LAG_BUCKETS,
            registry=r,
        )
        self._sampled = _Sampled(pending)
        r.register(self._sampled)
        register_output_metrics(r, lambda: self._sampled.sample)
        self._origin_of: dict[str, str] = {}
        for scope in ("site", "origin"):
            for signal in ("latency", "errors", "throttled", "over-budget", "rate-drop"):
                self.active.labels(scope, signal).set(0)

    def record(self, row: RequestRow) -> None:
        """Count one request (on the observer's thread; a few dictionary updates)."""
        with self.lock:
            self._record(row)

    def record_all(self, rows: Iterable[RequestRow]) -> None:
        """Count a batch of requests under one lock."""
        with self.lock:
            for row in rows:
                self._record(row)

    def _record(self, row: RequestRow) -> None:
        key_type = key_type_label(row)
        kind = row.kind
        self.requests.add((kind, lane_label(row), row.status_class, key_type))
        if row.refusal is not None:
            self.refusals.add((row.refusal[:40],))
            return
        for kt in row.key_types:
            self.key_requests.add((kt if kt in KEY_TYPES else "other",))
        self.cost_units.add((kind,), row.units)
        if row.bytes:
            self.bytes.add((kind,), row.bytes)
        if row.status is None:
            self.errors.add((row.error_kind,))
        if kind == "media" and row.cache is not None:
            self.cache.add((row.cache,))
        if row.keys:
            self.wait.observe((key_type,), row.wait_s)
            self.lateness.observe((key_type,), row.late_s)
        phases = self.phases
        if row.dns_s is not None:
            phases.observe(("dns",), row.dns_s)
        if row.connect_s is not None:
            phases.observe(("connect",), row.connect_s)
        if row.tls_s is not None:
            phases.observe(("tls",), row.tls_s)
        if row.first_byte_s is not None:
            phases.observe(("first_byte",), row.first_byte_s)
        if row.total_s is not None:
            phases.observe(("total",), row.total_s)
        if row.origin is not None and kind != "media":
            before = self._origin_of.get(row.site)
            if before is not None and before != row.origin:
                self.origin_changes.add(())
            self._origin_of[row.site] = row.origin

    def sampled(self, sample: CrawlSample) -> None:
        self._sampled.sample = sample
        if sample.loop_lag is not None:
            self.lag.observe(sample.loop_lag)

    def anomaly(self, anomaly: Anomaly) -> None:
        gauge = self.active.labels(anomaly.scope, anomaly.signal)
        if anomaly.state == "raised":
            self.anomalies.labels(anomaly.scope, anomaly.signal).inc()
            gauge.inc()
        else:
            gauge.dec()

    def redacted(self, kind: str, count: int = 1) -> None:
        self.redactions.labels(kind).inc(count)

    def written(self, rows: int, files: int) -> None:
        if rows:
            self.log_rows.inc(rows)
        self.log_files.set(files)
