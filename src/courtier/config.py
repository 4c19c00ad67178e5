"""Crawl configuration: defaults < file < environment < ``-s section.key=value`` overrides.

The file (TOML, or the JSON of ``courtier config show --json``) is grouped by stage
(``[crawl]``, ``[fetch]``, ``[politeness]``, ``[robots]``, ...) and has one table of limits per
key type (``[limits.site]``, ``[limits.origin]``, ...). Environment variables
``COURTIER_SECTION__KEY`` (``__`` between names: ``COURTIER_LIMITS__ORIGIN__RATE``) sit
between the file and ``-s``. Every value has a default here, so a crawl needs no file at all.

Rules:
- Unknown sections or keys are an error: a typo must not silently fall back to a default.
- Every setting has a type (its annotation) and, in ``RULES``, a range, a set of allowed
  values or a format; ``courtier._settings`` checks both for every layer and names the input
  of a bad value (the file's own line and column, the variable, the flag).
- Adding a setting: a field with a default in its section, and one line in ``RULES`` (a test
  fails for a setting without one).
- ``load`` gives the effective ``Config``; ``resolve`` also says where each value came from.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from functools import lru_cache, partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from courtier import __version__, _settings
from courtier._settings import (
    DEFAULT,
    Entry,
    Rule,
    Source,
    each,
    number,
    one_of,
    text,
    whole,
)
from courtier._settings import ConfigError as ConfigError  # re-exported: raised by load()
from courtier.frontier.split import SplitPolicy
from courtier.frontier.surface import DEFAULT_LEVELS, SurfaceLevel, SurfacePolicy
from courtier.observe.settings import ObserveSettings
from courtier.politeness.gcra import DEFAULT_SLOT_WIDTH, KeyParams
from courtier.politeness.keys import (
    DEFAULT_CDN_HOSTS,
    DEFAULT_COSTS,
    DEFAULT_IMGSVC_HOSTS,
    DEFAULT_KEY_TYPE_PARAMS,
    DEFAULT_URL_RULES,
    CostModel,
    KeyRules,
    KeyType,
    LimitPolicy,
    RequestClass,
    UrlRule,
    parse_override,
    site_key,
)
from courtier.render.decision import RenderRules, split_rule

EVENT_LOOPS = ("uvloop", "asyncio")


@dataclass(frozen=True, slots=True)
class CrawlSection:
    max_in_flight: int = 0
    """At most this many page requests in flight over all sites at once (0: no cap of the
    operator's). The crawl chooses its bound from its work (Little's law over the sites with
    work: each one's spacing and measured answer time) under what the machine holds (open
    files, memory), and says what binds (``scheduling.concurrency``). A fetch counts until
    its page is parsed. Above the bound nothing new is booked (booked slots are honoured)."""
    start_rate: float = 3000.0
    """Bookings a second the crawl may make (``start_burst`` at once; 0: no limit). It
    spreads the start (every seed's robots.txt due at one instant) over a few hundred
    milliseconds instead of one long turn of the event loop. At 2,000 sites on 2 cores
    (~800 requests/s) only the start meets it; raise it for a machine that books more."""
    start_burst: int = 100
    first_contact_rate: float = 1000.0
    """Bookings a second of lanes that have never started a request (``first_contact_burst``
    at once; 0: no limit): a host's first request costs the loop several times a later one
    (DNS, a new connection, robots.txt, origin probes), so 2,000 seeds' first requests are
    spread over 2 s, not crowded into the loop's first turns (lag p99 157-161 -> 60 ms at
    2,000 sites on 2 cores,
    `python bench/bench_rebook.py --sites 2000 --page-bytes 6000 --duration 40`; 500 -> 1000 once
    our own HTTP
    client made a first contact cheaper: utilisation +0.02-0.035, the same command). Once no
    first contact waits, lanes meet only ``start_rate``: the crawl's steady pace is not
    capped by it (during the start, lanes wait in one line, first contacts and later
    requests alike)."""
    first_contact_burst: int = 10
    max_depth: int = 20
    """Links deeper than this from a seed root are not followed (a first bound on traps)."""
    parse_workers: int = 0
    """Processes that parse HTML (0: one per core; with ``crawl --workers N``, each worker's
    share of them); parsing never runs on the fetch loop."""
    parse_timeout: float = 10.0
    """Seconds of a parse worker one page may take; past it the worker is killed and
    replaced, and the page is kept unparsed (``parse_error: parse-timeout``)."""
    parse_nice: int = 10
    """How much the parse workers yield the CPU to the crawl's event loop (``nice``, 0-19;
    0: not at all). The loop keeps the politeness timing; a page can wait a few ms for its
    parse. At 2,000 sites on 2 busy cores, 10 took the loop's p99 lag from 85-147 ms to
    55-91 ms at the same throughput
    (`python bench/bench_rebook.py --sites 2000 --page-bytes 6000 --duration 40`)."""
    queue_per_site: int = 16
    """URLs a site holds in memory at once; the rest wait in the frontier store."""
    flush_interval: float = 0.5
    """Seconds between batched store writes."""
    due_recheck: float = 30.0
    """Seconds between looks for newly due work (refresh, fastlane) on idle sites."""
    origin_recheck: float = 60.0
    """Seconds between re-checks of origin evidence whose DNS answers have expired."""
    store_outage: float = 300.0
    """Seconds a crawl waits for its store's server to come back (a PostgreSQL restart or
    failover, a busy SQLite file) before it stops, saying why; meanwhile nothing is booked."""
    max_requests: int = 0
    """Requests the crawl may start, over every run on its store (0: no budget): robots.txt,
    pages, media and renders' requests alike. The crawl never starts the one past it, and
    ends, clean, when it is spent (``ended_by: max_requests``)."""
    max_pages: int = 0
    """Page requests the crawl may start, over every run on its store (0: no budget): every
    start of a frontier URL (a page, a sitemap, a redirect's target, a refresh, a retry);
    robots.txt, media and renders' requests are not pages. Spent: the crawl ends."""
    max_bytes: int = 0
    """Body bytes the crawl may receive, over every run on its store (0: no budget). Known
    only as answers arrive: once it is reached nothing new starts, and the requests in
    flight then may pass it by what they bring. Spent: the crawl ends."""
    max_pages_per_site: int = 0
    """URLs of one site the crawl fetches (0: no cap): a site with that many fetched (the
    store's count, every run) is given no new URL; its pages' refreshes go on, and the
    crawl does not end for it."""
    limiter: str = "memory"
    """Where the limit keys' clocks live: "memory" (this process; floors saved at a stop) or
    "sqlite" (the store file, written before each request it books)."""
    event_loop: str = "uvloop"
    """The event loop a crawl runs on: "uvloop" (libuv: socket and timer work per request in
    C) or "asyncio" (the standard library's). uvloop falls back to asyncio where it is not
    installed."""

    def __post_init__(self) -> None:
        if self.limiter not in ("memory", "sqlite"):
            raise ValueError(f'limiter must be "memory" or "sqlite", got {self.limiter!r}')
        if self.event_loop not in EVENT_LOOPS:
            raise ValueError(f'event_loop must be "uvloop" or "asyncio", got {self.event_loop!r}')


DEFAULT_CONTACT_URL = "https://github.com/courtier-crawler/courtier#operators"


@dataclass(frozen=True, slots=True)
class FetchSection:
    user_agent_token: str = "courtier"
    contact_url: str = DEFAULT_CONTACT_URL
    """Where a site operator can reach whoever runs the crawl: set it to your own page."""
    connect_timeout: float = 10.0
    read_timeout: float = 20.0
    total_timeout: float = 60.0
    max_body_bytes: int = 8 * 1024 * 1024
    """Largest body kept, counted after decompression (a compression bomb stops here)."""
    spool_bytes: int = 512 * 1024
    """A page or media body larger than this is written to a spool file as it arrives
    (``<out>/spool``) and read there by the parse worker, not held in the crawl's memory
    (0: never spool)."""
    max_header_bytes: int = 16 * 1024
    """Longest single header line accepted."""
    max_idle: int = 1024
    """Kept-alive connections waiting for their next request, all hosts together (each is
    an open file: fewer when the open-file limit leaves less)."""
    max_headers: int = 100
    """Most response header fields accepted."""
    allowed_types: tuple[str, ...] = (
        "text/",
        "application/xhtml+xml",
        "application/xml",
        "application/rss+xml",
        "application/atom+xml",
        "application/json",
        "application/javascript",  # renders run scripts (``[render]``)
        "application/x-javascript",
        "application/gzip",
        "application/x-gzip",
        "application/pdf",  # text extracted in the parse workers (``content.pdf``)
        "image/",
    )
    """Media types (or prefixes ending in '/') whose bodies are read; others are not downloaded."""
    ca_file: str = ""
    """A PEM file of CA certificates trusted besides the system's (a private or test CA);
    certificates are always verified."""
    happy_eyeballs_delay: float = 0.25
    """Seconds before the next of a host's addresses is tried while the last has neither
    connected nor failed (RFC 8305's Connection Attempt Delay; families interleaved)."""
    proxy: str = ""
    """An HTTP CONNECT proxy for every request, "http://[user:password@]host:port"; "" takes
    HTTPS_PROXY / HTTP_PROXY from the environment, "none" never uses one. The SSRF guard
    still judges and pins each target (docs/ssrf.md#through-a-proxy)."""
    no_proxy: tuple[str, ...] = ()
    """Targets reached directly, besides NO_PROXY's: host names (and their subdomains),
    addresses, CIDR blocks, or "*"."""
    proxy_resolves: bool = False
    """CONNECT names the host rather than its checked address, for a proxy that refuses
    address CONNECTs: pinning is then the proxy's job."""

    @property
    def user_agent(self) -> str:
        return (
            f"Mozilla/5.0 (compatible; {self.user_agent_token}/{__version__}; +{self.contact_url})"
        )


@dataclass(frozen=True, slots=True)
class FrontierSection:
    surface_levels: tuple[str, ...] = tuple(
        f"{level.frontier_size}:{level.max_depth}" for level in DEFAULT_LEVELS
    )
    """Surface mode: "SIZE:DEPTH" - a site with SIZE URLs discovered or more keeps only URLs
    at most DEPTH links from its root (sizes ascending, depths descending)."""
    freshlane: tuple[str, ...] = ()
    """Fast sources: URLs (of seed sites) refetched every freshlane_interval seconds; the
    links they reveal jump ahead of ordinary discovery."""
    freshlane_interval: float = 60.0
    fresh_sources: bool = True
    """Find fast sources automatically (home pages, feeds, recent sitemaps, critical and
    popular pages that change with new links on most looks); the hand list still wins."""
    fresh_probe: float = 60.0
    """Seconds before a candidate fast source is looked at again (at least 60)."""
    split_floor: float = 0.1
    """Discovery's share of a site's requests never drops below this, however much refresh
    work is due ..."""
    split_ceiling: float = 0.9
    """... nor rises above this, however long the discovered backlog."""
    split_half_drain: float = 3600.0
    """Backlog drain time (backlog / request rate, seconds) at which discovery gets half way
    between floor and ceiling."""
    sitemaps: bool = True
    """Fetch the sitemaps robots.txt lists (booked like any request) to discover URLs."""
    sitemap_fallback: bool = True
    """... and ``/sitemap.xml`` of a site whose robots.txt lists none (one request more per
    site, booked like any other, robots.txt rules applied)."""
    promote: int = 0
    """Horizon hosts the crawl itself promotes into the seed per ranking cycle (0: only
    'courtier rank --promote K' promotes) ..."""
    rank_every: float = 600.0
    """... every this many seconds."""

    def __post_init__(self) -> None:
        self.surface_policy(32)
        self.split_policy()
        if not (math.isfinite(self.freshlane_interval) and self.freshlane_interval > 0):
            raise ValueError("freshlane_interval must be a positive number of seconds")
        if self.promote < 0 or not (math.isfinite(self.rank_every) and self.rank_every > 0):
            raise ValueError("promote must be >= 0 and rank_every a positive number of seconds")

    def surface_policy(self, max_depth: int) -> SurfacePolicy:
        levels = []
        for level in self.surface_levels:
            size, colon, depth = level.partition(":")
            if not colon or not size.strip().isdigit() or not depth.strip().isdigit():
                raise ValueError(f"surface level {level!r} is not of the form 'SIZE:DEPTH'")
            levels.append(SurfaceLevel(int(size), int(depth)))
        return SurfacePolicy(levels=tuple(levels), max_depth=max_depth)

    def split_policy(self) -> SplitPolicy:
        return SplitPolicy(self.split_floor, self.split_ceiling, self.split_half_drain)


@dataclass(frozen=True, slots=True)
class KeyLimits:
    """Limits of one key type: ``[limits.<type>]`` in the file, ``-s limits.<type>.rate=..``."""

    rate: float
    """Cost units per second (requests per second for site keys, which are not weighted)."""
    burst: float = 0.0
    """Burst tolerance, seconds: how far ahead of its schedule a request may start."""
    slot_width: float = DEFAULT_SLOT_WIDTH
    """Seconds a request may start after its booked slot opens before it forfeits the slot."""

    def __post_init__(self) -> None:
        KeyParams.from_rate(self.rate, self.burst, self.slot_width)  # validates

    @classmethod
    def default(cls, key_type: KeyType) -> KeyLimits:
        params = DEFAULT_KEY_TYPE_PARAMS[key_type]
        return cls(params.rate, params.burst, params.slot_width)


@dataclass(frozen=True, slots=True)
class LimitsSection:
    """Per key type (DESIGN.md "Limits"): a site; all sites sharing an origin's servers; an
    object-store bucket; a CDN, and its cache misses (counted against the origin); an image
    service."""

    site: KeyLimits = field(default_factory=partial(KeyLimits.default, KeyType.SITE))
    origin: KeyLimits = field(default_factory=partial(KeyLimits.default, KeyType.ORIGIN))
    bucket: KeyLimits = field(default_factory=partial(KeyLimits.default, KeyType.BUCKET))
    cdn: KeyLimits = field(default_factory=partial(KeyLimits.default, KeyType.CDN))
    cdn_miss: KeyLimits = field(default_factory=partial(KeyLimits.default, KeyType.CDN_MISS))
    imgsvc: KeyLimits = field(default_factory=partial(KeyLimits.default, KeyType.IMGSVC))
    overrides: tuple[str, ...] = ()
    """One key's own limits, over its type's: ``"KEY => rate=R [burst=B] [slot_width=W]"``
    (``site:example.org => rate=0.2``: a site that asked to be crawled slower;
    ``origin:platform-a => rate=1``). A site's rate is its start-to-start spacing, under
    Crawl-delay and backoff as any site's."""

    def __post_init__(self) -> None:
        self.policy()  # validates the overrides

    def policy(self) -> LimitPolicy:
        """The limiter's view: these limits by key type, and the keys' own (worked out once
        per value: a lane made for each of thousands of sites asks for its own interval)."""
        return _limit_policy(self)

    def site_interval(self, site: str) -> float | None:
        """A site's own start-to-start interval (``overrides``, naming the site or its host
        without the port); None: its type's."""
        if not self.overrides:
            return None
        own = self.policy().overrides
        params = own.get(site_key(site)) or own.get(site_key(site.rpartition(":")[0] or site))
        return None if params is None else params.interval


@lru_cache(maxsize=16)
def _limit_policy(limits: LimitsSection) -> LimitPolicy:
    table = {
        key_type.value: dataclasses.asdict(getattr(limits, key_type.value.replace("-", "_")))
        for key_type in KeyType
    }
    by_type = LimitPolicy.from_config(table)
    overrides = dict(parse_override(rule, by_type.types) for rule in limits.overrides)
    return dataclasses.replace(by_type, overrides=overrides) if overrides else by_type


@dataclass(frozen=True, slots=True)
class CostsSection:
    """What one request costs a server, by class (DESIGN.md "Limits"), and the URL rules that
    classify requests: ``"REGEX => CLASS"``, searched in the path and query, tried in order
    before the built-in rules. The response's type refines the class once it is known."""

    index: float = DEFAULT_COSTS[RequestClass.INDEX]
    detail: float = DEFAULT_COSTS[RequestClass.DETAIL]
    image: float = DEFAULT_COSTS[RequestClass.IMAGE]
    robots: float = DEFAULT_COSTS[RequestClass.ROBOTS]
    rules: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self.model()  # validates costs and rules

    def model(self) -> CostModel:
        rules = []
        for rule in self.rules:
            pattern, arrow, klass = rule.rpartition("=>")
            try:
                rules.append(UrlRule(pattern.strip(), RequestClass(klass.strip())))
            except ValueError as exc:
                classes = ", ".join(c.value for c in RequestClass)
                raise ValueError(
                    f"rule {rule!r}: want 'REGEX => CLASS' ({classes}): {exc}"
                ) from None
            if not arrow:
                raise ValueError(f"rule {rule!r} is not of the form 'REGEX => CLASS'")
        costs = {klass: float(getattr(self, klass.value)) for klass in RequestClass}
        return CostModel(rules=(*rules, *DEFAULT_URL_RULES), costs=costs)


@dataclass(frozen=True, slots=True)
class PolitenessSection:
    max_lead: float = 10.0
    """A key is never booked further ahead than this; work beyond waits in the frontier."""
    start_margin: float = 0.02
    """Added to every spacing: network and server jitter must not make two starts look
    closer than the interval from the server's side."""
    max_in_flight_per_site: int = 1
    latency_ratio: float = 2.0
    """Latency feedback: congested when the current latency exceeds baseline x this ..."""
    latency_min_rise: float = 0.05
    """... and exceeds the baseline by at least this many seconds."""
    latency_decrease: float = 0.5
    """Rate factor multiplier on congestion (multiplicative decrease)."""
    latency_increase: float = 0.05
    """Rate factor added per uncongested answer (additive recovery, up to 1)."""
    latency_floor: float = 0.05
    latency_cooldown: float = 5.0
    """Seconds after a decrease before latency may cut the rate again."""
    origin_pause_sites: int = 2
    """This many sites of one origin answering 429/503 within origin_pause_window pause the
    whole origin, not just those sites."""
    origin_pause_window: float = 60.0
    origin_error_run: int = 5
    """Failures in a row (5xx, no answer) across two or more sites of one origin that back
    the whole origin off (longer with each further run); ``suspend_after_errors`` of them
    stop it for ``suspend_for``."""
    default_retry_after: float = 60.0
    """Pause after a 429/503 that carries no usable Retry-After."""
    max_backoff: float = 3600.0
    """Longest pause from exponential backoff on a run of errors."""
    suspend_after_errors: int = 20
    """Consecutive failures after which a site is suspended ..."""
    suspend_for: float = 6 * 3600.0
    """... for this many seconds, then tried again."""
    max_retry_after: float = 24 * 3600.0
    """A Retry-After longer than this is clamped to it; nothing a server says is stored as a
    time beyond it."""


@dataclass(frozen=True, slots=True)
class RobotsSection:
    max_age: float = 24 * 3600.0
    """RFC 9309: a cached robots.txt is used for at most 24 hours."""
    retry_unreachable: float = 600.0
    """After a 5xx/unreachable robots.txt (disallow all), try it again after this long."""
    max_bytes: int = 500 * 1024
    max_redirects: int = 5
    max_crawl_delay: float = 300.0
    """A Crawl-delay longer than this (seconds) is not honoured: the site is suspended
    (``crawl-delay-too-long``) instead of crawled at that pace. Heritrix caps at 300 s too
    (respectCrawlDelayUpToSeconds)."""


@dataclass(frozen=True, slots=True)
class MediaSection:
    fetch: bool = True
    """Fetch the images seed pages embed from object stores, CDNs and image services (each
    booked on its own keys: bucket, cdn + the customer's origin on a miss, imgsvc). Images on
    the seed sites themselves are ordinary frontier URLs either way. Off, a render's requests
    to media hosts still go through the media lanes."""
    cdn_hosts: tuple[str, ...] = tuple(sorted(DEFAULT_CDN_HOSTS))
    """Shared CDN hosts whose first path segment names the customer."""
    imgsvc_hosts: tuple[str, ...] = tuple(sorted(DEFAULT_IMGSVC_HOSTS))
    """Shared image-service hosts whose first path segment names the customer."""
    max_in_flight: int = 0
    """At most this many media requests in flight at once, all media hosts together (0: no
    cap of the operator's; the crawl's bound is chosen from the work, as for pages, within
    a quarter of what the machine holds)."""
    max_in_flight_per_key: int = 4
    """Media requests in flight on one bucket, CDN customer or image-service customer."""
    max_queued: int = 100_000
    """Media URLs waiting in memory; more are dropped (counted) until the queue drains."""

    def __post_init__(self) -> None:
        if min(self.max_in_flight_per_key, self.max_queued) < 1 or self.max_in_flight < 0:
            raise ValueError(
                "media in-flight and queue limits must be at least 1 (max_in_flight: 0 or more)"
            )

    def rules(self) -> KeyRules:
        return KeyRules(
            cdn_hosts=frozenset(h.lower().rstrip(".") for h in self.cdn_hosts),
            imgsvc_hosts=frozenset(h.lower().rstrip(".") for h in self.imgsvc_hosts),
        )


@dataclass(frozen=True, slots=True)
class ObserveSection:
    """The request log, metrics, anomaly detection and progress (``courtier.observe``)."""

    request_log: bool = True
    """Every request as a row in ``OUT/requests/*.parquet`` (``courtier query``)."""
    flush_seconds: float = 5.0
    rotate_seconds: float = 300.0
    rotate_rows: int = 250_000
    rotate_bytes: int = 32 * 1024 * 1024
    compression: str = "zstd"
    worker: str = ""
    """This worker's name in every row (default: host name and process id)."""
    metrics_port: int = 0
    """Serve Prometheus metrics on this port of ``metrics_host`` (0: no metrics server)."""
    metrics_host: str = "127.0.0.1"
    anomalies: bool = True
    anomaly_band: float = 4.0
    anomaly_latency_ratio: float = 2.0
    anomaly_latency_min_rise: float = 0.05
    anomaly_rate_min_rise: float = 0.4
    anomaly_persist: int = 2
    anomaly_rate_window: float = 10.0
    anomaly_budget_tolerance: float = 0.05
    anomaly_relearn: float = 600.0
    anomaly_hold: float = 60.0
    anomaly_slowdown: bool = False
    """A raised anomaly slows its origin down (halves its rate until it clears)."""
    live: bool = True
    progress_seconds: float = 30.0
    sample_seconds: float = 2.0
    stats_seconds: float = 10.0
    frontier_seconds: float = 5.0
    """The frontier's URLs are counted by status this often, at most (0: only at the end)."""

    def settings(self) -> ObserveSettings:
        values = dataclasses.asdict(self)
        values["metrics_port"] = self.metrics_port or None
        return ObserveSettings(**values)


@dataclass(frozen=True, slots=True)
class WarcSection:
    """What the crawl fetched, kept as WARC 1.1 (``courtier.sinks.warc``) in ``OUT/warc/``."""

    enabled: bool = True
    """Write warcinfo, request, response and revisit records (``--no-warc``: off)."""
    max_file_bytes: int = 1 << 30
    """A WARC file is finished (its ``.open`` suffix dropped) and the next one started once
    it holds this many (compressed) bytes."""
    prefix: str = "courtier"
    """File names: PREFIX-TIMESTAMP-SERIAL-HOST-PID.warc.gz (workers sharing one output
    directory never take each other's names, each PID 1 of its container or not)."""
    compression_level: int = 2
    """gzip level of each record: 1-3 are ISA-L's igzip levels (fast), 4-9 zlib's (9
    smallest; warcio's own writer uses 9)."""
    payload: str = "redacted"
    """``redacted``: records hold the body and headers as kept, secrets and personal data
    removed. ``raw``: the bytes received (after the fetcher's Content-Encoding decoding),
    unredacted, for archives that must replay exactly (docs/archive.md: the trade-off); the
    documents, links and logs are redacted all the same."""


@dataclass(frozen=True, slots=True)
class DocumentsSection:
    """The document records (``courtier.sinks.documents``): gzip-compressed JSON Lines
    segments in ``OUT/documents/``, rotated like the WARC files (docs/documents.md)."""

    segment_bytes: int = 1 << 27
    """A segment is finished (its ``.open`` suffix dropped) and the next one started once it
    holds this many (compressed) bytes."""
    segment_seconds: float = 3600.0
    """... or once it has been open this long (checked at each flush, every
    ``crawl.flush_interval``), whichever comes first."""


@dataclass(frozen=True, slots=True)
class ParseSection:
    """What is read of a page in the parse worker besides its links (``content.text``), and
    user code run on it (``content.hook``)."""

    text: bool = True
    """Each HTML page's main text, Markdown, language and SimHash in its document."""
    near_distance: int = 3
    """Bits (of 64) within which two pages' SimHashes make the later a near-duplicate of the
    earlier (``near_duplicate_of``); 0: exact duplicates only."""
    remember: int = 50_000
    """Texts remembered for duplicate detection in a run (the oldest are forgotten): about
    900 bytes each in the crawl's process (``content.duplicates``)."""
    hook: str = ""
    """"module:function" called with each page (URL, headers, parsed tree, text); the dict it
    returns goes into the page's document under ``hook`` ("": no hook)."""
    hook_timeout: float = 2.0
    """Seconds the hook may take on one page; past it the page is kept without its fields
    (``hook_error: hook-timeout``). Keep it below ``[crawl] parse_timeout``."""


@dataclass(frozen=True, slots=True)
class ScopeSection:
    """Which URLs of the seed are crawled, and which hosts join it (``pipeline.scope``)."""

    include: tuple[str, ...] = ()
    """Regular expressions searched in a URL of a seed site: when any is given, only URLs
    matching one are crawled (seed roots always are)."""
    exclude: tuple[str, ...] = ()
    """... and URLs matching any of these never are (exclude wins)."""
    subdomains: bool = False
    """Hosts under a seed host (``blog.example.org`` under ``example.org`` or
    ``www.example.org``) join the seed when linked."""
    adopt_redirects: bool = True
    """A seed site redirecting to a host of its registrable domain (bare <-> www.) brings
    that host into the seed, as the same site owner."""


@dataclass(frozen=True, slots=True)
class RedactSection:
    """What is redacted before anything is written (``courtier.sinks.redact``)."""

    keys: bool = True
    """API keys and tokens (Google, AWS, Stripe, GitHub, Slack, JWT and more)."""
    emails: bool = True
    phones: bool = True
    phone_region: str = "US"
    """Region whose national format a number without "+" is read in, where the site's
    country-code domain does not say (``.de``: DE)."""
    skip: tuple[str, ...] = ()
    """Key kinds left alone, e.g. ["recaptcha-site-key"]."""


@dataclass(frozen=True, slots=True)
class RenderSection:
    """Pages that need a browser, rendered in headless Chromium whose every request is
    answered by the crawl's own booked, guarded fetch (``pipeline.lanes.rendering``)."""

    mode: str = "auto"
    """``never``, ``auto`` (pages that look like application shells) or ``always``."""
    sites: tuple[str, ...] = ()
    """``"HOST => MODE"``: a site's own mode."""
    rules: tuple[str, ...] = ()
    """``"REGEX => MODE"`` searched in the URL; the first match wins over the site's mode."""
    browser: str = ""
    """Chromium's executable ("": ``chromium``, ``chromium-browser`` or ``google-chrome``
    on PATH; none found: pages are not rendered, said once at start)."""
    browsers: int = 1
    pages_per_browser: int = 4
    page_timeout: float = 60.0
    """Seconds a render may take, booking waits of its requests included."""
    settle: float = 0.5
    """Seconds without a request outstanding, after the load event, before the DOM is read."""
    stall: float = 10.0
    """Seconds a page may go without a request outstanding before its load event: then it
    hangs (a script in an endless loop), and fails at once rather than at ``page_timeout``."""
    memory_limit: int = 768 << 20
    """Bytes of resident memory (the browser's process tree) past which it is replaced."""
    fetch_types: tuple[str, ...] = ("document", "script", "stylesheet", "xhr", "fetch")
    """Request types a render fetches; the rest (images, fonts, media...) are aborted. The
    rendered page's images still reach the media lanes as any page's."""
    max_requests: int = 50
    """Requests one render may send; more are aborted."""
    hosts: tuple[str, ...] = ()
    """Host names outside the seed a render may fetch from (an API or a bundle on a host of
    its own), each booked on its own site key with one request in flight, its robots.txt
    obeyed. Media hosts (object stores, CDNs, image services) need no entry; any other
    host outside the seed (analytics, ads, maps, fonts) is aborted."""
    cache_bytes: int = 64 << 20
    """Scripts and stylesheets kept across renders (all sites together)."""
    cache_seconds: float = 3600.0
    """How long a cached script or stylesheet is used without asking again, at most (a
    shorter ``max-age`` wins); then it is asked for again with its validators."""

    def __post_init__(self) -> None:
        self.decisions()  # validates the mode and the rules

    def decisions(self) -> RenderRules:
        return RenderRules.of(self.mode, self.sites, self.rules)


@dataclass(frozen=True, slots=True)
class ControlSection:
    """An operator's controls of a running crawl (``courtier site``, ``seed add``...), read
    from the store by every worker (``pipeline.lanes.controls``)."""

    poll: float = 1.0
    """Seconds between two reads of the store's log of actions."""
    http_port: int = 0
    """Serve the fastlane endpoint (``POST /recrawl``) on this port (0: off)."""
    http_host: str = "127.0.0.1"
    http_token: str = ""
    """The bearer token a request must carry (required with ``http_port``; set it through
    ``COURTIER_CONTROL__HTTP_TOKEN`` rather than a file)."""

    def __post_init__(self) -> None:
        if self.http_port and len(self.http_token) < 16:
            raise ValueError(
                "control.http_token of 16 characters or more is required with http_port"
            )


@dataclass(frozen=True, slots=True)
class Config:
    crawl: CrawlSection = field(default_factory=CrawlSection)
    fetch: FetchSection = field(default_factory=FetchSection)
    politeness: PolitenessSection = field(default_factory=PolitenessSection)
    robots: RobotsSection = field(default_factory=RobotsSection)
    limits: LimitsSection = field(default_factory=LimitsSection)
    costs: CostsSection = field(default_factory=CostsSection)
    frontier: FrontierSection = field(default_factory=FrontierSection)
    media: MediaSection = field(default_factory=MediaSection)
    warc: WarcSection = field(default_factory=WarcSection)
    documents: DocumentsSection = field(default_factory=DocumentsSection)
    parse: ParseSection = field(default_factory=ParseSection)
    scope: ScopeSection = field(default_factory=ScopeSection)
    redact: RedactSection = field(default_factory=RedactSection)
    render: RenderSection = field(default_factory=RenderSection)
    observe: ObserveSection = field(default_factory=ObserveSection)
    control: ControlSection = field(default_factory=ControlSection)

    @property
    def site_interval(self) -> float:
        """Seconds between request starts on one site (Crawl-delay only ever raises it)."""
        return 1.0 / self.limits.site.rate

    def as_dict(self) -> dict[str, dict[str, Any]]:
        return {f.name: dataclasses.asdict(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> Config:
        """Defaults with ``values`` ({section: {key: value}}, nested for ``limits``) applied,
        checked exactly as a file's values are. Raises ``ConfigError``."""
        return apply(cls(), values)

    @classmethod
    def from_file(cls, path: str | Path, overrides: Iterable[str] = ()) -> Config:
        """Defaults, the file (TOML, or JSON by its ``.json`` suffix), then ``-s``-style
        overrides; the environment is not read. Raises ``ConfigError``."""
        return resolve(Path(path), overrides, env={}).config


# -- what each setting accepts ----------------------------------------------------------------

_TOKEN = re.compile(r"[A-Za-z_-]+")
_MEDIA_TYPE = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]*/(?:[a-z0-9][a-z0-9!#$&^_.+-]*)?")
_SURFACE_LEVEL = re.compile(r"\s*\d+\s*:\s*\d+\s*")


def _contact(url: str) -> str | None:
    if not url.isascii() or re.search(r"[\s()\x00-\x1f\x7f]", url):
        return "not usable in a User-Agent header (spaces, parentheses, non-ASCII)"
    parts = urlsplit(url)
    if parts.scheme in ("http", "https") and parts.netloc:
        return None
    if parts.scheme == "mailto" and "@" in parts.path:
        return None
    return ""


def _hook_spec(spec: str) -> str | None:
    from courtier.content.hook import check_spec

    return None if check_spec(spec) is None else ""  # the rule's description says it all


def _ca_file(path: str) -> str | None:
    if not path or Path(path).is_file():
        return None
    return "not an existing file"


def _proxy(url: str) -> str | None:
    from courtier.net.proxy import proxy_problem

    return None if url.strip().lower() in ("", "none") else proxy_problem(url)


def _no_proxy_entry(entry: str) -> str | None:
    from courtier.net.proxy import no_proxy_problem

    return no_proxy_problem(entry)


def _cost_rule(rule: str) -> str | None:
    from courtier.politeness.keys import RequestClass

    pattern, arrow, klass = rule.rpartition("=>")
    if not arrow or klass.strip() not in {c.value for c in RequestClass}:
        return "not of the form REGEX => CLASS"
    try:
        re.compile(pattern.strip())
    except re.error as exc:
        return f"not a valid regular expression ({exc})"
    return None


def _render_rule(rule: str) -> str | None:
    try:
        pattern, _mode = split_rule(rule)
        re.compile(pattern)
    except (ValueError, re.error) as exc:
        return str(exc)
    return None


def _render_site(rule: str) -> str | None:
    try:
        host, _mode = split_rule(rule)
    except ValueError as exc:
        return str(exc)
    return _host(host)


_RENDER_TYPES = frozenset(
    {"document", "script", "stylesheet", "xhr", "fetch", "image", "font", "media", "other"}
)


def _render_type(kind: str) -> str | None:
    return None if kind in _RENDER_TYPES else "not a request type"


def _executable(path: str) -> str | None:
    if path and not (os.path.isfile(path) and os.access(path, os.X_OK)):
        return "no executable file there"
    return None


def _override(rule: str) -> str | None:
    try:
        parse_override(rule)
    except ValueError as exc:
        return str(exc)
    return None


def _page_url(url: str) -> str | None:
    from courtier.url import UrlError, parse_url

    try:
        parse_url(url)
    except UrlError as exc:
        return f"not a usable URL ({exc})"
    return None


def _address(text: str) -> str | None:
    import ipaddress

    try:
        ipaddress.ip_address(text)
    except ValueError:
        return "not an IP address"
    return None


def _host(name: str) -> str | None:
    from courtier.url import UrlError, canonical_host

    try:
        canonical_host(name)
    except UrlError as exc:
        return f"not a host name ({exc})"
    return None


def _regex(pattern: str) -> str | None:
    try:
        re.compile(pattern)
    except re.error as exc:
        return f"not a valid regular expression ({exc})"
    return None


def _region(code: str) -> str | None:
    import phonenumbers

    return None if code.upper() in phonenumbers.SUPPORTED_REGIONS else ""


def _key_kind(kind: str) -> str | None:
    from courtier.sinks.redact import KEY_KINDS

    return None if kind in KEY_KINDS else f"not a key kind ({', '.join(KEY_KINDS)})"


def _matching(pattern: re.Pattern[str], what: str) -> _settings.Check:
    """Values matching ``pattern``; else ``what`` is wrong ("" when the rule says it all)."""
    return lambda value: None if pattern.fullmatch(value) else what


_SECONDS = number(above=0, unit="seconds")
_FRACTION = number(above=0, high=1)

RULES: dict[type, dict[str, Rule]] = {
    CrawlSection: {
        "max_in_flight": whole(0, 1_000_000),
        "start_rate": number(low=0, high=1_000_000, unit="bookings per second"),
        "start_burst": whole(1, 1_000_000),
        "first_contact_rate": number(low=0, high=1_000_000, unit="bookings per second"),
        "first_contact_burst": whole(1, 1_000_000),
        "max_depth": whole(0, 10_000),
        "parse_workers": whole(0, 256),
        "parse_timeout": number(above=0, high=600, unit="seconds"),
        "parse_nice": whole(0, 19),
        "queue_per_site": whole(1, 1_000_000),
        "flush_interval": number(above=0, high=60, unit="seconds"),
        "due_recheck": _SECONDS,
        "origin_recheck": _SECONDS,
        "store_outage": number(above=0, high=7 * 86_400, unit="seconds"),
        "max_requests": whole(0, 10**15),
        "max_pages": whole(0, 10**15),
        "max_bytes": whole(0, 10**18, unit="bytes"),
        "max_pages_per_site": whole(0, 10**15),
        "limiter": one_of("memory", "sqlite"),
        "event_loop": one_of(*EVENT_LOOPS),
    },
    FetchSection: {
        "user_agent_token": text(
            'a robots.txt product token: letters, "-" and "_" only (RFC 9309), e.g. "acme-bot"',
            _matching(_TOKEN, ""),
        ),
        "contact_url": text(
            "an absolute http(s) URL or mailto: address where site operators reach you",
            _contact,
        ),
        "connect_timeout": number(above=0, high=3600, unit="seconds"),
        "read_timeout": number(above=0, high=3600, unit="seconds"),
        "total_timeout": number(above=0, high=86_400, unit="seconds"),
        "max_body_bytes": whole(1, 1 << 31, unit="bytes"),
        "spool_bytes": whole(0, 1 << 31, unit="bytes"),
        "max_header_bytes": whole(1024, 1 << 20, unit="bytes"),
        "max_idle": whole(0, 1_000_000),
        "max_headers": whole(1, 10_000),
        "allowed_types": each(
            'lower-case media types ("text/html") or prefixes ending in "/" ("image/")',
            _matching(_MEDIA_TYPE, "not a lower-case media type or prefix"),
        ),
        "ca_file": text('the path of a PEM file of CA certificates, or "" for none', _ca_file),
        "happy_eyeballs_delay": number(0.01, 60, unit="seconds"),
        "proxy": text(
            '"http://[user:password@]host:port", "" (HTTPS_PROXY / HTTP_PROXY) or "none"', _proxy
        ),
        "no_proxy": each('host names, addresses, CIDR blocks or "*"', _no_proxy_entry),
        "proxy_resolves": Rule("true or false"),
    },
    FrontierSection: {
        "surface_levels": each(
            '"SIZE:DEPTH" levels of whole numbers, e.g. "10000:8"',
            _matching(_SURFACE_LEVEL, "not SIZE:DEPTH"),
        ),
        "freshlane": each("page URLs of seed sites", _page_url),
        "freshlane_interval": _SECONDS,
        "fresh_sources": Rule("true or false"),
        "fresh_probe": number(60, unit="seconds"),
        "split_floor": _FRACTION,
        "split_ceiling": _FRACTION,
        "split_half_drain": _SECONDS,
        "sitemaps": Rule("true or false"),
        "sitemap_fallback": Rule("true or false"),
        "promote": whole(0, 1_000_000),
        "rank_every": _SECONDS,
    },
    LimitsSection: {
        "overrides": each(
            '"KEY => rate=R [burst=B] [slot_width=W]" rules, e.g. "site:example.org => rate=0.2"',
            _override,
        ),
    },
    KeyLimits: {
        "rate": number(above=0, unit="cost units per second", infinite=True),
        "burst": number(0, unit="seconds"),
        "slot_width": number(above=0, high=60, unit="seconds"),
    },
    CostsSection: {
        "index": number(above=0),
        "detail": number(above=0),
        "image": number(above=0),
        "robots": number(above=0),
        "rules": each(
            '"REGEX => CLASS" rules, CLASS one of index, detail, image, robots', _cost_rule
        ),
    },
    PolitenessSection: {
        "max_lead": _SECONDS,
        "start_margin": number(0, 1, unit="seconds"),
        "max_in_flight_per_site": whole(1, 64),
        "latency_ratio": number(1),
        "latency_min_rise": number(0, unit="seconds"),
        "latency_decrease": _FRACTION,
        "latency_increase": _FRACTION,
        "latency_floor": _FRACTION,
        "latency_cooldown": number(0, unit="seconds"),
        "origin_pause_sites": whole(1, 1_000),
        "origin_pause_window": _SECONDS,
        "origin_error_run": whole(1, 10_000),
        "default_retry_after": _SECONDS,
        "max_backoff": _SECONDS,
        "suspend_after_errors": whole(1, 1_000_000),
        "suspend_for": _SECONDS,
        "max_retry_after": _SECONDS,
    },
    RobotsSection: {
        # RFC 9309: a robots.txt is cached at most 24 hours, at least 500 KiB of it is parsed,
        # and at least five redirects are followed.
        "max_age": number(above=0, high=86_400, unit="seconds"),
        "retry_unreachable": _SECONDS,
        "max_bytes": whole(512_000, 1 << 30, unit="bytes"),
        "max_redirects": whole(5, 20),
        "max_crawl_delay": _SECONDS,
    },
    MediaSection: {
        "fetch": Rule("true or false"),
        "cdn_hosts": each("host names", _host),
        "imgsvc_hosts": each("host names", _host),
        "max_in_flight": whole(0, 100_000),
        "max_in_flight_per_key": whole(1, 10_000),
        "max_queued": whole(1, 100_000_000),
    },
    WarcSection: {
        "enabled": Rule("true or false"),
        "max_file_bytes": whole(1 << 20, 1 << 40, unit="bytes"),
        "prefix": text(
            'a file name prefix: letters, digits, "-" and "_"',
            _matching(re.compile(r"[A-Za-z0-9_-]{1,64}"), ""),
        ),
        "compression_level": whole(1, 9),
        "payload": one_of("redacted", "raw"),
    },
    DocumentsSection: {
        "segment_bytes": whole(1 << 16, 1 << 40, unit="bytes"),
        "segment_seconds": number(above=0, high=30 * 86_400, unit="seconds"),
    },
    ParseSection: {
        "text": Rule("true or false"),
        "near_distance": whole(0, 16, unit="bits"),
        "remember": whole(0, 100_000_000, unit="texts"),
        "hook": text('"module:function" (e.g. "myhooks:extract"), or "" for none', _hook_spec),
        "hook_timeout": number(above=0, high=600, unit="seconds"),
    },
    ScopeSection: {
        "include": each("regular expressions searched in URLs", _regex),
        "exclude": each("regular expressions searched in URLs", _regex),
        "subdomains": Rule("true or false"),
        "adopt_redirects": Rule("true or false"),
    },
    RedactSection: {
        "keys": Rule("true or false"),
        "emails": Rule("true or false"),
        "phones": Rule("true or false"),
        "phone_region": text('an ISO 3166 region code phonenumbers knows, e.g. "DE"', _region),
        "skip": each("key kinds of courtier.sinks.redact", _key_kind),
    },
    RenderSection: {
        "mode": one_of("never", "auto", "always"),
        "sites": each('"HOST => MODE" rules, MODE one of never, auto, always', _render_site),
        "rules": each('"REGEX => MODE" rules, MODE one of never, auto, always', _render_rule),
        "browser": text('the path of a Chromium executable, or "" to look on PATH', _executable),
        "browsers": whole(1, 64),
        "pages_per_browser": whole(1, 64),
        "page_timeout": number(above=0, high=3600, unit="seconds"),
        "settle": number(0, 60, unit="seconds"),
        "stall": number(above=0, high=3600, unit="seconds"),
        "memory_limit": whole(64 << 20, 1 << 40, unit="bytes"),
        "fetch_types": each(
            "request types: document, script, stylesheet, xhr, fetch, image, font, media, other",
            _render_type,
        ),
        "max_requests": whole(1, 10_000),
        "hosts": each("host names", _host),
        "cache_bytes": whole(0, 1 << 34, unit="bytes"),
        "cache_seconds": number(0, unit="seconds"),
    },
    ObserveSection: {
        "request_log": Rule("true or false"),
        "flush_seconds": number(above=0, high=3600, unit="seconds"),
        "rotate_seconds": number(above=0, high=86_400, unit="seconds"),
        "rotate_rows": whole(1, 100_000_000),
        "rotate_bytes": whole(1, 1 << 34, unit="bytes"),
        "compression": one_of("zstd", "snappy", "gzip", "lz4", "none"),
        "worker": text("a worker name (any text)", lambda _value: None),
        "metrics_port": whole(0, 65535),
        "metrics_host": text("an IP address to listen on", _address),
        "anomalies": Rule("true or false"),
        "anomaly_band": number(above=0, high=100),
        "anomaly_latency_ratio": number(low=1, high=100),
        "anomaly_latency_min_rise": number(low=0, high=3600, unit="seconds"),
        "anomaly_rate_min_rise": number(low=0, high=1),
        "anomaly_persist": whole(1, 1000),
        "anomaly_rate_window": number(above=0, high=3600, unit="seconds"),
        "anomaly_budget_tolerance": number(low=0, high=10),
        "anomaly_relearn": number(above=0, unit="seconds"),
        "anomaly_hold": number(0, 86_400, unit="seconds"),
        "anomaly_slowdown": Rule("true or false"),
        "live": Rule("true or false"),
        "progress_seconds": number(above=0, unit="seconds"),
        "sample_seconds": number(above=0, unit="seconds"),
        "stats_seconds": number(above=0, unit="seconds"),
        "frontier_seconds": number(low=0, unit="seconds"),
    },
    ControlSection: {
        "poll": number(above=0, high=3600, unit="seconds"),
        "http_port": whole(0, 65535),
        "http_host": text("an IP address to listen on", _address),
        "http_token": Rule("a secret of 16 characters or more"),
    },
}


# -- loading ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Resolved:
    """The effective configuration and where each of its values came from."""

    config: Config
    sources: dict[str, Source]
    """``"crawl.max_in_flight"`` -> ``Source("file", "c.toml:3:17")``, for every setting."""


def settings(config: Config) -> Iterator[tuple[str, Any]]:
    """Every setting of ``config``: ("limits.origin.rate", 2.0), in declaration order."""
    for path, value, _owner, _annotation in _settings.leaves(config):
        yield ".".join(path), value


def validate(config: Config) -> Config:
    """``config`` if every setting has its type and is within its rule; a ``Config`` built
    in Python is checked here as a file's values are. Raises ``ConfigError``."""
    _settings.validate(config, RULES)
    return config


def _file_entries(path: Path) -> list[Entry]:
    try:
        text = path.read_text(encoding="utf-8")
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory; must be a TOML file") from None
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such configuration file") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it ({exc.strerror})") from None
    if path.suffix.lower() == ".json":
        try:
            table = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}:{exc.lineno}:{exc.colno}: not JSON: {exc.msg}") from None
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: must be a JSON object of sections")
        positions: dict[tuple[str, ...], Any] = {}
    else:
        try:
            table = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            where = re.search(r" \(at line (\d+), column (\d+)\)$", str(exc))
            if where is None:
                raise ConfigError(f"{path}: not valid TOML: {exc}") from None
            reason = str(exc)[: where.start()]
            line, column = where.groups()
            raise ConfigError(f"{path}:{line}:{column}: not valid TOML: {reason}") from None
        positions = _settings.toml_positions(text)

    def locate(words: tuple[str, ...]) -> tuple[Source, str, str]:
        for n in range(len(words), 0, -1):
            if words[:n] in positions:
                (key_line, key_col), (line, col) = positions[words[:n]]
                if n < len(words):
                    line, col = key_line, key_col
                where = f"{path}:{line}:{col}"
                return Source("file", where), f"{path}:{key_line}:{key_col}: ", f"{where}: "
        return Source("file", str(path)), f"{path}: ", f"{path}: "

    return list(_settings.mapping_entries(Config, table, locate))


def _entries(
    path: Path | None, overrides: Iterable[str], env: Mapping[str, str] | None
) -> list[Entry]:
    """Every layer's entries, lowest precedence first."""
    entries = _file_entries(path) if path is not None else []
    entries += _settings.env_entries(Config, os.environ if env is None else env)
    entries += [_settings.override_entry(Config, item) for item in overrides]
    return entries


def _combine(base: Config, entries: Iterable[Entry]) -> tuple[Config, dict[str, Source]]:
    values: dict[tuple[str, ...], Any] = {}
    chosen: dict[tuple[str, ...], Entry] = {}
    for entry in entries:
        names, value = _settings.check_entry(Config, RULES, entry)
        values[names] = value
        chosen[names] = entry
    config: Config = _settings.build(base, values, chosen)
    sources = {name: DEFAULT for name, _value in settings(config)}
    sources.update({".".join(names): entry.source for names, entry in chosen.items()})
    return config, sources


def resolve(
    path: Path | None = None,
    overrides: Iterable[str] = (),
    env: Mapping[str, str] | None = None,
) -> Resolved:
    """Defaults < the file at ``path`` < environment (``os.environ`` unless ``env`` is
    given) < ``section.key=value`` overrides, each value checked; raises ``ConfigError``."""
    config, sources = _combine(Config(), _entries(path, overrides, env))
    return Resolved(config, sources)


def load(
    path: Path | None = None,
    overrides: Iterable[str] = (),
    env: Mapping[str, str] | None = None,
) -> Config:
    """The effective configuration: defaults < file < environment < overrides."""
    return resolve(path, overrides, env).config


def apply(config: Config, values: Mapping[str, Any]) -> Config:
    """Return ``config`` with ``values`` ({section: {key: value}}) applied, type-checked."""

    def locate(words: tuple[str, ...]) -> tuple[Source, str, str]:
        return Source("mapping", ".".join(words)), "", ""

    if not isinstance(values, Mapping):
        raise ConfigError(f"settings must be a mapping of sections, got {type(values).__name__}")
    entries = list(_settings.mapping_entries(Config, values, locate))
    return _combine(config, entries)[0]


SECRETS = frozenset({"control.http_token"})
"""Settings shown as ``"***"`` when set: ``config show`` must not print a secret."""


def _shown(path: tuple[str, ...], value: Any) -> Any:
    name = ".".join(path)
    if name == "fetch.proxy":
        from courtier.net.proxy import redact

        return redact(value)  # the proxy's password, not its address
    return "***" if name in SECRETS and value else value


def _source_shown(name: str, source: Source) -> Source:
    """A ``-s`` flag that set a secret is shown with the secret hidden, as the value is."""
    if source.layer != "-s" or (name not in SECRETS and name != "fetch.proxy"):
        return source
    value = source.where.partition("=")[2]
    return Source(source.layer, f"{name}={_shown(tuple(name.split('.')), value)}")


def to_toml(resolved: Resolved) -> str:
    """The effective configuration as a TOML file, each value commented with its source
    (secrets as ``"***"``)."""
    lines: list[str] = []
    table: tuple[str, ...] | None = None
    for path, value, _owner, _annotation in _settings.leaves(resolved.config):
        value = _shown(path, value)
        if path[:-1] != table:
            table = path[:-1]
            lines += ["", f"[{'.'.join(table)}]"] if lines else [f"[{'.'.join(table)}]"]
        name = ".".join(path)
        source = _source_shown(name, resolved.sources[name])
        lines.append(f"{path[-1]} = {_settings.show(value)}  # {source}")
    return "\n".join(lines) + "\n"


def to_json(resolved: Resolved) -> dict[str, Any]:
    """The effective configuration as a JSON-ready mapping that is itself a valid config
    file (but for secrets, shown as ``"***"``); ``"$sources"`` (ignored when read back) names
    the source of every value."""
    document: dict[str, Any] = {
        "$sources": {
            name: {"layer": shown.layer, "where": shown.where}
            for name, source in resolved.sources.items()
            for shown in (_source_shown(name, source),)
        }
    }
    for path, value, _owner, _annotation in _settings.leaves(resolved.config):
        value = _shown(path, value)
        node = document
        for word in path[:-1]:
            node = node.setdefault(word, {})
        node[path[-1]] = list(value) if isinstance(value, tuple) else value
    return document
