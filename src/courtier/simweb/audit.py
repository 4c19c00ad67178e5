"""The politeness audit: what the server-side request log says about the crawler that made it.

Rules (the ground truth is the world, never the crawler's own view):
- A request belongs to the site its Host header names in the world's table of spellings (case,
  trailing dot and port do not matter). A request the canary logged is a canary hit. A Host
  the world does not know, or a site outside the seed, is a request outside the seed; media
  hosts (CDN, store, image service) are counted apart and allowed only with `allow_media`.
- Per site: the minimum start-to-start gap and the most requests starting in any 1 s window.
  A gap is read at its longest: from the earlier request's `earliest` arrival (its stamp,
  unless the server's own loop had stood still before it, `stalls`) to the later one's
  stamp, so a stall of the server is never read as the crawler's violation. How many stamps
  were uncertain, and by how much at most, is reported (`stamp_uncertainty`). Every window
  count (per site, origin, bucket) takes a request only when all of its span, from its
  earliest arrival to its stamp, lies inside the window: what certainly started there.
- Per origin: the most cost units starting in any sliding 1 s and 5 s window. GCRA keeps that
  at most `budget × window + largest request cost` (one request may start at a window's end),
  so that is the limit a window is judged against.
- Cache misses: a MISS at the CDN or the image service makes the cache fetch the object from
  its customer (`World.media_customer`), so it is charged to the customer's origin as an image
  (1 unit) at the miss's start and counted in that origin's windows (`miss_requests`). Hits
  are never charged; a miss for no known customer is only counted. `cdn-misses` holds when no
  origin that received misses is over budget.
- Media hosts (CDN, image service, store) are not origins with a budget of their own: the
  caches are judged by the misses they pass on, the store per bucket. A vanity media host
  (`images.<site>`) is the CDN or the store it CNAMEs to: a miss there is its site's, a
  request there is its bucket's. Platform A's media host is platform A's own servers: every
  request to it is charged to platform A as an image (1 unit; `media_requests`).
- The image service answers some customers store-like (`World.imgsvc_mode`): nothing reaches
  the customer, and the service limits the customer like a bucket, so those requests are
  judged per customer as a bucket named `imgsvc:simresize/<label>` (`<host>` when seed sites
  share the label).
- Per bucket (records whose `bucket` is set: path-style and virtual-hosted alike): the most
  requests starting in any 1 s and 5 s window, against `World.bucket_limit(window)` =
  `bucket_rate × (window + bucket_burst) + 1` (GCRA with a burst tolerance). `bucket-rate`
  holds when no bucket is over its limit.
- robots.txt: judged with protego against the world's robots.txt for the token `courtier`;
  a robots.txt answering 5xx disallows everything, a 4xx allows everything. Fetching
  /robots.txt itself is never a violation.
- Crawl-delay: start-to-start gaps on the site (read as above) shorter than its delay, minus
  the tolerance.
- Retry-After: a request to a site that starts after a 429/503 with Retry-After was sent
  (its end) and before that answer's `retry_until`, minus the tolerance.
- Duplicates: a request for a canonical URL (site, path, query parameters sorted) that had
  already received a final answer (anything but 429 and 5xx). One asked again while the
  server was still answering it after `GAVE_UP_AFTER` seconds (a hanging site the crawler
  gave up on) is a retry, not a duplicate; two at once are duplicates.
- `ok` holds the walking-skeleton criteria: no per-site gap under `site_interval - tolerance`,
  no robots violation, no canary hit, no request outside the seed. The other criteria
  (Crawl-delay, Retry-After, origin budget, cache misses, bucket rate, latency feedback,
  duplicates) are reported and do not decide `ok`.
- The ceiling (`courtier.simweb.ceiling`): per origin with work, `min(budget, Σ site limit ×
  site cost)` while it has work, summed; utilisation is the achieved units over it, overall and
  for the run's second half, with the origins not requested in the first 10 s. The run starts
  at the first request, or at `run_start` when the caller knows when the crawler was started
  (a benchmark), so that a crawler's start-up counts. A measurement, not a criterion.
- Single-page apps and their twin (`spa`): requests per site by path class (`spa_path_class`:
  robots, home, listing, item, api-list, api-item, static, other), the 304s among them, and
  the catalogue items reached (distinct `/item/N` asked for with a final answer), so a
  rendering crawl of an SPA can be set beside a crawl of its twin. A request to the
  third-party script host the shells embed is a request outside the seed (kind
  `third-party`); what the apps' scripts probe reaches the canary (a canary hit) or nothing
  the server sees (the metadata and private addresses).
- `extra_seeds` are hosts the crawl was allowed to add to the world's seed (horizon hosts
  promoted by `courtier rank`, hosts requested by name): they count as seed for every check
  (outside-seed, gaps, robots, Crawl-delay, Retry-After, duplicates). Any spelling of a host
  the world knows is accepted; a host it does not know is a ValueError.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from protego import Protego

from courtier.simweb.ceiling import (
    DEFAULT_FAST_START,
    DEFAULT_IDLE_AFTER,
    Ceiling,
    compute_ceiling,
)
from courtier.simweb.log import RequestRecord, read_log
from courtier.simweb.world import (
    CHARGED_MEDIA_KINDS,
    CRAWLER_TOKEN,
    IMGSVC_PROVIDER,
    IMGSVC_STORE,
    MEDIA_KINDS,
    Behaviour,
    Site,
    SiteKind,
    World,
    request_cost,
)

DEFAULT_TOLERANCE = 0.05
EXAMPLES = 10
WINDOWS = (1.0, 5.0)
MISS_COST = 1  # a cache miss fetches one image from the customer
CACHE_KINDS = frozenset({SiteKind.CDN, SiteKind.IMGSVC})
GAVE_UP_AFTER = 5.0  # seconds a request was unanswered before asking again is a retry


@dataclass(frozen=True)
class Violation:
    kind: str
    host: str
    target: str
    start: float
    detail: str = ""


_Reporter = Callable[[Violation], None]
_Span = tuple[float, float]
"""A request's (earliest arrival, stamp): equal unless the server had stalled."""


