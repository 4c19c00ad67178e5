"""CDN edges: names and response headers that say "this address is shared by strangers".

Rules:
- A name is a CDN edge name when it ends in a known CDN suffix, or when the first label of its
  registrable domain ends in ``cdn`` or is ``cdn`` and digits (``kxcdn.com``, ``b-cdn.net``,
  ``cdn77.org``, ``simcdn.test``). A site called ``cdn-photos.example`` is not a CDN, and
  words such as ``edge`` are not enough: platforms call their own load balancers that.
- Response headers mark a CDN's edge only by what its vendor alone writes
  (``CDN_VALUE_SHAPES``): a value in a vendor's shape (a ``CF-Ray``-shaped ray id, Fastly's
  ``X-Served-By: cache-<pop><n>-<POP>``, ``X-Cache: Miss from cloudfront``), a header only
  one vendor sends (``X-Amz-Cf-Id``, ``X-Azure-Ref``), or a ``Server`` naming a CDN product.
  A header *name* alone is no proof: platforms' own Varnish, nginx and HAProxy fronts add
  ``Via``, ``X-Cache``, ``X-Served-By``, ``Age`` and ``X-Varnish`` too. (``cdn_header_name``
  still keeps such names out of a platform's distinctive evidence: whoever added them, they
  are a cache's, not a platform's choice.)
- An address is a CDN edge's when it lies in a range a CDN publishes for its edges
  (``PUBLISHED_CDN_RANGES``: Cloudflare's and Fastly's lists). Edges that publish nothing are
  known by their names and headers, or by behaviour (``courtier.origins.cluster``).
- Extra suffixes can be configured; they add to the built-in list, never replace it.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from courtier.url import registrable_domain

# Suffixes of CNAME targets and PTR names that belong to CDN edges (public knowledge of the
# large CDNs; a platform's own names never end in these).
KNOWN_CDN_SUFFIXES: tuple[str, ...] = (
    "akamai.net",
    "akamaiedge.net",
    "akamaihd.net",
    "akamaized.net",
    "akamaitechnologies.com",
    "edgekey.net",
    "edgesuite.net",
    "cloudfront.net",
    "cloudflare.net",
    "fastly.net",
    "fastlylb.net",
    "azureedge.net",
    "azurefd.net",
    "edgecastcdn.net",
    "llnwd.net",
    "stackpathdns.com",
    "cdn77.org",
    "cachefly.net",
    "incapdns.net",
    "impervadns.net",
    "gcdn.co",
    "cdngc.net",
)

# Address ranges CDNs publish for their edges, as published (Cloudflare: /ips-v4 and /ips-v6
# of cloudflare.com; Fastly: its public-ip-list API). They change rarely; when a CDN adds a
# range, add it here with the list it came from. A missing range only costs speed (its sites
# are told apart by headers instead), never politeness.
PUBLISHED_CDN_RANGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "cloudflare",
        (
            "173.245.48.0/20",
            "103.21.244.0/22",
            "103.22.200.0/22",
            "103.31.4.0/22",
            "141.101.64.0/18",
            "108.162.192.0/18",
            "190.93.240.0/20",
            "188.114.96.0/20",
            "197.234.240.0/22",
            "198.41.128.0/17",
            "162.158.0.0/15",
            "104.16.0.0/13",
            "104.24.0.0/14",
            "172.64.0.0/13",
            "131.0.72.0/22",
            "2400:cb00::/32",
            "2606:4700::/32",
            "2803:f800::/32",
            "2405:b500::/32",
            "2405:8100::/32",
            "2a06:98c0::/29",
            "2c0f:f248::/32",
        ),
    ),
    (
        "fastly",
        (
            "23.235.32.0/20",
            "43.249.72.0/22",
            "103.244.50.0/24",
            "103.245.222.0/23",
            "103.245.224.0/24",
            "104.156.80.0/20",
            "140.248.64.0/18",
            "140.248.128.0/17",
            "146.75.0.0/17",
            "151.101.0.0/16",
            "157.52.64.0/18",
            "167.82.0.0/17",
            "167.82.128.0/20",
            "167.82.160.0/20",
            "167.82.224.0/20",
            "172.111.64.0/18",
            "185.31.16.0/22",
            "199.27.72.0/21",
            "199.232.0.0/16",
            "2a04:4e40::/32",
            "2a04:4e42::/32",
        ),
    ),
)

_PUBLISHED_NETWORKS = tuple(
    (cdn, ipaddress.ip_network(text)) for cdn, ranges in PUBLISHED_CDN_RANGES for text in ranges
)


@lru_cache(maxsize=65_536)
def published_cdn_range(address: str) -> str | None:
    """ "<cdn>'s published edge range <network>" when ``address`` lies in one, else None."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return None
    for cdn, network in _PUBLISHED_NETWORKS:
        if ip.version == network.version and ip in network:
            return f"{cdn}'s published edge range {network}"
    return None


