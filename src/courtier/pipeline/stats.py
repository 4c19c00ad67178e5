"""What a crawl counts about itself (the server-side audit is the other half)."""

from __future__ import annotations

import asyncio
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from courtier.net.fetch import FetchResult
from courtier.pipeline.spacing_report import SpacingReport


@dataclass(slots=True)
class CrawlStats:
    seed_sites: int = 0
    requests: int = 0
    robots_requests: int = 0
    bytes: int = 0
    by_status: Counter[str] = field(default_factory=Counter)
    fetch_errors: Counter[str] = field(default_factory=Counter)
    refused: Counter[str] = field(default_factory=Counter)
    bait_links: Counter[str] = field(default_factory=Counter)
    """Links (kept as horizon, never fetched) whose host is an address the policy blocks."""
    robots: Counter[str] = field(default_factory=Counter)
    slots: int = 0
    """Bookings made (each a slot on every limit key of the request)."""
    missed_slots: int = 0
    """Slots forfeited because the request could not start inside them (then rebooked)."""
    lead_refusals: int = 0
    """Bookings the limiter refused: a key was booked up to ``politeness.max_lead``."""
    line_joins: int = 0
    """Lanes that joined a saturated key's line without asking (``key_waits``)."""
    gate_holds: int = 0
    """Lanes the start gate held back (``crawl.start_rate``): they waited unbooked."""
    spacing: SpacingReport = field(default_factory=SpacingReport)
    """Achieved start-to-start spacing against the allowed one, per key type."""
    latency_slowdowns: Counter[str] = field(default_factory=Counter)
    """Rate cuts by latency feedback, per key type (site, origin)."""
    origin_pauses: int = 0
    origin_backoffs: Counter[str] = field(default_factory=Counter)
    """Origin-wide holds by cause: origin-paused (429/503 from several sites),
    origin-backoff (a run of errors), origin-stopped (a long run: stopped for a while)."""
    cost_corrections: int = 0
    """Responses whose type cost more than their URL's class, charged after the fact."""
    origins: int = 0
    restored_clocks: int = 0
    split: dict[str, float] = field(default_factory=dict)
    """The crawl's discovery share (``crawl_split``): target, realised and mean target of the
    contested decisions, their count, and the decisions a site's one kind of work forced."""
    shared_evidence: int = 0
    """Origin evidence other workers of a fleet observed, taken by this one's inference."""
    limiter_unavailable: int = 0
    """Bookings not made because a shared limiter's server could not be reached (each
    asked again a second later)."""
    control_actions: int = 0
    """An operator's actions (``courtier site``, ``seed add``...) this worker applied."""
    """Limit keys whose floor a previous run left in the future (a quick restart waits)."""
    """Distinct origins the seed sites were inferred to run on."""
    """Origins paused because several of their sites answered 429/503."""
    """Bookings refused because a key was booked more than the maximum lead ahead."""
    lag_samples: list[float] = field(default_factory=list)
    gc_pauses: list[float] = field(default_factory=list)
    """Seconds each paced full garbage collection stopped the process (``GcPacing``)."""
    load_samples: int = 0
    """Samples taken by ``sample_load`` (one a second)."""
    parse_queue_total: int = 0
    """Jobs waiting for a parse worker, summed over the samples."""
    parse_queue_max: int = 0
    places_full: int = 0
    """Samples that found every place in flight of the site lanes taken: with a long parse
    queue, the crawl is bound by parsing
    (`python bench/bench_rebook.py --sites 2000 --page-bytes 6000 --duration 40`: parse_queue,
    places_full)."""
    in_flight_bounds: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per scheduler (pages, media): the in-flight bound chosen last, what the work needed,
    the machine's cap and what binds (``scheduling.concurrency``)."""
    bound_peak: dict[str, int] = field(default_factory=dict)
    recent_lag: RecentLag = field(default_factory=lambda: RecentLag())
    links_found: int = 0
    bad_links: int = 0
    new_urls: int = 0
    dedup_hits: int = 0
    depth_capped: int = 0
    trap_capped: int = 0
    surface_sites: int = 0
    """Sites put in surface mode (their depth capped) during the run."""
    evicted: int = 0
    """Queued URLs that left the frontier because surface mode capped their site's depth."""
    sitemap_links: int = 0
    """Links dropped because their URL pattern reached its cap (calendars, session ids)."""
    horizon_links: int = 0
    suspended_sites: int = 0
    internal_errors: int = 0
    shards_taken: int = 0
    shards_given: int = 0
    """Shard leases taken and given back or lost (scale-out crawls)."""
    parse_failures: Counter[str] = field(default_factory=Counter)
    """Pages kept unparsed: parse-timeout, parse-crash, parse-memory, parse-error."""
    formats: Counter[str] = field(default_factory=Counter)
    """Documents read by their own reader: pdf, feed; pdf-error, feed-error when unreadable."""
    hook_errors: Counter[str] = field(default_factory=Counter)
    """Pages the parse hook gave no fields, by kind (``content.hook.HOOK_ERRORS``)."""
    hook_fields: int = 0
    """Pages the parse hook gave fields."""
    elapsed: float = 0.0
    ended_by: str = ""
    """What ended the crawl (``pipeline.ending``): duration, signal, stopped, until-done,
    max_requests, max_pages, max_bytes."""
    spent: dict[str, int] = field(default_factory=dict)
    """With budgets: what every run on the store has spent (requests, pages, bytes)."""
    store_counts: dict[str, int] = field(default_factory=dict)
    top_horizon: list[tuple[str, int]] = field(default_factory=list)
    promoted: list[tuple[str, float]] = field(default_factory=list)
    """Horizon hosts the crawl's own ranking cycles promoted, with their scores."""
    media_requests: Counter[str] = field(default_factory=Counter)
    """Media requests (page images on stores, CDNs, image services) by media source."""
    cache: Counter[str] = field(default_factory=Counter)
    """Cache verdicts of CDN and image-service answers: hit, miss, unknown."""
    miss_charges: int = 0
    """Cache misses that were not expected, charged to the customer's origin afterwards."""
    media_dropped: int = 0
    """Media URLs not queued because the media queue was full."""
    renders: Counter[str] = field(default_factory=Counter)
    """Pages by render outcome: rendered, not-rendered (no browser), or the failure."""
    render_requests: Counter[str] = field(default_factory=Counter)
    """Requests of renders: fetched, cached, revalidated, served (the page itself from its
    fetch), aborted:<reason>."""
    header_evidence: int = 0
    """Sites whose home-page headers went into origin inference (no probe request needed)."""
    tls_evidence: int = 0
    """Sites whose https certificate went into origin inference (corroboration)."""
    spacing_forfeits: int = 0
    """Slots given up because a late send on one of their shared keys (origin, CDN miss)
    held them past their deadline (``send_spacing``); not counted as missed slots."""
    origin_retries: int = 0
    """Origin-inference lookups asked again because the first failed (a DNS timeout)."""
    warc_records: Counter[str] = field(default_factory=Counter)
    """WARC captures written, by record type (response, revisit)."""
    warc_bytes: int = 0
    warc_seconds: float = 0.0
    """Writer-thread time spent compressing and writing captures (off the event loop)."""
    warc_errors: int = 0
    documents: Counter[str] = field(default_factory=Counter)
    """Document records handed to the document sink, by kind (page, pdf, feed, media)."""
    redactions: Counter[str] = field(default_factory=Counter)
    """Secrets and personal data redacted before anything was written, by kind."""
    redaction_failures: int = 0
    """Text bodies that could not be redacted in time: kept out of the WARC files."""
    not_modified: int = 0
    """Refreshes answered 304 (unchanged, cheap)."""
    encodings: Counter[str] = field(default_factory=Counter)
    """Pages by character encoding as read (cp1252, utf-8...)."""
    nofollow_pages: int = 0
    nofollow_links: int = 0
    """Links of nofollow pages (recorded, not followed) and rel="nofollow" links."""
    noindex_pages: int = 0
    adopted: dict[str, str] = field(default_factory=dict)
    """Hosts brought into the seed during the run -> why (a seed's redirect, a subdomain)."""
    seed_redirects: dict[str, str] = field(default_factory=dict)
    """Seed sites whose redirect left the scope -> the target (once per seed)."""

    def record_fetch(self, result: FetchResult, *, robots: bool) -> None:
        self.requests += 1
        if robots:
            self.robots_requests += 1
        self.bytes += result.size
        if result.status is None:
            self.by_status["error"] += 1
            self.fetch_errors[(result.error or "error").split(":", 1)[0]] += 1
        else:
            self.by_status[f"{result.status // 100}xx"] += 1

    def record_load(self, parse_waiting: int, in_flight: int, places: int) -> None:
        self.load_samples += 1
        self.parse_queue_total += parse_waiting
        self.parse_queue_max = max(self.parse_queue_max, parse_waiting)
        self.places_full += in_flight >= places

    def record_bound(self, name: str, bound: Any) -> None:
        """The bound ``name``'s scheduler was given (a ``concurrency.Bound``)."""
        self.in_flight_bounds[name] = {
            "bound": bound.limit,
            "needed": round(bound.demand, 1),
            "cap": bound.cap,
            "binds": str(bound.binding),
        }
        self.bound_peak[name] = max(self.bound_peak.get(name, 0), bound.limit)

    def record_lag(self, lag: float) -> None:
        if len(self.lag_samples) < 200_000:
            self.lag_samples.append(max(0.0, lag))

    @property
    def rebook_rate(self) -> float:
        return self.missed_slots / self.slots if self.slots else 0.0

    def lag_quantile(self, q: float) -> float:
        if not self.lag_samples:
            return 0.0
        ordered = sorted(self.lag_samples)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    def as_dict(self) -> dict[str, Any]:
        rate = self.requests / self.elapsed if self.elapsed else 0.0
        samples = max(1, self.load_samples)  # no samples: the totals are 0 too
        return {
            "elapsed_s": round(self.elapsed, 2),
            "ended_by": self.ended_by,
            "spent": dict(self.spent),
            "seed_sites": self.seed_sites,
            "requests": self.requests,
            "robots_requests": self.robots_requests,
            "requests_per_s": round(rate, 2),
            "bytes": self.bytes,
            "by_status": dict(self.by_status),
            "fetch_errors": dict(self.fetch_errors),
            "refused": dict(self.refused),
            "bait_links": dict(self.bait_links),
            "robots": dict(self.robots),
            "slots": self.slots,
            "missed_slots": self.missed_slots,
            "rebook_rate": round(self.rebook_rate, 5),
            "spacing": self.spacing.as_dict(),
            "lead_refusals": self.lead_refusals,
            "line_joins": self.line_joins,
            "gate_holds": self.gate_holds,
            "latency_slowdowns": dict(self.latency_slowdowns),
            "origin_pauses": self.origin_pauses,
            "origin_backoffs": dict(self.origin_backoffs),
            "cost_corrections": self.cost_corrections,
            "origins": self.origins,
            "restored_clocks": self.restored_clocks,
            "loop_lag_p99_ms": round(self.lag_quantile(0.99) * 1000, 2),
            "loop_lag_max_ms": round(max(self.lag_samples, default=0.0) * 1000, 2),
            "gc_full_collections": len(self.gc_pauses),
            "gc_full_pause_max_ms": round(max(self.gc_pauses, default=0.0) * 1000, 2),
            "parse_queue_mean": round(self.parse_queue_total / samples, 1),
            "parse_queue_max": self.parse_queue_max,
            "places_full_share": round(self.places_full / samples, 3),
            "in_flight_bounds": {
                name: {**last, "peak": self.bound_peak.get(name, 0)}
                for name, last in self.in_flight_bounds.items()
            },
            "links_found": self.links_found,
            "bad_links": self.bad_links,
            "new_urls": self.new_urls,
            "dedup_hits": self.dedup_hits,
            "depth_capped": self.depth_capped,
            "trap_capped": self.trap_capped,
            "surface_sites": self.surface_sites,
            "evicted": self.evicted,
            "sitemap_links": self.sitemap_links,
            "horizon_links": self.horizon_links,
            "suspended_sites": self.suspended_sites,
            "internal_errors": self.internal_errors,
            "parse_failures": dict(self.parse_failures),
            "formats": dict(self.formats),
            "hook_fields": self.hook_fields,
            "hook_errors": dict(self.hook_errors),
            "shards_taken": self.shards_taken,
            "shards_given": self.shards_given,
            "store": self.store_counts,
            "top_horizon": self.top_horizon,
            "promoted": self.promoted,
            "media_requests": dict(self.media_requests),
            "cache": dict(self.cache),
            "miss_charges": self.miss_charges,
            "media_dropped": self.media_dropped,
            "renders": dict(self.renders),
            "render_requests": dict(self.render_requests),
            "header_evidence": self.header_evidence,
            "tls_evidence": self.tls_evidence,
            "origin_retries": self.origin_retries,
            "spacing_forfeits": self.spacing_forfeits,
            "warc_records": dict(self.warc_records),
            "warc_bytes": self.warc_bytes,
            "warc_write_ms_per_capture": round(
                1000 * self.warc_seconds / max(1, sum(self.warc_records.values())), 3
            ),
            "warc_errors": self.warc_errors,
            "documents": dict(self.documents),
            "redactions": dict(self.redactions),
            "redaction_failures": self.redaction_failures,
            "not_modified": self.not_modified,
            "encodings": dict(self.encodings),
            "nofollow_pages": self.nofollow_pages,
            "nofollow_links": self.nofollow_links,
            "noindex_pages": self.noindex_pages,
            "adopted": dict(self.adopted),
            "seed_redirects": dict(self.seed_redirects),
        }