@dataclass(frozen=True)
class SiteFigures:
    host: str
    origin: str
    requests: int
    min_gap: float | None  # None with fewer than two requests
    max_per_second: int
    crawl_delay: float | None
    crawl_delay_violations: int
    robots_violations: int
    retry_after_violations: int


@dataclass(frozen=True)
class OriginFigures:
    origin: str
    requests: int  # requests to the origin's own sites
    cost_units: int  # of those requests and of the cache misses charged to the origin
    budget: float  # cost units per second
    max_units_1s: int
    max_units_5s: int
    limit_1s: float
    limit_5s: float
    miss_requests: int  # CDN and image-service cache misses for its sites, counted in
    media_requests: int = 0  # requests to its own media host (platform A's), counted in

    @property
    def over_budget(self) -> bool:
        return self.max_units_1s > self.limit_1s or self.max_units_5s > self.limit_5s


@dataclass(frozen=True)
class BucketFigures:
    bucket: str
    requests: int
    max_1s: int  # most requests starting in any 1 s window
    max_5s: int
    limit_1s: float  # bucket_rate × (window + bucket_burst) + 1
    limit_5s: float

    @property
    def over_limit(self) -> bool:
        return self.max_1s > self.limit_1s or self.max_5s > self.limit_5s

    @property
    def load(self) -> float:
        """The busiest window as a fraction of its limit (over 1: over the limit)."""
        return max(self.max_1s / self.limit_1s, self.max_5s / self.limit_5s)


@dataclass(frozen=True)
class MediaSummary:
    requests: dict[str, int]  # by media kind: cdn, imgsvc, store
    cache_hits: int  # at the CDN and the image service
    cache_misses: int
    unattributed_misses: int  # misses for no known customer: charged to nobody


@dataclass(frozen=True)
class StampUncertainty:
    """Requests stamped after the server's loop stood still (``stalls``): each may have
    arrived as early as the stall's start, and gaps are judged by their longest reading."""

    requests: int
    longest: float  # seconds between the earliest arrival and the stamp, the most of any


@dataclass(frozen=True)
class SpaFigures:
    """What one single-page app (or its plain-HTML twin) was asked for."""

    host: str
    kind: str  # "spa" or "spa-twin"
    render_hang: bool  # its script hangs the renderer (`Behaviour.RENDER_HANG`)
    requests: dict[str, int]  # by `spa_path_class`
    not_modified: int  # answered 304: a static file revalidated
    items_reached: int  # distinct catalogue items (/item/N) asked for with a final answer


