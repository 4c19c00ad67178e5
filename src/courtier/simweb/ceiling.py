"""The ceiling: the most cost units a polite crawler could have had the servers serve in a run.

Rules (server side, the world's ground truth; see docs/simweb.md, "The ceiling"):
- The run is the request log's span, from the first request's start to the last one's end,
  unless the caller knows when the crawler started (`start` earlier than the first request):
  then its start-up counts, as time every seed origin had work and got nothing.
- Work: the sites a crawl is judged on are the seed's standalone sites, platform tenants, edge
  sites, single-page apps and their twin, plus `extra_seeds`. Bait sites are traps (every
  request to them ends at the canary or should be refused), media hosts are no origins,
  horizon and farm hosts are not the crawl's.
- Per origin, its rate while it has work is `min(budget, Σ site limit × site cost)`:
  - a site's limit, in requests per second, is `1 / max(site interval, Crawl-delay, the gap
    under which the site answers 429, its mean answer time)`: one request at a time, a site
    answering in 2 s is asked every 2 s at most (`latency.mean_answer_time`; 0 at loopback);
  - a site's cost is the mean world `request_cost` of the requests it received, else the
    origin's mean, else the run's, else 2 (a detail page);
  - CDN and image-service cache misses charged to the origin are no site's requests, so no
    site interval limits them: their mean rate over the origin's time with work (the misses
    there were, not more: a site has a handful of images) is added to the sum; so are the
    requests to the origin's own media host (platform A's), charged to it alike;
  - a site inside a Retry-After window it answered (from that answer's end to its
    `retry_until`) adds nothing to the sum: the server asked for nothing then.
- An origin has work from the run's first request (every seed site has its robots.txt and home
  page due at the start; an origin of extra seeds only from its first request, as it joined
  the seed during the crawl) until the run's end. Its work ended earlier, at the end of its
  last request, only when it *finished*: nothing was sent to it in the run's last `idle_after`
  seconds and every one of its sites had been sent its core pages (robots.txt, then the home
  page, every listing and every detail page its robots.txt allows, each with a final answer:
  not 429 and not 5xx). An origin left idle with core pages unrequested was neglected, not
  finished: it is charged until the end. A single-page app's core pages are its shells at
  those paths (found only by running its script); one whose script hangs (`RENDER_HANG`)
  shows no crawler its pages, so its core is robots.txt and the home page, and so is a site
  that redirects every page to another host (`Site.redirect_to`).
- Utilisation = achieved units ÷ ceiling units, where an origin's achieved units (its own
  requests plus the cache misses charged to it) count up to its own ceiling: units above it
  are over budget, not throughput (`raw_utilisation` keeps them). The second half is the same
  over the run's second half (requests starting in it, the ceiling integrated over it).
- Buckets and CDN keys are not summed: a bucket accepts ~50 requests/s for a handful of images
  per site, so its ceiling would drown every origin's while measuring nothing a crawler can
  use; cache misses already reach the origins' figures, hits cost nobody.
- Fast start: origins with work (world seed) sent no request in the run's first `fast_start`
  seconds, never requested ones included.
- Per kind of site (`Ceiling.kinds`): the same sums over the origins whose sites are of one
  kind (standalone, cname-tenant, header-tenant, edge-site, edge-tenant, spa, spa-twin, and a
  generated world's platform-tenant, shared-host, cdn-site, pair-site; an
  extra seed's kind is its own, horizon or farm; an origin of several kinds is "mixed").
  Platform A's media host requests and the cache misses charged to an origin count with the
  origin's kind.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from courtier.simweb.latency import mean_answer_time
from courtier.simweb.log import RequestRecord
from courtier.simweb.world import FUZZ_KINDS, Behaviour, Site, SiteKind, World, request_cost

DEFAULT_IDLE_AFTER = 10.0
DEFAULT_FAST_START = 10.0
FALLBACK_COST = 2.0  # a detail page, when a run has no request to take a mean from
WORK_KINDS = frozenset(
    {
        SiteKind.STANDALONE,
        SiteKind.CNAME_TENANT,
        SiteKind.HEADER_TENANT,
        SiteKind.EDGE_SITE,
        SiteKind.EDGE_TENANT,
        SiteKind.SPA,
        SiteKind.SPA_TWIN,
        *FUZZ_KINDS,
    }
)
MIXED_KIND = "mixed"
_RATE_LIMITED = frozenset({Behaviour.RATE_LIMIT_SECONDS, Behaviour.RATE_LIMIT_DATE})

Allowed = Callable[[Site, str], bool]


@dataclass(frozen=True)
class OriginCeiling:
    origin: str
    sites: int  # its sites with work
    budget: float  # cost units per second
    site_bound: float  # Σ site limit × cost + the cache misses' mean rate, units/s
    rate: float  # units/s while it has work and none of its sites is paused
    work_from: float  # seconds after the run's start
    work_until: float
    finished: bool  # its work ended before the run did (see the module's rules)
    ceiling_units: float
    units: int  # achieved: its own requests' costs and the misses charged to it
    second_half_ceiling_units: float
    second_half_units: int
    first_request: float | None  # seconds after the run's start; None: never requested
    last_request: float | None  # its last request's start, seconds after the run's start
    kind: str = ""  # the kind of its sites (a `SiteKind` value), MIXED_KIND if several

    @property
    def utilisation(self) -> float:
        """Achieved ÷ ceiling, uncapped: above 1 means more than the server allowed."""
        return self.units / self.ceiling_units if self.ceiling_units > 0 else 0.0


@dataclass(frozen=True)
class KindCeiling:
    """The ceiling and utilisation summed over the origins of one kind of site."""

    kind: str
    origins: int
    sites: int
    rate: float  # ceiling units per second over the run
    ceiling_units: float
    units: float  # achieved, each origin's counted up to its own ceiling
    raw_units: int
    utilisation: float
    second_half_ceiling_units: float
    second_half_units: float
    second_half_utilisation: float


@dataclass(frozen=True)
class Ceiling:
    duration: float  # the run, seconds
    first_request: float | None  # seconds from the run's start to the first request
    rate: float  # ceiling units per second over the run
    ceiling_units: float
    units: float  # achieved, each origin's counted up to its own ceiling
    raw_units: int  # achieved, all of it
    utilisation: float  # units ÷ ceiling_units
    raw_utilisation: float  # raw_units ÷ ceiling_units
    second_half_ceiling_units: float
    second_half_units: float  # capped per origin as above
    second_half_utilisation: float
    origins_with_work: int
    idle_after: float
    fast_start: float
    late_start: tuple[str, ...]  # world-seed origins not requested in the first fast_start s
    never_requested: tuple[str, ...]
    finished: tuple[str, ...]
    neglected: tuple[str, ...]  # idle at the end with core pages unrequested: charged anyway
    origins: tuple[OriginCeiling, ...]
    kinds: tuple[KindCeiling, ...] = ()  # per kind of site, by kind

    def by_kind(self) -> dict[str, KindCeiling]:
        return {k.kind: k for k in self.kinds}


def compute_ceiling(
    world: World,
    by_site: Mapping[str, Sequence[RequestRecord]],
    misses: Mapping[str, Sequence[float]],
    seed: Collection[str],
    allowed: Allowed,
    *,
    start: float,
    end: float,
    site_interval: float = 1.0,
    idle_after: float = DEFAULT_IDLE_AFTER,
    fast_start: float = DEFAULT_FAST_START,
) -> Ceiling:
    """The ceiling of a run. `by_site` holds each site's records sorted by start, `misses` the
    starts of the cache misses and media-host requests charged to each origin, `seed` the
    canonical seed hosts (extra seeds in), `allowed` whether the world's robots.txt allows a
    target on a site."""
    duration = max(0.0, end - start)
    mid = start + duration / 2
    world_seed = frozenset(world.seed_hosts)
    work: dict[str, list[Site]] = defaultdict(list)
    for host in sorted(seed):
        site = world.sites[host]
        if site.kind in WORK_KINDS or host not in world_seed:
            work[site.origin].append(site)
    costs = {
        site.host: [request_cost(site, _path(r.target)) for r in by_site.get(site.host, ())]
        for sites in work.values()
        for site in sites
    }
    run_cost = _mean([c for per_site in costs.values() for c in per_site]) or FALLBACK_COST
    context = _Context(world_seed, run_cost, start, end, mid, site_interval, idle_after)
    origins = []
    for origin, sites in sorted(work.items()):
        figures = _origin(
            world, origin, sites, by_site, costs, misses.get(origin, ()), allowed, context
        )
        if figures is not None:
            origins.append(figures)

    ceiling_units = sum(o.ceiling_units for o in origins)
    capped = sum(min(float(o.units), o.ceiling_units) for o in origins)
    raw = sum(o.units for o in origins)
    half_ceiling = sum(o.second_half_ceiling_units for o in origins)
    half = sum(min(float(o.second_half_units), o.second_half_ceiling_units) for o in origins)
    seeded = [o for o in origins if any(s.host in world_seed for s in work[o.origin])]
    first = min((r.start for records in by_site.values() for r in records[:1]), default=None)
    return Ceiling(
        duration=duration,
        first_request=None if first is None else max(0.0, first - start),
        rate=ceiling_units / duration if duration > 0 else 0.0,
        ceiling_units=ceiling_units,
        units=capped,
        raw_units=raw,
        utilisation=_ratio(capped, ceiling_units),
        raw_utilisation=_ratio(raw, ceiling_units),
        second_half_ceiling_units=half_ceiling,
        second_half_units=half,
        second_half_utilisation=_ratio(half, half_ceiling),
        origins_with_work=len(origins),
        idle_after=idle_after,
        fast_start=fast_start,
        late_start=tuple(
            o.origin for o in seeded if o.first_request is None or o.first_request > fast_start
        ),
        never_requested=tuple(o.origin for o in seeded if o.first_request is None),
        finished=tuple(o.origin for o in origins if o.finished),
        neglected=tuple(
            o.origin
            for o in origins
            if not o.finished
            and o.last_request is not None
            and o.last_request < duration - idle_after
        ),
        origins=tuple(origins),
        kinds=kind_ceilings(origins, duration),
    )


def kind_ceilings(origins: Sequence[OriginCeiling], duration: float) -> tuple[KindCeiling, ...]:
    """The ceiling and its utilisation per kind of site, summed as the whole is."""
    grouped: dict[str, list[OriginCeiling]] = defaultdict(list)
    for o in origins:
        grouped[o.kind].append(o)
    kinds = []
    for kind, group in sorted(grouped.items()):
        ceiling_units = sum(o.ceiling_units for o in group)
        capped = sum(min(float(o.units), o.ceiling_units) for o in group)
        half_ceiling = sum(o.second_half_ceiling_units for o in group)
        half = sum(min(float(o.second_half_units), o.second_half_ceiling_units) for o in group)
        kinds.append(
            KindCeiling(
                kind=kind,
                origins=len(group),
                sites=sum(o.sites for o in group),
                rate=ceiling_units / duration if duration > 0 else 0.0,
                ceiling_units=ceiling_units,
                units=capped,
                raw_units=sum(o.units for o in group),
                utilisation=_ratio(capped, ceiling_units),
                second_half_ceiling_units=half_ceiling,
                second_half_units=half,
                second_half_utilisation=_ratio(half, half_ceiling),
            )
        )
    return tuple(kinds)


@dataclass(frozen=True)
class _Context:
    world_seed: frozenset[str]
    run_cost: float
    start: float
    end: float
    mid: float
    site_interval: float
    idle_after: float


def _origin(
    world: World,
    origin: str,
    sites: Sequence[Site],
    by_site: Mapping[str, Sequence[RequestRecord]],
    costs: Mapping[str, Sequence[int]],
    miss_starts: Sequence[float],
    allowed: Allowed,
    ctx: _Context,
) -> OriginCeiling | None:
    seeded = any(s.host in ctx.world_seed for s in sites)
    own = [
        (r.start, r.end, cost)
        for s in sites
        for r, cost in zip(by_site.get(s.host, ()), costs[s.host], strict=True)
    ]
    starts = [t for t, _, _ in own] + list(miss_starts)
    first, last = min(starts, default=None), max(starts, default=None)
    if first is None and not seeded:
        return None  # extra seeds never requested never joined the crawl's work
    origin_cost = _mean([c for s in sites for c in costs[s.host]]) or ctx.run_cost
    limits = {
        s.host: _site_limit(world, s, ctx.site_interval) * (_mean(costs[s.host]) or origin_cost)
        for s in sites
    }
    budget = world.origin_budget(origin)
    work_from = ctx.start if seeded or first is None else first
    finished = (
        last is not None
        and last < ctx.end - ctx.idle_after
        and all(_covered(world, s, by_site.get(s.host, ()), allowed) for s in sites)
    )
    work_until = max([e for _, e, _ in own] + list(miss_starts)) if finished else ctx.end
    with_work = work_until - work_from
    miss_rate = len(miss_starts) / with_work if miss_starts and with_work > 0 else 0.0
    site_bound = sum(limits.values()) + miss_rate
    segments = _segments(sites, by_site, limits, budget, site_bound, work_from, work_until)
    units = sum(c for _, _, c in own) + len(miss_starts)
    half = sum(c for t, _, c in own if t >= ctx.mid) + sum(1 for t in miss_starts if t >= ctx.mid)
    return OriginCeiling(
        origin=origin,
        sites=len(sites),
        budget=budget,
        site_bound=site_bound,
        rate=min(budget, site_bound),
        work_from=work_from - ctx.start,
        work_until=work_until - ctx.start,
        finished=finished,
        ceiling_units=_integral(segments, work_from, work_until),
        units=units,
        second_half_ceiling_units=_integral(segments, max(ctx.mid, work_from), work_until),
        second_half_units=half,
        first_request=None if first is None else first - ctx.start,
        last_request=None if last is None else last - ctx.start,
        kind=_kind(sites),
    )


def _kind(sites: Sequence[Site]) -> str:
    kinds = {str(s.kind) for s in sites}
    return kinds.pop() if len(kinds) == 1 else MIXED_KIND


def _site_limit(world: World, site: Site, site_interval: float) -> float:
    """Requests per second the site accepts: its interval, Crawl-delay or 429 gap, or (one
    request at a time) its mean answer time in a world with latencies, the longest."""
    gap = max(site_interval, site.crawl_delay or 0.0, mean_answer_time(world.params, site))
    if site.behaviours & _RATE_LIMITED:
        gap = max(gap, world.params.rate_limit_gap)
    return 1.0 / gap if gap > 0 else float("inf")


def _segments(
    sites: Sequence[Site],
    by_site: Mapping[str, Sequence[RequestRecord]],
    limits: Mapping[str, float],
    budget: float,
    site_bound: float,
    lo: float,
    hi: float,
) -> list[tuple[float, float, float]]:
    """The origin's rate over [lo, hi] as (from, to, units/s) pieces: the budget or the sum of
    the limits of its sites not inside a Retry-After window (and the misses), the lower."""
    if hi <= lo:
        return []
    events: list[tuple[float, float]] = []
    for site in sites:
        for a, b in _pauses(by_site.get(site.host, ())):
            a, b = max(a, lo), min(b, hi)
            if a < b:
                events += [(a, -limits[site.host]), (b, limits[site.host])]
    events.sort()
    pieces, total, t, i = [], site_bound, lo, 0
    while t < hi:
        while i < len(events) and events[i][0] <= t:
            total += events[i][1]
            i += 1
        nxt = events[i][0] if i < len(events) else hi
        pieces.append((t, nxt, max(0.0, min(budget, total))))
        t = nxt
    return pieces


def _pauses(records: Sequence[RequestRecord]) -> list[tuple[float, float]]:
    """The site's Retry-After windows, merged: from a refusal's end to its `retry_until`."""
    windows = sorted((r.end, r.retry_until) for r in records if r.retry_until is not None)
    merged: list[tuple[float, float]] = []
    for a, b in windows:
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        elif b > a:
            merged.append((a, b))
    return merged


def _integral(pieces: Sequence[tuple[float, float, float]], lo: float, hi: float) -> float:
    return sum(max(0.0, min(b, hi) - max(a, lo)) * rate for a, b, rate in pieces)


def core_pages(world: World, site: Site, allowed: Allowed) -> frozenset[str]:
    """The pages a crawl must have asked a site for before the site can have run out of work:
    robots.txt, and of the home page, the listings and the details those robots.txt allows."""
    p = world.params
    pages = ["/"]
    # No crawler can see its links: a hanging app's, a site redirecting every page elsewhere.
    hidden = Behaviour.RENDER_HANG in site.behaviours or site.redirect_to is not None
    if site.is_seed and not hidden:  # an extra seed outside the world's seed: its home page
        pages += [f"/list/{n}" for n in range(1, p.n_lists + 1)]
        pages += [f"/item/{n}" for n in range(1, p.n_items + 1)]
    return frozenset(["/robots.txt", *(page for page in pages if allowed(site, page))])


def _covered(world: World, site: Site, records: Sequence[RequestRecord], allowed: Allowed) -> bool:
    answered = {
        _path(r.target)
        for r in records
        if r.target.startswith("/robots.txt") or (r.status != 429 and r.status < 500)
    }
    return core_pages(world, site, allowed) <= answered


def _path(target: str) -> str:
    return target.partition("#")[0].partition("?")[0]


def _mean(values: Sequence[int]) -> float:
    return sum(values) / len(values) if values else 0.0


def _ratio(a: float, b: float) -> float:
    return a / b if b > 0 else 0.0
