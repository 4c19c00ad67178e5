"""The simulated web's vocabulary: kinds of site, behaviours, a site, DNS tables, well-known names.

`world` builds worlds of these and `fuzz` generates random topologies of them; both import
from here, and `world` re-exports every name, so `from courtier.simweb.world import Site`
keeps working.

Rules:
- Hosts are stored canonical: lowercase ASCII (punycode for IDN), no trailing dot, no port.
- A site answers from numbered server slots; a `Network` turns a slot into an address.
- What stands between a client and a site's backend is data on the site and the world, so the
  HTTP server needs no code per platform: the site's server stack (`Site.stack`, headers in
  `stacks`), a platform's own distinctive answer (`Site.brand`, a `Brand`), the platform's own
  front servers and caches (`Site.front`, a `Front`), and a CDN's edge in front of its slots
  (`World.cdn_edges`, an `Edge`). Their headers are made by `layers`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

CANARY_SLOT = -1

CDN_HOST = "cdn.simcdn.test"
STORE_HOST = "s3.simstore.test"
IMGSVC_HOST = "img.simresize.test"
STORE_PROVIDER = "simstore"
IMGSVC_PROVIDER = "simresize"
CDN_DOMAIN = "simcdn.test"  # distribution names d<13 hex>.simcdn.test live under it

# The edge of a CDN whose name does not say so: unrelated sites and platform C CNAME to it.
EDGE_HOST = "edge.quickserve.test"
PLATFORM_C_HOST = "tenants.platform-c.test"  # CNAME -> EDGE_HOST
PLATFORM_C = "platform-c"
PLATFORM_A = "platform-a"
PLATFORM_A_MEDIA_HOST = "media.platform-a.test"  # CNAME -> edge.platform-a.test

# How the image service answers a customer: as a cache (X-Cache, misses reach the customer),
# as a store (no cache headers, nothing reaches the customer), or per image (odd N cached).
IMGSVC_CACHE = "cache"
IMGSVC_STORE = "store"
IMGSVC_MIXED = "mixed"

# The third-party script host every single-page app's shell embeds (`<script async src>`).
THIRD_PARTY_SCRIPT_HOST = "js.trackerly.test"
THIRD_PARTY_ORIGIN = "trackerly"
SPA_PREFIX = "app-"  # single-page apps: app-<word>-<word>N.test
TWIN_PREFIX = "twin-"  # the first one's plain-HTML twin: twin-<the same words>.test
NEWS_PREFIX = "news-"  # news sites: news-<word>-<word>N.test

# The user-agent product token whose robots.txt rules the audit applies.
CRAWLER_TOKEN = "courtier"

WORD_TEXT = (
    "amber birch cedar delta ember fable garnet harbor indigo juniper kestrel lumen "
    "maple nectar onyx pebble quartz raven saffron thistle umber velvet willow "
    "yarrow zephyr acorn bramble cobalt dune fennel glade hazel iris jasper kelp "
    "larch moss nettle orchid poppy quill rowan sorrel tansy violet wren alder basil"
)
WORDS = tuple(WORD_TEXT.split())


class SiteKind(StrEnum):
    STANDALONE = "standalone"
    CNAME_TENANT = "cname-tenant"
    HEADER_TENANT = "header-tenant"
    BAIT = "bait"
    HORIZON = "horizon"
    FARM = "farm"
    CDN = "cdn"
    STORE = "store"
    IMGSVC = "imgsvc"
    EDGE_SITE = "edge-site"  # an unrelated site behind the CDN edge: its own origin
    EDGE_TENANT = "edge-tenant"  # a platform C tenant behind the same edge: origin platform-c
    PLATFORM_MEDIA = "platform-media"  # platform A's media host, on platform A's servers
    SPA = "spa"  # a single-page app: every route a script shell, content from /api
    SPA_TWIN = "spa-twin"  # plain HTML serving the same catalogue as the first SPA site
    THIRD_PARTY = "third-party"  # the script host the SPA shells embed: outside the seed
    NEWS = "news"  # a home page and a feed gaining a listing every news_every seconds
    # The fuzzer's sites (`courtier.simweb.fuzz`); `Site.shape` says which topology made them.
    PLATFORM_TENANT = "platform-tenant"  # a tenant of a generated platform: its origin
    SHARED_HOST = "shared-host"  # an unrelated owner on a shared-hosting server: its origin
    CDN_SITE = "cdn-site"  # an unrelated site behind a generated CDN edge: its own origin
    PAIR_SITE = "pair-site"  # example.test or www.example.test, on one server or two


SEED_KINDS = frozenset(
    {
        SiteKind.STANDALONE,
        SiteKind.CNAME_TENANT,
        SiteKind.HEADER_TENANT,
        SiteKind.BAIT,
        SiteKind.EDGE_SITE,
        SiteKind.EDGE_TENANT,
        SiteKind.SPA,
        SiteKind.SPA_TWIN,
        SiteKind.NEWS,
        SiteKind.PLATFORM_TENANT,
        SiteKind.SHARED_HOST,
        SiteKind.CDN_SITE,
        SiteKind.PAIR_SITE,
    }
)
FUZZ_KINDS = frozenset(
    {SiteKind.PLATFORM_TENANT, SiteKind.SHARED_HOST, SiteKind.CDN_SITE, SiteKind.PAIR_SITE}
)
MEDIA_KINDS = frozenset({SiteKind.CDN, SiteKind.STORE, SiteKind.IMGSVC, SiteKind.PLATFORM_MEDIA})
# Media hosts served by an origin's own servers: their requests are charged to that origin.
CHARGED_MEDIA_KINDS = frozenset({SiteKind.PLATFORM_MEDIA})

# The server stacks behind the edge sites (`courtier.simweb.stacks` has their headers and
# stock not-found pages), in the order the builder picks from.
STACKS = (
    "nginx-php",
    "apache-php",
    "iis-aspnet",
    "express",
    "rails",
    "django",
    "caddy",
    "wordpress",
)


class Behaviour(StrEnum):
    SLOW = "slow"
    RATE_LIMIT_SECONDS = "rate-limit-seconds"  # 429 + Retry-After: <seconds> when hit too fast
    RATE_LIMIT_DATE = "rate-limit-date"  # 429 + Retry-After: <HTTP-date> when hit too fast
    UNAVAILABLE_AT_START = "unavailable-at-start"  # 503 + Retry-After for its first seconds
    RISING_LATENCY = "rising-latency"  # latency grows with its recent request rate
    CRAWL_DELAY = "crawl-delay"
    ROBOTS_500 = "robots-500"
    ROBOTS_404 = "robots-404"
    CALENDAR_TRAP = "calendar-trap"
    REDIRECT_TO_CANARY = "redirect-to-canary"
    IDN = "idn"
    REBIND = "rebind"  # DNS: first answer inside the block, later answers the canary
    CANARY_ALIAS = "canary-alias"  # DNS: always answers the canary
    RENDER_HANG = "render-hang"  # an SPA whose script loops forever before rendering anything
    SPA_CDN_STYLES = "spa-cdn-styles"  # an SPA whose stylesheet the shared CDN serves


# Standalone sites 0..len-1 get these, in this order, so a small world still has each one.
SPECIAL_STANDALONE = (
    Behaviour.RATE_LIMIT_SECONDS,
    Behaviour.RATE_LIMIT_DATE,
    Behaviour.UNAVAILABLE_AT_START,
    Behaviour.RISING_LATENCY,
    Behaviour.CRAWL_DELAY,
    Behaviour.ROBOTS_500,
    Behaviour.ROBOTS_404,
    Behaviour.SLOW,
    Behaviour.CALENDAR_TRAP,
    Behaviour.REDIRECT_TO_CANARY,
    Behaviour.IDN,
)


@dataclass(frozen=True)
class Brand:
    """A platform's own answer: what no other server sends, the same for every tenant.

    `headers` names which of its headers it sends (`BRAND_HEADERS`); values that differ per
    tenant (a tenant id) or per answer (a request id) are made by `layers`. Sent on its HTML
    pages, and on every answer (robots.txt and images too) when `everywhere`."""

    name: str  # a product name that is no common software's: "Quillpress"
    headers: tuple[str, ...]
    cookie: str | None  # its session cookie's name
    not_found: bool  # it serves its own not-found page (not naming the host) to every tenant
    everywhere: bool


BRAND_HEADERS = ("powered-by", "tenant", "pod", "request-id")


@dataclass(frozen=True)
class Front:
    """A platform's own front servers and caches (Varnish, Squid, HAProxy, nginx's cache):
    the headers they add to every answer of its tenants. Their names are a CDN's too; their
    values are not shaped like a CDN's (no `cache-<pop>-<POP>`, no `<hex>-<IATA>` ray id).

    `headers` (`FRONT_HEADERS`) in the order sent. Whether an answer is a hit is a pure
    function of the URL (`hit_percent` of them), so runs replay."""

    headers: tuple[str, ...]
    via: str  # "1.1 varnish (Varnish/6.0)"
    cache_from: str  # appended to X-Cache's HIT/MISS: "", " from varnish1"
    servers: tuple[str, ...]  # X-Served-By takes these in turn: ("web1", "web2")
    hit_percent: int


FRONT_HEADERS = (
    "via",
    "x-cache",
    "x-served-by",
    "age",
    "x-varnish",
    "x-cache-hits",
    "x-cache-status",
)


@dataclass(frozen=True)
class Edge:
    """A generated CDN's edge: the addresses many unrelated sites and platforms resolve to,
    and the headers it adds to every answer, shaped like a real CDN's values
    (`X-Served-By: cache-sim<N>-<code>`, a ray id `<16 hex>-SIM`). A Host it does not serve
    gets its own error page."""

    name: str  # its shared DNS name, the CNAME target of sites that use it
    product: str  # what it calls itself in Via, Server and its error page
    code: str  # two capitals: X-Served-By cache-sim<N>-<code>, ray header <code>-Ray
    slots: tuple[int, ...]
    headers: tuple[str, ...]  # `EDGE_HEADERS`, in the order sent
    says_cdn: bool  # its name says CDN (`courtier.origins.cdn`'s rule) or not
    error_status: int = 421


EDGE_HEADERS = ("via", "served-by", "ray", "x-cache", "server")


@dataclass(frozen=True)
class Site:
    host: str  # canonical: lowercase ASCII, punycode for IDN
    kind: SiteKind
    origin: str
    slots: tuple[int, ...]  # the servers answering for it
    behaviours: frozenset[Behaviour] = frozenset()
    unicode_host: str | None = None  # set for IDN sites
    robots_status: int = 200
    robots_text: str = ""
    crawl_delay: float | None = None
    latency: float = 0.0
    bucket: str | None = None  # its object-store bucket (seed sites) or the bucket it is (store)
    store_style: str = "virtual"  # how its pages link the bucket: "virtual" or "path"
    stack: str | None = None  # edge sites: the server stack behind the edge (`STACKS`)
    media_host: str | None = None  # seed sites: their vanity media host (images.<host>)
    customer: str | None = None  # a vanity or distribution media host: the site it serves
    imgsvc_mode: str = IMGSVC_CACHE  # how the image service answers for this customer
    twin_of: str | None = None  # an SPA twin: the SPA site whose catalogue it serves as HTML
    # What the fuzzer adds (`courtier.simweb.fuzz`); the defaults leave a site as it was.
    brand: Brand | None = None  # a platform's own headers, cookie and not-found page
    front: Front | None = None  # the platform's own front servers or caches
    shape: str = ""  # the generated topology the site belongs to (`fuzz.SHAPES`)
    redirect_to: str | None = None  # every page but robots.txt redirects to this host
    robots_redirect: str | None = None  # robots.txt redirects to this host's robots.txt
    redirect_status: int = 301  # the status of those redirects
    hangs: bool = False  # with latencies on: now and then answers after `hang_seconds`

    @property
    def catalogue(self) -> str:
        """The host whose catalogue the site serves: its own, or a twin's SPA site's."""
        return self.twin_of or self.host

    @property
    def is_seed(self) -> bool:
        return self.kind in SEED_KINDS

    @property
    def label(self) -> str:
        return self.host.split(".", 1)[0]


@dataclass(frozen=True)
class DnsTables:
    a_records: Mapping[str, tuple[int, ...]]
    cnames: Mapping[str, str]
    ptr_names: Mapping[int, str]
    rebinding: Mapping[str, tuple[int, int]]  # name -> (first answer slot, later answer slot)


DEFAULT_ROBOTS = "User-agent: *\nDisallow: /private/\n"
ROBOTS_VARIANTS = (
    DEFAULT_ROBOTS,
    # A group for our token replaces the * group for us (RFC 9309), so it repeats /private/.
    "User-agent: courtier\nDisallow: /private/\nDisallow: /search\n\n"
    "User-agent: *\nDisallow: /private/\n",
    "User-agent: *\nAllow: /private/open\nDisallow: /private/\nDisallow: /item/3\n",
)