@dataclass(frozen=True)
class Criterion:
    name: str
    ok: bool
    required: bool  # part of the overall `ok`
    detail: str


@dataclass(frozen=True)
class AuditReport:
    requests: int
    duration: float
    throughput: float  # requests per second over the logged span
    statuses: dict[str, int]
    site_interval: float
    tolerance: float
    sites: tuple[SiteFigures, ...]
    origins: tuple[OriginFigures, ...]
    canary_hits: int
    outside_seed: dict[str, int]  # by kind: horizon, farm, unknown, cdn, store, imgsvc
    media_requests: int
    duplicate_fetches: int
    violations: tuple[Violation, ...]  # the first few of each kind
    criteria: tuple[Criterion, ...]
    buckets: tuple[BucketFigures, ...]
    media: MediaSummary
    ceiling: Ceiling
    stamp_uncertainty: StampUncertainty
    spa: tuple[SpaFigures, ...] = ()  # single-page apps and their twin, by host

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.criteria if c.required)

    def criterion(self, name: str) -> Criterion:
        for criterion in self.criteria:
            if criterion.name == name:
                return criterion
        raise KeyError(name)

    def to_json(self) -> dict[str, object]:
        data = dataclasses.asdict(self)
        data["ok"] = self.ok
        for origin, figures in zip(data["origins"], self.origins, strict=True):
            origin["over_budget"] = figures.over_budget
        for bucket, bucket_figures in zip(data["buckets"], self.buckets, strict=True):
            bucket["over_limit"] = bucket_figures.over_limit
        return data


def audit(
    log_path: Path,
    world: World,
    *,
    site_interval: float = 1.0,
    tolerance: float = DEFAULT_TOLERANCE,
    allow_media: bool = False,
    extra_seeds: Iterable[str] = (),
    idle_after: float = DEFAULT_IDLE_AFTER,
    fast_start: float = DEFAULT_FAST_START,
    run_start: float | None = None,
) -> AuditReport:
    return audit_records(
        read_log(log_path),
        world,
        site_interval=site_interval,
        tolerance=tolerance,
        allow_media=allow_media,
        extra_seeds=extra_seeds,
        idle_after=idle_after,
        fast_start=fast_start,
        run_start=run_start,
    )


def seed_hosts_with(world: World, extra_seeds: Iterable[str]) -> frozenset[str]:
    """The world's seed hosts plus ``extra_seeds`` (any spelling, port allowed), canonical."""
    hosts = set(world.seed_hosts)
    for name in extra_seeds:
        site = world.site_of_host(name.strip())
        if site is None:
            raise ValueError(f"extra seed {name!r} is not a host of this world")
        hosts.add(site.host)
    return frozenset(hosts)