# Headers only a caching edge adds (lowercase names).
CDN_HEADER_NAMES: frozenset[str] = frozenset(
    {
        "x-cache",
        "x-cache-hits",
        "x-cache-status",
        "cf-cache-status",
        "cf-ray",
        "x-amz-cf-id",
        "x-amz-cf-pop",
        "x-served-by",
        "x-fastly-request-id",
        "x-akamai-transformed",
        "x-azure-ref",
        "x-edge-location",
        "x-cdn",
        "cdn-cache",
        "cdn-pullzone",
    }
)

# Header names a CDN edge adds that are not in the list above: its request ids and trace
# stamps (``CF-Ray``'s kin: ``QS-Ray``, ``X-Edge-Ray``), its cache, PoP and timing stamps. A
# header every site behind an edge answers with is the edge's, whatever its name: it must not
# look like a platform's choice.
_CDN_HEADER_NAME = re.compile(
    r"(^|-)ray(-id)?$|(^|-)(cache|cache-status|cache-hits|pop|edge-location|served-by|timer)$"
    r"|^x-(edge|cdn|fastly|akamai|amz-cf|bunny|sucuri|iinfo)-|^(akamai|cdn|edge)-"
)


def cdn_header_name(name: str) -> bool:
    """Is this (lowercase) header name one a CDN edge adds?"""
    return name in CDN_HEADER_NAMES or bool(_CDN_HEADER_NAME.search(name))


# The label a CDN's registrable domain ends in "cdn" or is "cdn" and digits (simcdn, kxcdn,
# b-cdn, cdn77); a site merely called "cdn-something" is not a CDN.
_CDN_LABEL = re.compile(r"(cdn|^cdn\d+)$")

# ``Server`` values naming a CDN's edge software (``cloudflare``, ``AkamaiGHost``, ``ECAcc``,
# ``BunnyCDN-DE1``). Varnish, nginx and HAProxy are not here: platforms run them as their own
# caches and fronts.
_CDN_SERVER = re.compile(
    r"(cdn|cloudflare|cloudfront|akamai|fastly|edgecast|^ec(acc|s) |bunny|stackpath|sucuri"
    r"|incapsula|keycdn)",
    re.IGNORECASE,
)

