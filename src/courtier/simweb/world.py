"""The simulated world: sites, origins, DNS records and ground truth, built from a seed number.

Rules:
- Everything here is a pure function of `WorldParams`: the same params give the same world.
- Hosts are stored canonical: lowercase ASCII (punycode for IDN), no trailing dot, no port.
- Servers are numbered slots; a `Network` (address block and port) turns a slot into a loopback
  address. The canary lives outside the block and has the slot `CANARY_SLOT`.
- Seed hosts are the sites a crawl is given. Horizon, link-farm and media hosts (CDN, object
  store, image service) are never seed hosts; they resolve to simulated servers all the same,
  so a crawler that fetches them is caught by the audit.
- The audit's ground truth lives here too: spelling -> site, site -> origin, origin budgets,
  request costs by path, robots.txt per site, the rate a bucket accepts, and the customer a
  CDN or image-service request is for (`media_customer`).
- A CDN path names its customer by host (`/<site host>/img/N.jpg`, any spelling); an image
  service path by the site's first DNS label (`/<label>/<transform>/img/N.jpg`, any case).
  Customers are seed sites. Should two seed sites share a label, the label belongs to the one
  whose canonical host sorts first. A vanity media host or a CDN distribution name serves one
  customer (`Site.customer`) and its paths carry none (`/img/N.jpg`).
- The real web's shapes (edge sites, edge tenants, the platform media host, vanity media
  hosts, the image service's per-customer mode) are built after every older step, with the
  rng where the older steps left it: a world whose new parameters are 0 is the world these
  parameters built before the shapes existed, byte for byte.
- Media where real sites keep it (`provider_media`, `listing_tenants`: vanity names on a
  provider's shared name, listing platforms' own media hosts; `simweb.media_shapes`) is built
  after every older step, with draws of its own: at 0 a world is as it was.
- Single-page apps (`n_spa`, `spa_twin`, `spa_hang`) are built after the real web's shapes, the
  same way. Each SPA site `app-…N.test` is its own origin on its own server; the first one's
  twin `twin-…N.test` (same words) serves the same catalogue as plain HTML (`Site.twin_of`);
  the last `spa_hang` SPA sites' script hangs the browser (`Behaviour.RENDER_HANG`); the
  second one, unless it hangs, keeps its stylesheet on the shared CDN
  (`cdn.simcdn.test/<host>/static/app.css`, `Behaviour.SPA_CDN_STYLES`). The
  third-party script host `THIRD_PARTY_SCRIPT_HOST` every SPA shell embeds exists whenever
  there is an SPA site: never a seed host, so fetching from it is a request outside the seed.
- Generated topologies (`fuzz_sites`, `courtier.simweb.fuzz`) are built after platform A's
  media host and before the buckets, so their sites get buckets and image-service modes like
  the others. With `fuzz_sites` 0 the step adds nothing and draws nothing, so every older
  world is as it was; with it, the generated part is a function of the seed alone.
  `fuzz_params(seed)` (the `fuzz` preset) puts them around a small world of the older shapes.
- The vocabulary (kinds, behaviours, `Site`, DNS tables, well-known names) lives in `sites`
  and is re-exported here.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote

import idna

from courtier.simweb import fuzz
from courtier.simweb.latency import add_latencies
from courtier.simweb.media_shapes import add_media_shapes
from courtier.simweb.sites import (
    BRAND_HEADERS,
    CANARY_SLOT,
    CDN_DOMAIN,
    CDN_HOST,
    CHARGED_MEDIA_KINDS,
    CRAWLER_TOKEN,
    DEFAULT_ROBOTS,
    EDGE_HEADERS,
    EDGE_HOST,
    FRONT_HEADERS,
    FUZZ_KINDS,
    IMGSVC_CACHE,
    IMGSVC_HOST,
    IMGSVC_MIXED,
    IMGSVC_PROVIDER,
    IMGSVC_STORE,
    MEDIA_KINDS,
    NEWS_PREFIX,
    PLATFORM_A,
    PLATFORM_A_MEDIA_HOST,
    PLATFORM_C,
    PLATFORM_C_HOST,
    ROBOTS_VARIANTS,
    SEED_KINDS,
    SPA_PREFIX,
    SPECIAL_STANDALONE,
    STACKS,
    STORE_HOST,
    STORE_PROVIDER,
    THIRD_PARTY_ORIGIN,
    THIRD_PARTY_SCRIPT_HOST,
    TWIN_PREFIX,
    WORDS,
    Behaviour,
    Brand,
    DnsTables,
    Edge,
    Front,
    Site,
    SiteKind,
)

# The vocabulary lives in `sites`; these names are this module's too, as they always were.
__all__ = [
    "BRAND_HEADERS",
    "CANARY_SLOT",
    "CDN_DOMAIN",
    "CDN_HOST",
    "CHARGED_MEDIA_KINDS",
    "CRAWLER_TOKEN",
    "DEFAULT_ROBOTS",
    "EDGE_HEADERS",
    "EDGE_HOST",
    "FRONT_HEADERS",
    "FUZZ_KINDS",
    "IMGSVC_CACHE",
    "IMGSVC_HOST",
    "IMGSVC_MIXED",
    "IMGSVC_PROVIDER",
    "IMGSVC_STORE",
    "MEDIA_KINDS",
    "NEWS_PREFIX",
    "PLATFORM_A",
    "PLATFORM_A_MEDIA_HOST",
    "PLATFORM_C",
    "PLATFORM_C_HOST",
    "ROBOTS_VARIANTS",
    "SEED_KINDS",
    "SIZE_PRESETS",
    "SPA_PREFIX",
    "SPECIAL_STANDALONE",
    "STACKS",
    "STORE_HOST",
    "STORE_PROVIDER",
    "THIRD_PARTY_ORIGIN",
    "THIRD_PARTY_SCRIPT_HOST",
    "TWIN_PREFIX",
    "Behaviour",
    "Brand",
    "DnsTables",
    "Edge",
    "Front",
    "Site",
    "SiteKind",
    "World",
    "WorldParams",
    "build_world",
    "fuzz_params",
    "normalise_host_header",
    "params_for_total",
    "request_cost",
    "web_split",
]


@dataclass(frozen=True)
class WorldParams:
    """Everything a world is built from. Recorded in the info file so the audit can rebuild it."""

    seed: int = 1
    n_standalone: int = 16
    n_cname_tenants: int = 8
    n_header_tenants: int = 6
    n_horizon: int = 8
    n_farm: int = 4
    n_items: int = 40  # detail pages per site
    n_lists: int = 4  # listing pages per site
    n_images: int = 8  # same-origin images per site
    page_bytes: int = 6_000  # target size of an HTML page
    image_bytes: int = 2_048
    origin_budget: float = 2.0  # cost units per second, per origin
    slow_fraction: float = 0.1  # of the ordinary standalone sites
    slow_latency: float = 0.3  # seconds
    rate_limit_gap: float = 2.0  # the 429 sites answer 429 to gaps shorter than this
    retry_after: int = 5  # seconds, in both Retry-After forms
    unavailable_seconds: float = 10.0  # the 503 site's unavailable phase after server start
    crawl_delay: float = 2.0
    bucket_rate: float = 50.0  # requests per second one object-store bucket accepts
    bucket_burst: float = 5.0  # seconds of burst tolerance a bucket allows on top of its rate
    # The real web's shapes (docs/simweb.md); 0 leaves a world as it was before they existed.
    n_edge_sites: int = 0  # unrelated sites CNAMEd to EDGE_HOST, each its own origin
    n_edge_tenants: int = 0  # platform C tenants: CNAME PLATFORM_C_HOST -> EDGE_HOST
    platform_media: int = 0  # 1: platform A tenants' pages embed PLATFORM_A_MEDIA_HOST images
    vanity_media: float = 0.0  # share of own-domain seed sites with images.<host> media
    imgsvc_store_share: float = 0.0  # image-service customers answered store-like
    imgsvc_mixed_share: float = 0.0  # customers answered cache-like or store-like per image
    # Media where real sites keep it (simweb.media_shapes); 0 leaves a world as it was.
    provider_media: float = 0.0  # share of own-domain seed sites: images.<host> on a provider
    listing_tenants: int = 0  # tenants of two listing platforms, media on the platform's host
    # Single-page apps (docs/simweb.md); 0 leaves a world as it was before they existed.
    n_spa: int = 0  # single-page-app seed sites, each its own origin
    spa_twin: int = 0  # 1: the first SPA site gets a plain-HTML twin with the same catalogue
    spa_hang: int = 0  # how many SPA sites (the last ones) hang the browser that renders them
    # Documents besides HTML (simweb.documents); 0 leaves a world as it was before they existed.
    documents: int = 0  # 1: seed sites' home pages link PDFs and name RSS and Atom feeds
    n_documents: int = 2  # PDFs per site, with documents=1
    # 1: every HTML page is an article in its site's language, boilerplate around it, with
    # canonicals and duplicates (`simweb.articles`); page_bytes no longer pads pages.
    articles: int = 0
    # Sites that change (simweb.news); 0 leaves a world as it was before they existed.
    n_news: int = 0  # news sites: a new listing on the home page and feed every news_every s
    news_every: float = 30.0
    # Random hosting topologies (simweb.fuzz); 0 leaves a world as it was before they existed.
    fuzz_sites: int = 0  # seed sites of generated shapes, drawn from the seed
    # The real web's latencies (simweb.latency); 0 leaves a world answering at loopback speed.
    latency_median: float = 0.0  # seconds: the median site's base latency
    latency_spread: float = 0.7  # the log-normal's shape: each site its own band
    latency_max: float = 4.0  # seconds: no site's base latency is longer
    hang_share: float = 0.0  # of the seed sites: hang on some requests
    hang_seconds: float = 30.0  # how long a hanging site takes to answer

    def to_json(self) -> dict[str, object]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> WorldParams:
        """Params from `to_json` output. A missing field takes its default, so info files
        written before a field existed still load."""
        names = {f.name: f.type for f in dataclasses.fields(cls)}
        unknown = set(data) - set(names)
        if unknown:
            raise ValueError(f"unknown world parameters: {sorted(unknown)}")
        kwargs: dict[str, object] = {}
        for name, value in data.items():
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise ValueError(f"world parameter {name} must be a number, got {value!r}")
            kwargs[name] = float(value) if names[name] == "float" else int(value)
        return cls(**kwargs)  # type: ignore[arg-type]


def params_for_total(base: WorldParams, n_sites: int) -> WorldParams:
    """Split `n_sites` seed sites like a real mix: 60% standalone, 25% and 15% platform tenants.

    A base with sites behind the CDN edge (the `web` preset) is split like the real web
    instead (`web_split`)."""
    if base.fuzz_sites:
        return fuzz_params(base.seed, n_sites, base)
    if base.n_edge_sites or base.n_edge_tenants:
        return web_split(base, n_sites)
    if n_sites < len(SPECIAL_STANDALONE) + 3:
        raise ValueError(f"need at least {len(SPECIAL_STANDALONE) + 3} sites, got {n_sites}")
    cname = max(1, n_sites * 25 // 100)
    header = max(1, n_sites * 15 // 100)
    return dataclasses.replace(
        base, n_standalone=n_sites - cname - header, n_cname_tenants=cname, n_header_tenants=header
    )


def web_split(base: WorldParams, n_sites: int) -> WorldParams:
    """Split `n_sites` seed sites like the real web: 48% platform A tenants, 20% platform B
    tenants, 10% unrelated sites behind the CDN edge, 4% platform C tenants behind it, the
    rest (18%) standalone."""
    if n_sites < len(SPECIAL_STANDALONE) + 4:
        raise ValueError(f"need at least {len(SPECIAL_STANDALONE) + 4} sites, got {n_sites}")
    cname = max(1, n_sites * 48 // 100)
    header = max(1, n_sites * 20 // 100)
    edge = max(1, n_sites * 10 // 100)
    tenants = max(1, n_sites * 4 // 100)
    return dataclasses.replace(
        base,
        n_standalone=n_sites - cname - header - edge - tenants,
        n_cname_tenants=cname,
        n_header_tenants=header,
        n_edge_sites=edge,
        n_edge_tenants=tenants,
    )


# The older shapes around a generated world (`fuzz`): one site of each special behaviour, a
# few tenants of platforms A, B and C, edge sites, media; the generated sites come on top.
_FUZZ_CORE = WorldParams(
    n_standalone=len(SPECIAL_STANDALONE),
    n_cname_tenants=3,
    n_header_tenants=3,
    n_horizon=10,
    n_farm=2,
    n_edge_sites=3,
    n_edge_tenants=2,
    platform_media=1,
    vanity_media=0.2,
    imgsvc_store_share=0.2,
    imgsvc_mixed_share=0.05,
)
FUZZ_SITES = 300  # generated seed sites of a `fuzz` world by default


def fuzz_params(
    seed: int, n_sites: int | None = None, base: WorldParams | None = None
) -> WorldParams:
    """The parameters of the fuzzed world of `seed` (`courtier simweb serve --fuzz SEED`).

    `n_sites` counts every seed site, the older shapes' included (without it, they and
    `FUZZ_SITES` generated ones); `base` keeps its other parameters (default `_FUZZ_CORE`)."""
    base = base or _FUZZ_CORE
    core = (
        base.n_standalone
        + base.n_cname_tenants
        + base.n_header_tenants
        + base.n_edge_sites
        + base.n_edge_tenants
    )
    generated = FUZZ_SITES if n_sites is None else n_sites - core
    if generated < fuzz.MIN_SITES:
        raise ValueError(f"need at least {core + fuzz.MIN_SITES} sites, got {n_sites}")
    return dataclasses.replace(base, seed=seed, fuzz_sites=generated)


SIZE_PRESETS: Mapping[str, WorldParams] = {
    "small": WorldParams(),
    "demo": WorldParams(n_standalone=40, n_cname_tenants=30, n_header_tenants=20, n_horizon=20),
    "bench": WorldParams(
        n_standalone=1200, n_cname_tenants=500, n_header_tenants=300, n_horizon=100, n_farm=8
    ),
    # The real web's mix and shapes: 500 seed sites split by `web_split`, media on.
    "web": web_split(
        WorldParams(
            n_horizon=100,
            n_farm=8,
            platform_media=1,
            vanity_media=0.25,
            imgsvc_store_share=0.3,
            imgsvc_mixed_share=0.05,
        ),
        500,
    ),
    # Documents a search engine or an archive uses: article pages in six languages with real
    # boilerplate, canonicals and near-duplicates (`simweb.articles`), on a small world.
    "articles": WorldParams(
        n_standalone=12,
        n_cname_tenants=4,
        n_header_tenants=3,
        n_horizon=2,
        n_farm=1,
        n_items=20,
        n_lists=2,
        n_images=2,
        articles=1,
    ),
    # A small world for the render lane: a few ordinary sites, three single-page apps (the
    # last one hangs its renderer) and the first one's plain-HTML twin. Small catalogues, so
    # a crawl at 1 request/s per site and 2 cost units/s per origin is done in about 30 s.
    # A small world that changes: a news site gaining a listing every 30 s beside a few sites
    # that never change, for fast sources found by the crawl itself.
    "news": WorldParams(
        n_standalone=3,
        n_cname_tenants=1,
        n_header_tenants=1,
        n_horizon=1,
        n_farm=1,
        n_items=6,
        n_lists=2,
        n_images=2,
        n_news=1,
    ),
    "spa": WorldParams(
        n_standalone=3,
        n_cname_tenants=1,
        n_header_tenants=1,
        n_horizon=2,
        n_farm=1,
        n_items=8,
        n_lists=2,
        n_images=4,
        n_spa=3,
        spa_twin=1,
        spa_hang=1,
    ),
    # A generated web (`fuzz`): FUZZ_SITES sites of random hosting shapes, drawn from the seed,
    # around a small world of the older shapes.
    "fuzz": fuzz_params(1),
}


@dataclass(frozen=True)
class World:
    params: WorldParams
    sites: Mapping[str, Site]
    dns: DnsTables
    spellings: Mapping[str, str]  # lowercase spelling (no port) -> canonical site host
    buckets: Mapping[str, str]  # bucket name -> the seed site whose media it holds
    n_slots: int
    seed_hosts: tuple[str, ...] = field(default=())
    horizon_hosts: tuple[str, ...] = field(default=())
    farm_hosts: tuple[str, ...] = field(default=())
    popular_horizon_host: str = ""
    # first DNS label -> the seed site it names on the image service (see `media_customer`)
    customer_labels: Mapping[str, str] = field(default_factory=dict)
    edge_slots: tuple[int, ...] = field(default=())  # the CDN edge's servers (EDGE_HOST)
    cdn_edges: tuple[Edge, ...] = field(default=())  # generated CDNs' edges (`fuzz`)

    def site_of_host(self, host_header: str) -> Site | None:
        """The site a Host header (any spelling, with or without port) names, or None."""
        canonical = self.spellings.get(normalise_host_header(host_header))
        return None if canonical is None else self.sites[canonical]

    def origin_budget(self, origin: str) -> float:
        return self.params.origin_budget

    def bucket_limit(self, window: float) -> float:
        """Most requests one bucket accepts starting in any `window` seconds (GCRA: the rate
        over the window plus the burst tolerance, and one more at the window's end)."""
        return self.params.bucket_rate * (window + self.params.bucket_burst) + 1

    def media_customer(self, host_header: str, target: str) -> Site | None:
        """The seed site a request to the CDN or the image service is for, or None.

        CDN: the first path segment is the customer's host, any spelling (case, trailing dot,
        port, percent-encoding, Unicode IDN). Image service: the first path segment is the
        customer's first DNS label, any case (an IDN site's in punycode or in Unicode). A
        vanity media host on the CDN, or a distribution name, serves one customer whatever the
        path. Any other host, an unknown customer or a customer outside the seed gives None.
        """
        site = self.site_of_host(host_header)
        if site is None or site.kind not in (SiteKind.CDN, SiteKind.IMGSVC):
            return None
        if site.customer is not None:  # a vanity host or a distribution name: one customer
            return self.sites[site.customer]
        path = target.partition("?")[0].partition("#")[0]
        segment = unquote(path.lstrip("/").partition("/")[0]).strip()
        if not segment:
            return None
        if site.kind is SiteKind.CDN:
            customer = self.site_of_host(segment)
        else:
            host = self.customer_labels.get(segment.lower())
            customer = None if host is None else self.sites[host]
        return customer if customer is not None and customer.is_seed else None

    def imgsvc_mode(self, host_header: str, target: str) -> str | None:
        """How the image service answers this request: IMGSVC_CACHE (X-Cache; a miss reaches
        the customer) or IMGSVC_STORE (no cache headers; nothing reaches the customer). A
        mixed customer's odd-numbered images are cached, its even ones stored. None: not an
        image-service request for a known customer."""
        site = self.site_of_host(host_header)
        customer = self.media_customer(host_header, target)
        if site is None or site.kind is not SiteKind.IMGSVC or customer is None:
            return None
        if customer.imgsvc_mode != IMGSVC_MIXED:
            return customer.imgsvc_mode
        stem = target.partition("?")[0].rpartition("/")[2].removesuffix(".jpg")
        return IMGSVC_CACHE if stem.isdigit() and int(stem) % 2 else IMGSVC_STORE

    def sites_of_kind(self, kind: SiteKind) -> tuple[Site, ...]:
        """The sites of one kind, in the order they were built."""
        return tuple(s for s in self.sites.values() if s.kind is kind)

    def spa_twin(self) -> tuple[Site, Site]:
        """The SPA site that has a twin, and its twin (`spa_twin`); LookupError if none."""
        for twin in self.sites_of_kind(SiteKind.SPA_TWIN):
            if twin.twin_of is not None:
                return self.sites[twin.twin_of], twin
        raise LookupError("this world has no SPA twin")

    def sites_with(self, behaviour: Behaviour) -> tuple[Site, ...]:
        return tuple(s for s in self.sites.values() if behaviour in s.behaviours)

    def site_with(self, behaviour: Behaviour) -> Site:
        found = self.sites_with(behaviour)
        if not found:
            raise LookupError(f"this world has no site with behaviour {behaviour}")
        return found[0]

    @property
    def origins(self) -> frozenset[str]:
        return frozenset(s.origin for s in self.sites.values())

    def origin_sites(self) -> dict[str, tuple[str, ...]]:
        """Who shares servers: each origin of the seed and its seed sites, in build order.
        Every one of them is held to `origin_budget(origin)`."""
        grouped: dict[str, list[str]] = {}
        for host in self.seed_hosts:
            grouped.setdefault(self.sites[host].origin, []).append(host)
        return {origin: tuple(hosts) for origin, hosts in grouped.items()}


def normalise_host_header(host_header: str) -> str:
    """Lowercase, port dropped, trailing dot dropped. Bracketed IPv6 keeps its brackets."""
    host = host_header.strip().lower()
    if host.startswith("["):
        end = host.find("]")
        host = host[: end + 1] if end >= 0 else host
    else:
        name, sep, port = host.rpartition(":")
        if sep and port.isdigit():
            host = name
    return host.rstrip(".")


def request_cost(site: Site, path: str) -> int:
    """Cost units of one request, by path (DESIGN.md): listing/search 4, detail 2, image 1,
    robots.txt 1. Home and calendar pages are index pages, so they cost as listings.

    A single-page app's script and stylesheet (`/static/…`) cost 1 and its API as the page it
    serves: `/api/list/N` 4, `/api/item/N` 2; its shells as the page they stand for. The
    third-party script host serves scripts: 1."""
    if path.startswith("/robots.txt"):
        return 1
    if site.kind is SiteKind.SPA:
        return _spa_cost(path)
    if site.kind is SiteKind.THIRD_PARTY:
        return 1
    if site.kind in MEDIA_KINDS or path.startswith("/img/"):
        return 1
    if path in ("/", "") or path.startswith(("/search", "/list/", "/calendar/")):
        return 4
    return 2


def _spa_cost(path: str) -> int:
    if path.startswith("/static/"):
        return 1
    if path in ("/", "") or path.startswith(("/list/", "/api/list/")):
        return 4
    return 2


class _Builder:
    def __init__(self, params: WorldParams) -> None:
        self.params = params
        self.rng = random.Random(params.seed)
        self.sites: dict[str, Site] = {}
        self.a_records: dict[str, tuple[int, ...]] = {}
        self.cnames: dict[str, str] = {}
        self.ptr_names: dict[int, str] = {}
        self.rebinding: dict[str, tuple[int, int]] = {}
        self.next_slot = 0
        self.serial = 0

    def slot(self) -> int:
        slot = self.next_slot
        self.next_slot += 1
        return slot

    def host(self, prefix: str = "") -> str:
        """A fresh host: two words chosen by the seed and a serial number that keeps it unique."""
        self.serial += 1
        return f"{prefix}{self.rng.choice(WORDS)}-{self.rng.choice(WORDS)}{self.serial}.test"

    def robots(self) -> str:
        return self.rng.choice(ROBOTS_VARIANTS)

    def add(self, site: Site) -> Site:
        self.sites[site.host] = site
        return site

    def bucketed(self, host: str) -> tuple[str, str]:
        """The site's media bucket and whether its pages link it virtual-hosted or path-style."""
        return f"media-{host.split('.', 1)[0]}", self.rng.choice(("virtual", "path"))


def _platform_a(b: _Builder) -> None:
    """Tenants CNAME to the platform; its addresses have PTR names."""
    web1, web2 = b.slot(), b.slot()
    b.cnames["tenants.platform-a.test"] = "edge.platform-a.test"
    b.a_records["edge.platform-a.test"] = (web1, web2)
    for slot, name in ((web1, "web1.platform-a.test"), (web2, "web2.platform-a.test")):
        b.ptr_names[slot] = name
        b.a_records[name] = (slot,)
    for _ in range(b.params.n_cname_tenants):
        host = b.host("shop-")
        b.cnames[host] = "tenants.platform-a.test"
        bucket, style = b.bucketed(host)
        b.add(
            Site(
                host,
                SiteKind.CNAME_TENANT,
                "platform-a",
                (web1, web2),
                robots_text=b.robots(),
                bucket=bucket,
                store_style=style,
            )
        )


def _platform_b(b: _Builder) -> None:
    """Tenants have plain A records to one address: only response headers give them away."""
    server = b.slot()
    for _ in range(b.params.n_header_tenants):
        host = b.host()
        b.a_records[host] = (server,)
        bucket, style = b.bucketed(host)
        b.add(
            Site(
                host,
                SiteKind.HEADER_TENANT,
                "platform-b",
                (server,),
                robots_text=b.robots(),
                bucket=bucket,
                store_style=style,
            )
        )


def _media(b: _Builder) -> None:
    for host, kind, origin in (
        (CDN_HOST, SiteKind.CDN, "simcdn"),
        (IMGSVC_HOST, SiteKind.IMGSVC, "simresize"),
    ):
        slot = b.slot()
        b.a_records[host] = (slot,)
        b.add(Site(host, kind, origin, (slot,), robots_text="User-agent: *\nAllow: /\n"))
    store = b.slot()
    b.a_records[STORE_HOST] = (store,)
    b.add(Site(STORE_HOST, SiteKind.STORE, "simstore", (store,), robots_status=404))


def _buckets(b: _Builder) -> dict[str, str]:
    """Virtual-hosted bucket hosts of every seed site's bucket, served by the store."""
    store = b.sites[STORE_HOST].slots
    buckets: dict[str, str] = {}
    for site in list(b.sites.values()):
        if site.is_seed and site.bucket:
            buckets[site.bucket] = site.host
            host = f"{site.bucket}.{STORE_HOST}"
            b.a_records[host] = store
            b.add(
                Site(host, SiteKind.STORE, "simstore", store, robots_status=404, bucket=site.bucket)
            )
    return buckets


def _standalone(b: _Builder) -> None:
    p = b.params
    for i in range(p.n_standalone):
        special = SPECIAL_STANDALONE[i] if i < len(SPECIAL_STANDALONE) else None
        behaviours = {special} if special else set()
        if special is None and b.rng.random() < p.slow_fraction:
            behaviours.add(Behaviour.SLOW)
        unicode_host = None
        if special is Behaviour.IDN:
            unicode_host = f"tŷ-{b.rng.choice(WORDS)}{i}.test"
            host = idna.encode(unicode_host, uts46=True).decode("ascii")
        else:
            host = b.host()
        slot = b.slot()
        b.a_records[host] = (slot,)
        bucket, style = b.bucketed(host)
        b.add(
            Site(
                host,
                SiteKind.STANDALONE,
                host,
                (slot,),
                frozenset(behaviours),
                unicode_host=unicode_host,
                robots_status=500
                if special is Behaviour.ROBOTS_500
                else 404
                if special is Behaviour.ROBOTS_404
                else 200,
                robots_text=_standalone_robots(b, special),
                crawl_delay=p.crawl_delay if special is Behaviour.CRAWL_DELAY else None,
                latency=p.slow_latency if Behaviour.SLOW in behaviours else 0.0,
                bucket=bucket,
                store_style=style,
            )
        )


def _standalone_robots(b: _Builder, special: Behaviour | None) -> str:
    if special is Behaviour.CRAWL_DELAY:
        return f"User-agent: *\nCrawl-delay: {b.params.crawl_delay:g}\nDisallow: /private/\n"
    if special in (Behaviour.ROBOTS_500, Behaviour.ROBOTS_404):
        return ""
    return b.robots()


def _bait(b: _Builder) -> None:
    """Seed sites that lead to the canary through DNS: a rebinding name and an alias."""
    rebind_host = b.host("cdn-")
    slot = b.slot()
    b.rebinding[rebind_host] = (slot, CANARY_SLOT)
    b.add(
        Site(
            rebind_host,
            SiteKind.BAIT,
            rebind_host,
            (slot,),
            frozenset({Behaviour.REBIND}),
            robots_text=DEFAULT_ROBOTS,
        )
    )
    alias_host = b.host("static-")
    b.a_records[alias_host] = (CANARY_SLOT,)
    b.add(
        Site(
            alias_host,
            SiteKind.BAIT,
            alias_host,
            (CANARY_SLOT,),
            frozenset({Behaviour.CANARY_ALIAS}),
            robots_text=DEFAULT_ROBOTS,
        )
    )


def _horizon(b: _Builder) -> tuple[tuple[str, ...], tuple[str, ...], str]:
    """Hosts outside the seed: all on one server so a crawler that fetches them is caught."""
    slot = b.slot()
    horizon: list[str] = []
    farm: list[str] = []
    for kind, count, names in (
        (SiteKind.HORIZON, max(1, b.params.n_horizon), horizon),
        (SiteKind.FARM, b.params.n_farm, farm),
    ):
        for _ in range(count):
            host = b.host("farm-" if kind is SiteKind.FARM else "www-")
            b.a_records[host] = (slot,)
            b.add(Site(host, kind, host, (slot,), robots_text="User-agent: *\nAllow: /\n"))
            names.append(host)
    return tuple(horizon), tuple(farm), horizon[0]


def _edge(b: _Builder) -> tuple[int, ...]:
    """The CDN edge: two addresses with no PTR name, for unrelated sites and platform C.

    Each edge site CNAMEs to the edge name and has a server stack of its own behind it; each
    platform C tenant CNAMEs to the platform's name, which CNAMEs to the edge name."""
    p = b.params
    if not p.n_edge_sites and not p.n_edge_tenants:
        return ()
    slots = (b.slot(), b.slot())
    b.a_records[EDGE_HOST] = slots
    for i in range(p.n_edge_sites):
        host = b.host()
        b.cnames[host] = EDGE_HOST
        bucket, style = b.bucketed(host)
        b.add(
            Site(
                host,
                SiteKind.EDGE_SITE,
                host,
                slots,
                robots_text=b.robots(),
                bucket=bucket,
                store_style=style,
                # The first ones take each stack in turn, so a small world has all of them.
                stack=STACKS[i] if i < len(STACKS) else b.rng.choice(STACKS),
            )
        )
    if p.n_edge_tenants:
        b.cnames[PLATFORM_C_HOST] = EDGE_HOST
    for _ in range(p.n_edge_tenants):
        host = b.host()
        b.cnames[host] = PLATFORM_C_HOST
        bucket, style = b.bucketed(host)
        b.add(
            Site(
                host,
                SiteKind.EDGE_TENANT,
                PLATFORM_C,
                slots,
                robots_text=b.robots(),
                bucket=bucket,
                store_style=style,
            )
        )
    return slots


def _platform_media(b: _Builder) -> None:
    """Platform A's media host, on platform A's own servers: its requests are platform A's."""
    if not b.params.platform_media or not b.params.n_cname_tenants:
        return
    slots = next(s.slots for s in b.sites.values() if s.kind is SiteKind.CNAME_TENANT)
    b.cnames[PLATFORM_A_MEDIA_HOST] = "edge.platform-a.test"
    b.add(
        Site(
            PLATFORM_A_MEDIA_HOST,
            SiteKind.PLATFORM_MEDIA,
            PLATFORM_A,
            slots,
            robots_text="User-agent: *\nAllow: /\n",
        )
    )


def _vanity_media(b: _Builder) -> None:
    """Some own-domain seed sites serve media from `images.<host>`: a CNAME to a CDN
    distribution name `d<13 hex>.simcdn.test` (on the CDN's address; the CDN serves the site
    there, paths without a customer) or to the site's own bucket host (the store serves the
    bucket there)."""
    share = b.params.vanity_media
    if share <= 0:
        return
    cdn_slots = b.sites[CDN_HOST].slots
    for site in list(b.sites.values()):
        own_domain = site.kind in (SiteKind.STANDALONE, SiteKind.EDGE_SITE)
        if not own_domain or site.unicode_host or not site.bucket or b.rng.random() >= share:
            continue
        vanity = f"images.{site.host}"
        if b.rng.random() < 0.5:
            distribution = f"d{b.rng.getrandbits(52):013x}.{CDN_DOMAIN}"
            b.a_records[distribution] = cdn_slots
            b.cnames[vanity] = distribution
            for host in (distribution, vanity):
                b.add(Site(host, SiteKind.CDN, "simcdn", cdn_slots, customer=site.host))
        else:
            bucket_host = f"{site.bucket}.{STORE_HOST}"
            b.cnames[vanity] = bucket_host
            store = b.sites[bucket_host].slots
            b.add(
                Site(
                    vanity,
                    SiteKind.STORE,
                    "simstore",
                    store,
                    robots_status=404,
                    bucket=site.bucket,
                    customer=site.host,
                )
            )
        b.sites[site.host] = dataclasses.replace(site, media_host=vanity)


def _imgsvc_modes(b: _Builder) -> None:
    """Which image-service customers are answered as a store, or per image."""
    store, mixed = b.params.imgsvc_store_share, b.params.imgsvc_mixed_share
    if store <= 0 and mixed <= 0:
        return
    for site in list(b.sites.values()):
        if not site.is_seed or site.kind is SiteKind.BAIT:
            continue
        draw = b.rng.random()
        mode = IMGSVC_STORE if draw < store else IMGSVC_MIXED if draw < store + mixed else None
        if mode is not None:
            b.sites[site.host] = dataclasses.replace(site, imgsvc_mode=mode)


def _spa(b: _Builder) -> None:
    """Single-page apps, each on its own server; the first one's twin; the script host."""
    p = b.params
    if p.n_spa <= 0:
        return
    apps = []
    for i in range(p.n_spa):
        host = b.host(SPA_PREFIX)
        slot = b.slot()
        b.a_records[host] = (slot,)
        hang = i >= p.n_spa - p.spa_hang
        behaviours = frozenset({Behaviour.RENDER_HANG}) if hang else frozenset()
        if i == 1 and not hang:
            behaviours = frozenset({Behaviour.SPA_CDN_STYLES})
        apps.append(
            b.add(Site(host, SiteKind.SPA, host, (slot,), behaviours, robots_text=DEFAULT_ROBOTS))
        )
    if p.spa_twin:
        spa = apps[0]
        host = TWIN_PREFIX + spa.host.removeprefix(SPA_PREFIX)
        slot = b.slot()
        b.a_records[host] = (slot,)
        b.add(
            Site(
                host,
                SiteKind.SPA_TWIN,
                host,
                (slot,),
                robots_text=spa.robots_text,
                twin_of=spa.host,
            )
        )
    slot = b.slot()
    b.a_records[THIRD_PARTY_SCRIPT_HOST] = (slot,)
    b.add(
        Site(
            THIRD_PARTY_SCRIPT_HOST,
            SiteKind.THIRD_PARTY,
            THIRD_PARTY_ORIGIN,
            (slot,),
            robots_text="User-agent: *\nAllow: /\n",
        )
    )


def _news(b: _Builder) -> None:
    """News sites (``simweb.news``), each its own origin on its own server."""
    for _ in range(b.params.n_news):
        host = b.host(NEWS_PREFIX)
        slot = b.slot()
        b.a_records[host] = (slot,)
        b.add(Site(host, SiteKind.NEWS, host, (slot,), robots_text=DEFAULT_ROBOTS))


def _spellings(sites: Mapping[str, Site]) -> dict[str, str]:
    table: dict[str, str] = {}
    for site in sites.values():
        for name in (site.host, site.unicode_host):
            if name:
                table[name] = site.host
                table[name + "."] = site.host
    return table


def _customer_labels(sites: Mapping[str, Site]) -> dict[str, str]:
    """First DNS label -> seed site; on a collision the host that sorts first keeps it."""
    labels: dict[str, str] = {}
    for host in sorted(h for h, s in sites.items() if s.is_seed):
        site = sites[host]
        labels.setdefault(site.label, host)
        if site.unicode_host:  # an IDN site's label in Unicode too
            labels.setdefault(site.unicode_host.split(".", 1)[0].lower(), host)
    return labels


def build_world(params: WorldParams) -> World:
    if params.n_standalone < 1:
        raise ValueError("a world needs at least one standalone site")
    if not params.bucket_rate > 0 or not params.bucket_burst >= 0:
        raise ValueError("bucket_rate must be positive and bucket_burst not negative")
    for name in ("vanity_media", "imgsvc_store_share", "imgsvc_mixed_share", "provider_media"):
        if not 0 <= getattr(params, name) <= 1:
            raise ValueError(f"{name} must be a share between 0 and 1")
    if params.imgsvc_store_share + params.imgsvc_mixed_share > 1:
        raise ValueError("imgsvc_store_share + imgsvc_mixed_share must not exceed 1")
    if params.n_spa < 0 or params.spa_twin not in (0, 1):
        raise ValueError("n_spa must not be negative and spa_twin must be 0 or 1")
    if params.spa_twin and not params.n_spa:
        raise ValueError("spa_twin needs an SPA site to be the twin of (n_spa >= 1)")
    if not 0 <= params.spa_hang <= params.n_spa:
        raise ValueError("spa_hang must be between 0 and n_spa")
    if params.n_news < 0 or not (math.isfinite(params.news_every) and params.news_every > 0):
        raise ValueError("n_news must not be negative and news_every must be positive seconds")
    latencies = (params.latency_median, params.latency_spread, params.latency_max)
    if not all(math.isfinite(x) and x >= 0 for x in (*latencies, params.hang_seconds)):
        raise ValueError("latencies and hang_seconds must be seconds, not negative")
    if not 0 <= params.hang_share <= 1:
        raise ValueError("hang_share must be a share between 0 and 1")
    if params.listing_tenants < 0:
        raise ValueError("listing_tenants must not be negative")
    if params.fuzz_sites and params.fuzz_sites < fuzz.MIN_SITES:
        raise ValueError(f"fuzz_sites must be 0 or at least {fuzz.MIN_SITES}")
    b = _Builder(params)
    _platform_a(b)
    _platform_b(b)
    _media(b)
    _standalone(b)
    _bait(b)
    horizon, farm, popular = _horizon(b)
    # The real web's shapes: after every older step, so older worlds stay as they were.
    edge_slots = _edge(b)
    _platform_media(b)
    # Generated shapes: nothing at all when fuzz_sites is 0 (no site, no draw of this rng), so
    # every older world stays as it was; before the buckets so their sites get buckets too.
    cdn_edges = fuzz.add_fuzz(b, params.seed, params.fuzz_sites)
    buckets = _buckets(b)
    _vanity_media(b)
    _imgsvc_modes(b)
    _spa(b)  # after the real web's shapes, so their worlds stay as they were too
    _news(b)  # so every older world stays as it was
    buckets.update(add_media_shapes(b, params))  # after the older shapes, with draws of its own
    add_latencies(b.sites, params)  # draws of its own: no other draw changes
    return World(
        params=params,
        sites=dict(b.sites),
        dns=DnsTables(dict(b.a_records), dict(b.cnames), dict(b.ptr_names), dict(b.rebinding)),
        spellings=_spellings(b.sites),
        buckets=buckets,
        n_slots=b.next_slot,
        seed_hosts=tuple(h for h, s in b.sites.items() if s.is_seed),
        horizon_hosts=horizon,
        farm_hosts=farm,
        popular_horizon_host=popular,
        customer_labels=_customer_labels(b.sites),
        edge_slots=edge_slots,
        cdn_edges=cdn_edges,
    )