def audit_records(
    records: Iterable[RequestRecord],
    world: World,
    *,
    site_interval: float = 1.0,
    tolerance: float = DEFAULT_TOLERANCE,
    allow_media: bool = False,
    extra_seeds: Iterable[str] = (),
    idle_after: float = DEFAULT_IDLE_AFTER,
    fast_start: float = DEFAULT_FAST_START,
    run_start: float | None = None,
) -> AuditReport:
    seed = seed_hosts_with(world, extra_seeds)
    by_site: dict[str, list[RequestRecord]] = defaultdict(list)
    statuses: Counter[str] = Counter()
    outside: Counter[str] = Counter()
    examples: dict[str, list[Violation]] = defaultdict(list)
    counts: Counter[str] = Counter()
    media_kinds: Counter[str] = Counter()
    misses: dict[str, list[_Span]] = defaultdict(list)  # customer origin -> miss spans
    charged: dict[str, list[_Span]] = defaultdict(list)  # origin -> its media host's requests
    bucket_spans: dict[str, list[_Span]] = defaultdict(list)
    first, last, total = float("inf"), float("-inf"), 0
    uncertain, longest_uncertainty = 0, 0.0

    def violation(v: Violation) -> None:
        counts[v.kind] += 1
        if len(examples[v.kind]) < EXAMPLES:
            examples[v.kind].append(v)

    for record in records:
        total += 1
        first, last = min(first, record.start), max(last, record.end)
        if record.arrived_after is not None:
            uncertain += 1
            longest_uncertainty = max(longest_uncertainty, record.start - record.arrived_after)
        statuses[f"{record.status // 100}xx"] += 1
        if record.canary:
            violation(Violation("canary", record.host, record.target, record.start))
            continue
        site = world.site_of_host(record.host)
        if site is None or site.host not in seed:
            kind = "unknown" if site is None else str(site.kind)
            outside[kind] += 1
            if site is None or site.kind not in MEDIA_KINDS or not allow_media:
                violation(Violation("outside-seed", record.host, record.target, record.start, kind))
        if site is not None:
            by_site[site.host].append(record)
            if site.kind in MEDIA_KINDS:
                media_kinds[str(site.kind)] += 1
            if site.kind in CACHE_KINDS and record.cache is not None:
                counts[f"cache-{record.cache.lower()}"] += 1
                if record.cache == "MISS":
                    customer = world.media_customer(record.host, record.target)
                    if customer is None:
                        counts["unattributed-miss"] += 1
                    else:
                        misses[customer.origin].append((record.earliest, record.start))
            if site.kind in CHARGED_MEDIA_KINDS:
                charged[site.origin].append((record.earliest, record.start))
            if site.kind is SiteKind.IMGSVC:
                customer = world.media_customer(record.host, record.target)
                mode = world.imgsvc_mode(record.host, record.target)
                if customer is not None and mode == IMGSVC_STORE:
                    name = f"imgsvc:{IMGSVC_PROVIDER}/{_imgsvc_customer(world, customer)}"
                    bucket_spans[name].append((record.earliest, record.start))
        if record.bucket:
            bucket_spans[record.bucket].append((record.earliest, record.start))

    site_figures = []
    robots = _RobotsJudge()
    for host, site_records in by_site.items():
        site = world.sites[host]
        site_records.sort(key=lambda r: r.start)
        if host in seed:
            site_figures.append(_site_figures(site, site_records, robots, tolerance, violation))
    for v in _duplicates(seed, by_site):
        violation(v)
    for host, site_records in by_site.items():
        if Behaviour.RISING_LATENCY in world.sites[host].behaviours:
            counts["rising-latency-requests"] += len(site_records)
            for r in site_records:
                if r.status == 503:
                    violation(Violation("overload", host, r.target, r.start, "503 overloaded"))
    origins = _origin_figures(world, by_site, misses, charged)
    buckets = _bucket_figures(world, bucket_spans)
    duration = max(0.0, last - first) if total else 0.0
    # Misses and media-host requests alike: charged to an origin, no site's requests.
    extra = {
        origin: sorted(start for _, start in misses.get(origin, []) + charged.get(origin, []))
        for origin in {*misses, *charged}
    }
    ceiling = compute_ceiling(
        world,
        by_site,
        extra,
        seed,
        robots.allowed,
        start=min(first, run_start or first) if total else (run_start or 0.0),
        end=last if total else (run_start or 0.0),
        site_interval=site_interval,
        idle_after=idle_after,
        fast_start=fast_start,
    )
    media = sum(n for kind, n in outside.items() if kind in {str(k) for k in MEDIA_KINDS})
    report = AuditReport(
        requests=total,
        duration=duration,
        throughput=total / duration if duration > 0 else 0.0,
        statuses=dict(sorted(statuses.items())),
        site_interval=site_interval,
        tolerance=tolerance,
        sites=tuple(sorted(site_figures, key=lambda s: s.host)),
        origins=origins,
        canary_hits=counts["canary"],
        outside_seed=dict(sorted(outside.items())),
        media_requests=media,
        duplicate_fetches=counts["duplicate"],
        violations=tuple(v for kind in sorted(examples) for v in examples[kind]),
        criteria=(),
        buckets=buckets,
        media=MediaSummary(
            requests=dict(sorted(media_kinds.items())),
            cache_hits=counts["cache-hit"],
            cache_misses=counts["cache-miss"],
            unattributed_misses=counts["unattributed-miss"],
        ),
        ceiling=ceiling,
        stamp_uncertainty=StampUncertainty(uncertain, longest_uncertainty),
        spa=_spa_figures(world, by_site),
    )
    criteria = _criteria(report, counts, allow_media)
    return dataclasses.replace(report, criteria=criteria)