# What only a CDN's edge writes: a header its vendor alone sends, or a value in the shape its
# vendor gives it. Header *names* everybody's caches use (``Via``, ``X-Cache``,
# ``X-Served-By``, ``Age``, ``X-Varnish``) are not here: a platform's own Varnish, nginx or
# HAProxy front adds them too (``X-Served-By: web1``, ``X-Cache: HIT``), and taking them for an
# edge split a platform's tenants into origins of their own. Each row: a pattern the whole
# lowercase header name matches, a pattern its value must match (searched), and the vendor.
CDN_VALUE_SHAPES: tuple[tuple[re.Pattern[str], re.Pattern[str], str], ...] = tuple(
    (re.compile(name), re.compile(value), vendor)
    for name, value, vendor in (
        # A ray id: 16 hex digits and the edge's three-letter location (CF-Ray's shape, which
        # other edges copy under their own ``*-Ray`` names).
        (r"(.+-)?ray(-id)?", r"^\s*[0-9a-f]{16}-[A-Z]{3}\s*$", "a ray-id edge"),
        (r"cf-cache-status", r"^\s*[A-Z]+\s*$", "Cloudflare"),
        # Fastly names the cache nodes that served an answer: cache-<pop><n>-<POP>, a list.
        (r"x-served-by", r"^\s*cache-[a-z0-9-]+-[A-Z]{2,5}(\s*,|\s*$)", "Fastly"),
        (r"x-fastly-request-id", r"^\s*[0-9a-f]{32,}\s*$", "Fastly"),
        (r"x-amz-cf-id", r".", "CloudFront"),
        (r"x-amz-cf-pop", r"^\s*[A-Z]{3}[0-9]{1,3}-[A-Z0-9]{2,4}\s*$", "CloudFront"),
        (r"x-cache", r"(?i)^\s*\w+ from cloudfront\s*$", "CloudFront"),
        (r"via", r"(?i)\.cloudfront\.net \(cloudfront\)", "CloudFront"),
        (r"x-akamai-.+|akamai-grn|akamai-cache-status", r".", "Akamai"),
        (r"x-azure-ref", r"^\s*[0-9A-Za-z+/=]{20,}", "Azure Front Door"),
        (r"x-sucuri-id|x-sucuri-cache", r".", "Sucuri"),
        (r"x-iinfo", r".", "Imperva"),
        (r"cdn-pullzone|cdn-requestid", r".", "Bunny CDN"),
    )
)


@dataclass(frozen=True, slots=True)
class CdnRules:
    """Which names are CDN edges. ``extra_suffixes`` adds to ``KNOWN_CDN_SUFFIXES``."""

    extra_suffixes: tuple[str, ...] = field(default=())

    def name_reason(self, name: str) -> str | None:
        """Why ``name`` (a CNAME target or PTR name) is a CDN edge name, or None."""
        found = self._match(name)
        if found is None:
            return None
        domain, known = found
        name = name.lower().rstrip(".")
        if known:
            return f"{name} is under the CDN suffix {domain}"
        return f"{name} is under {domain}, a CDN's domain"

    def cdn_domain(self, name: str) -> str | None:
        """The CDN an edge name belongs to (``cloudfront.net`` for ``d1.cloudfront.net``:
        the known suffix, not the per-customer registrable domain), or None."""
        found = self._match(name)
        return None if found is None else found[0]

    def _match(self, name: str) -> tuple[str, bool] | None:
        return _cdn_match(name, self.extra_suffixes)

    def first_name_reason(self, names: Iterable[str]) -> str | None:
        for name in names:
            reason = self.name_reason(name)
            if reason is not None:
                return reason
        return None


@lru_cache(maxsize=65_536)
def _cdn_match(name: str, extra_suffixes: tuple[str, ...]) -> tuple[str, bool] | None:
    """(the CDN suffix or domain ``name`` is under, whether the suffix is a known one), or
    None. Cached: the crawl asks it for every request's host and every image's (a scan of
    every known suffix, ~5 us), and a crawl has far fewer hosts than requests."""
    name = name.lower().rstrip(".")
    for suffix in (*KNOWN_CDN_SUFFIXES, *extra_suffixes):
        if name == suffix or name.endswith("." + suffix):
            return suffix, True
    domain = registrable_domain(name)
    if domain is not None and _CDN_LABEL.search(domain.split(".", 1)[0]):
        return domain, False
    return None


def headers_cdn_reason(headers: Sequence[tuple[str, str]]) -> str | None:
    """Why these response headers were written by a CDN's edge (``CDN_VALUE_SHAPES``, or a
    ``Server`` naming a CDN product), or None. A header's name alone never says so."""
    for name, value in headers:
        lower = name.lower()
        if lower == "server" and _CDN_SERVER.search(value):
            return f"Server: {value} names a CDN's edge"
        for name_shape, value_shape, vendor in CDN_VALUE_SHAPES:
            if name_shape.fullmatch(lower) and value_shape.search(value):
                return f"response header {name}: {value.strip()[:40]} has {vendor}'s shape"
    return None