@dataclass(slots=True)
class RecentLag:
    """The event loop's lag of the last few seconds, to tell a server's latency from the
    crawler's own: an answer that arrived while the loop was busy is read late by as much."""

    window: float = 5.0
    samples: deque[tuple[float, float]] = field(default_factory=deque)
    """(wall time a sample ended, its lag), oldest first, for ``window`` seconds."""
    due: float = float("inf")
    """Wall time the sample under way should wake: past it, the loop is late right now."""

    def add(self, ended_at: float, lag: float) -> None:
        samples = self.samples
        samples.append((ended_at, lag))
        while samples and samples[0][0] < ended_at - self.window:
            samples.popleft()

    def since(self, when: float, now: float) -> float:
        """The most the loop lagged from ``when`` (wall time) to ``now``: the worst sample
        that ended in between, or the one under way if it is later still."""
        worst = max(0.0, now - self.due)
        for ended_at, lag in reversed(self.samples):
            if ended_at < when:
                break
            worst = max(worst, lag)
        return worst


async def sample_load(
    stats: CrawlStats, load: Callable[[], tuple[int, int, int]], period: float = 1.0
) -> None:
    """Sample, for ever, what bounds the crawl: ``load()`` gives the jobs waiting for a parse
    worker, the site lanes' requests in flight and their places (``crawl.max_in_flight``)."""
    while True:
        await asyncio.sleep(period)
        stats.record_load(*load())


async def sample_loop_lag(stats: CrawlStats, period: float = 0.05) -> None:
    """Sample how late the event loop wakes (the root cause of missed slots), for ever."""
    loop = asyncio.get_running_loop()
    recent = stats.recent_lag
    while True:
        before = loop.time()
        recent.due = time.time() + period
        await asyncio.sleep(period)
        lag = max(0.0, loop.time() - before - period)
        stats.record_lag(lag)
        recent.add(time.time(), lag)