def _imgsvc_customer(world: World, customer: Site) -> str:
    """The image service's name for a customer: its first label, or its host when another
    seed site shares the label (`www.` sites of a generated world)."""
    alone = world.customer_labels.get(customer.label) == customer.host
    return customer.label if alone else customer.host


def _site_figures(
    site: Site,
    records: Sequence[RequestRecord],
    robots: _RobotsJudge,
    tolerance: float,
    violation: _Reporter,
) -> SiteFigures:
    # The longest each gap may have been: a stamp made late by a stall of the server itself
    # is not the crawler's doing (``stalls``).
    gaps = [b.start - a.earliest for a, b in itertools.pairwise(records)]
    delay_violations = 0
    if site.crawl_delay is not None:
        for record, gap in zip(records[1:], gaps, strict=True):
            if gap < site.crawl_delay - tolerance:
                delay_violations += 1
                violation(
                    Violation(
                        "crawl-delay",
                        site.host,
                        record.target,
                        record.start,
                        f"gap {gap:.3f}s < Crawl-delay {site.crawl_delay:g}s",
                    )
                )
    robots_violations = 0
    for record in records:
        if not robots.allowed(site, record.target):
            robots_violations += 1
            violation(Violation("robots", site.host, record.target, record.start))
    retry_violations = _retry_after_violations(site, records, tolerance, violation)
    return SiteFigures(
        host=site.host,
        origin=site.origin,
        requests=len(records),
        min_gap=min(gaps) if gaps else None,
        max_per_second=_max_in_window(
            sorted((r.earliest, r.start) for r in records), [1] * len(records), 1.0
        ),
        crawl_delay=site.crawl_delay,
        crawl_delay_violations=delay_violations,
        robots_violations=robots_violations,
        retry_after_violations=retry_violations,
    )


def _retry_after_violations(
    site: Site, records: Sequence[RequestRecord], tolerance: float, violation: _Reporter
) -> int:
    refusals = sorted((r.end, r.retry_until) for r in records if r.retry_until is not None)
    if not refusals:
        return 0
    count, index, until = 0, 0, float("-inf")
    for record in records:  # in start order
        while index < len(refusals) and refusals[index][0] <= record.start:
            until = max(until, refusals[index][1])
            index += 1
        if record.start < until - tolerance:
            count += 1
            violation(
                Violation(
                    "retry-after",
                    site.host,
                    record.target,
                    record.start,
                    f"{until - record.start:.3f}s before Retry-After ends",
                )
            )
    return count


def _max_in_window(spans: Sequence[_Span], costs: Sequence[int], window: float) -> int:
    """Most cost certain to have started inside one half-open window [t, t + window).

    ``spans`` are (earliest, start) pairs sorted by earliest: a request counts in a window
    only when all of its span lies inside (a stamp after a stall of the server is uncertain,
    ``stalls``), so the figure never exceeds the true busiest window. With exact stamps it is
    the busiest window of the stamps. The best ``t`` is some request's earliest.
    """
    uncertain = [i for i, (earliest, start) in enumerate(spans) if start > earliest]
    best = running = hi = 0
    for lo, (t, _) in enumerate(spans):
        end = t + window
        while hi < len(spans) and spans[hi][0] < end:
            running += costs[hi]
            hi += 1
        load = running
        for i in uncertain[bisect.bisect_left(uncertain, lo) : bisect.bisect_left(uncertain, hi)]:
            if spans[i][1] >= end:
                load -= costs[i]
        best = max(best, load)
        running -= costs[lo]
    return best


def _origin_figures(
    world: World,
    by_site: dict[str, list[RequestRecord]],
    misses: dict[str, list[_Span]],
    charged: dict[str, list[_Span]],
) -> tuple[OriginFigures, ...]:
    per_origin: dict[str, list[tuple[float, float, int]]] = defaultdict(list)
    for host, records in by_site.items():
        site = world.sites[host]
        if site.kind in MEDIA_KINDS:
            continue  # judged by the misses they pass on (caches) and per bucket (store)
        per_origin[site.origin].extend(
            (r.earliest, r.start, request_cost(site, r.target.partition("?")[0])) for r in records
        )
    for extra in (misses, charged):
        for origin, spans in extra.items():
            per_origin[origin].extend((earliest, start, MISS_COST) for earliest, start in spans)
    figures = []
    for origin, booked in per_origin.items():
        booked.sort()
        spans = [(earliest, start) for earliest, start, _ in booked]
        costs = [c for _, _, c in booked]
        budget = world.origin_budget(origin)
        largest = max(costs)
        one, five = (_max_in_window(spans, costs, w) for w in WINDOWS)
        missed = len(misses.get(origin, ()))
        media = len(charged.get(origin, ()))
        figures.append(
            OriginFigures(
                origin,
                len(booked) - missed - media,
                sum(costs),
                budget,
                one,
                five,
                budget * WINDOWS[0] + largest,
                budget * WINDOWS[1] + largest,
                missed,
                media,
            )
        )
    return tuple(sorted(figures, key=lambda f: f.origin))


def _bucket_figures(
    world: World, bucket_spans: dict[str, list[_Span]]
) -> tuple[BucketFigures, ...]:
    limit_1s, limit_5s = (world.bucket_limit(w) for w in WINDOWS)
    figures = []
    for bucket, spans in bucket_spans.items():
        spans.sort()
        ones = [1] * len(spans)
        one, five = (_max_in_window(spans, ones, w) for w in WINDOWS)
        figures.append(BucketFigures(bucket, len(spans), one, five, limit_1s, limit_5s))
    return tuple(sorted(figures, key=lambda f: f.bucket))


def spa_path_class(path: str) -> str:
    """What an SPA or twin request asked for: robots, home, listing, item (an SPA's shells
    of those pages included), api-list, api-item, static, other."""
    if path.startswith("/robots.txt"):
        return "robots"
    if path in ("/", ""):
        return "home"
    for prefix, name in (
        ("/list/", "listing"),
        ("/item/", "item"),
        ("/api/list/", "api-list"),
        ("/api/item/", "api-item"),
        ("/static/", "static"),
    ):
        if path.startswith(prefix):
            return name
    return "other"


def _spa_figures(world: World, by_site: dict[str, list[RequestRecord]]) -> tuple[SpaFigures, ...]:
    figures = []
    for host, records in by_site.items():
        site = world.sites[host]
        if site.kind not in (SiteKind.SPA, SiteKind.SPA_TWIN):
            continue
        classes: Counter[str] = Counter()
        items: set[int] = set()
        for record in records:
            path = record.target.partition("#")[0].partition("?")[0]
            name = spa_path_class(path)
            classes[name] += 1
            number = path.removeprefix("/item/")
            final = record.status != 429 and record.status < 500
            if name == "item" and final and number.isascii() and number.isdigit():
                items.add(int(number) if len(number) < 10 else 0)
        figures.append(
            SpaFigures(
                host=host,
                kind=str(site.kind),
                render_hang=Behaviour.RENDER_HANG in site.behaviours,
                requests=dict(sorted(classes.items())),
                not_modified=sum(1 for r in records if r.status == 304),
                items_reached=len(items & set(range(1, world.params.n_items + 1))),
            )
        )
    return tuple(sorted(figures, key=lambda f: f.host))


def _duplicates(
    seed: Collection[str], by_site: dict[str, list[RequestRecord]]
) -> Iterable[Violation]:
    for host, records in by_site.items():
        if host not in seed:
            continue
        answered: dict[tuple[str, tuple[str, ...]], RequestRecord] = {}  # the first answer
        for record in records:
            path, _, query = record.target.partition("#")[0].partition("?")
            key = (path, tuple(sorted(p for p in query.split("&") if p)))
            first = answered.get(key)
            if first is not None and not _gave_up_on(first, record):
                yield Violation("duplicate", host, record.target, record.start)
            elif first is None and record.status != 429 and record.status < 500:
                answered[key] = record


def _gave_up_on(first: RequestRecord, again: RequestRecord) -> bool:
    """``again`` asks for what ``first`` was still answering after ``GAVE_UP_AFTER`` seconds:
    the crawler gave up waiting (a hanging site), so asking again is a retry."""
    return again.start < first.end and again.start - first.start >= GAVE_UP_AFTER


def _criteria(
    report: AuditReport, counts: Counter[str], allow_media: bool
) -> tuple[Criterion, ...]:
    floor = report.site_interval - report.tolerance
    gaps = [s for s in report.sites if s.min_gap is not None and s.min_gap < floor]
    worst = min(gaps, key=lambda s: s.min_gap or 0.0) if gaps else None
    over = [o.origin for o in report.origins if o.over_budget]
    outside = counts["outside-seed"]
    missed = [o for o in report.origins if o.miss_requests]
    missed_over = [o.origin for o in missed if o.over_budget]
    unattributed = report.media.unattributed_misses
    buckets_over = [b for b in report.buckets if b.over_limit]
    busiest = max(report.buckets, key=lambda b: b.load, default=None)
    return (
        Criterion(
            "site-gap",
            not gaps,
            True,
            f"{len(gaps)} sites with a start-to-start gap under {floor:.3f}s"
            + (f" (worst {worst.host}: {worst.min_gap:.3f}s)" if worst else ""),
        ),
        Criterion("robots", counts["robots"] == 0, True, f"{counts['robots']} disallowed fetches"),
        Criterion("canary", counts["canary"] == 0, True, f"{counts['canary']} canary hits"),
        Criterion(
            "outside-seed",
            outside == 0,
            True,
            f"{outside} requests outside the seed"
            + (" (media hosts allowed)" if allow_media else ""),
        ),
        Criterion(
            "crawl-delay",
            counts["crawl-delay"] == 0,
            False,
            f"{counts['crawl-delay']} gaps under a Crawl-delay",
        ),
        Criterion(
            "retry-after",
            counts["retry-after"] == 0,
            False,
            f"{counts['retry-after']} requests inside a Retry-After window",
        ),
        Criterion(
            "origin-budget",
            not over,
            False,
            f"{len(over)} origins over budget" + (f": {', '.join(over[:5])}" if over else ""),
        ),
        Criterion(
            "cdn-misses",
            not missed_over,
            False,
            f"{sum(o.miss_requests for o in missed)} cache misses reached {len(missed)} "
            f"origins; {len(missed_over)} of them over budget with misses counted"
            + (f": {', '.join(missed_over[:5])}" if missed_over else "")
            + (f" ({unattributed} misses for no known customer)" if unattributed else ""),
        ),
        Criterion(
            "bucket-rate",
            not buckets_over,
            False,
            f"{len(buckets_over)} of {len(report.buckets)} buckets over their limit"
            + (
                f" ({'worst' if buckets_over else 'busiest'} {busiest.bucket}: "
                f"{busiest.max_1s}/{busiest.limit_1s:g} in 1 s, "
                f"{busiest.max_5s}/{busiest.limit_5s:g} in 5 s)"
                if busiest
                else ""
            ),
        ),
        Criterion(
            "latency-feedback",
            counts["overload"] == 0,
            False,
            f"the site whose latency rises with load: {counts['rising-latency-requests']} "
            f"requests, {counts['overload']} overload errors (it should slow down before)",
        ),
        Criterion(
            "duplicates",
            counts["duplicate"] == 0,
            False,
            f"{counts['duplicate']} repeat fetches of one canonical URL",
        ),
    )


class _RobotsJudge:
    """Answers "was this fetch allowed?" per the world's robots.txt, caching per site and path."""

    def __init__(self) -> None:
        self._parsers: dict[str, Protego] = {}
        self._answers: dict[tuple[str, str], bool] = {}

    def allowed(self, site: Site, target: str) -> bool:
        if target.startswith("/robots.txt"):
            return True
        if site.robots_status >= 500:
            return False
        if site.robots_status >= 400:
            return True
        key = (site.host, target)
        answer = self._answers.get(key)
        if answer is None:
            parser = self._parsers.get(site.host)
            if parser is None:
                parser = self._parsers[site.host] = Protego.parse(site.robots_text)
            answer = bool(parser.can_fetch(f"http://{site.host}{target}", CRAWLER_TOKEN))
            self._answers[key] = answer
        return answer
