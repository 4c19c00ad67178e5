"""Limit keys and request costs: which budgets one request spends, and how much of each.

Rules:

- Every request is booked against all the keys it touches (DESIGN.md, "Limits"):
  ``site:<site>`` and ``origin:<origin id>`` for an ordinary page or same-origin media;
  ``bucket:<provider>/<bucket>`` alone for an object-store URL (the bucket is the site: the
  store's shared hostname must not throttle every bucket behind it); ``cdn:<cdn host>`` for a
  CDN URL, plus ``cdn-miss:<cdn host>/<customer>`` and the embedding site's ``origin:<id>``
  while a cache miss is expected (a miss reaches the customer's origin); a per-customer CDN
  hostname (``d1234.cloudfront.net``) is ``cdn:<registrable domain>`` and ``cdn-miss:<host>``;
  ``imgsvc:<service>/<customer>`` for an image service (a per-customer hostname such as
  ``acme.imgix.net``: ``imgsvc:imgix.net/acme.imgix.net``), plus the customer's origin while
  the service behaves as a cache and a miss is expected. A media host known by where its DNS
  leads rather than by its name (a vanity name CNAMEd to a provider) is keyed in
  ``courtier.politeness.placement``.
- A key type has a rate (cost units per second), a burst tolerance and a slot width. Object
  stores get a large burst tolerance, everything else a small one. A site key counts requests,
  not cost units: its gap (1 s, or robots Crawl-delay) is start-to-start per request.
- A request's cost comes from its class: the first URL rule that matches the path and query
  wins; once the response type is known it refines the class (an ``image/*`` body is an image).
  The default rules (``DEFAULT_URL_RULES``) tell an index (a search, a listing of many items,
  a tag, category or date archive, a numbered page: cost 4) from a detail page (one item,
  listing, event or post: cost 2) by what follows the index word in the path.
- ``politeness_keys`` and ``request_cost`` are pure: the facts they need (origin id, whether a
  cache miss is expected) are arguments. Until origin inference supplies ids, ``guess_origin``
  groups sites by a shared CNAME target or a shared address.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Final

from courtier.origins.cdn import CdnRules
from courtier.politeness.gcra import DEFAULT_SLOT_WIDTH, KeyParams, Limit
from courtier.url import Url, is_ip_address, object_store


class KeyType(StrEnum):
    SITE = "site"
    ORIGIN = "origin"
    BUCKET = "bucket"
    CDN = "cdn"
    CDN_MISS = "cdn-miss"
    IMGSVC = "imgsvc"


_SPACE: Final = re.compile(r"\s")
"""Any character ``str.isspace`` calls whitespace (``\\s`` on text is the same class)."""

PARSED_KEYS_MAX: Final = 65_536
"""Key strings ``LimitKey.parse`` remembers; past it the memory starts again (a crawl books a
few keys per site and origin, so this only bounds a pathological stream of names)."""

_parsed: dict[str, LimitKey] = {}


def site_key(site: str) -> str:
    """The text of a site's key (``site:<host[:port]>``), without parsing or checking."""
    return "site:" + site


def origin_key(origin: str) -> str:
    """The text of an origin's key (``origin:<id>``), without parsing or checking."""
    return "origin:" + origin


@dataclass(frozen=True, slots=True)
class LimitKey:
    """A named budget, written ``<type>:<name>`` (``site:example.test``)."""

    type: KeyType
    name: str

    def __post_init__(self) -> None:
        if not self.name or _SPACE.search(self.name) is not None:
            raise ValueError(f"a {self.type} key needs a name without spaces, got {self.name!r}")

    def __str__(self) -> str:
        # A StrEnum member concatenates as its value, without format()'s detour.
        return self.type + ":" + self.name

    @classmethod
    def parse(cls, text: str) -> LimitKey:
        """The key ``text`` names; ValueError if it names none.

        Keys are parsed on every booking and every observed request, and the same few
        thousand come back all the time: a parsed key (an immutable value) is remembered."""
        key = _parsed.get(text)
        if key is not None and cls is LimitKey:
            return key
        kind, sep, name = text.partition(":")
        try:
            key_type = KeyType(kind)
        except ValueError:
            known = ", ".join(t.value for t in KeyType)
            raise ValueError(f"unknown limit key type in {text!r} (known: {known})") from None
        if not sep:
            raise ValueError(f"limit key {text!r} is not of the form <type>:<name>")
        key = cls(key_type, name)
        if cls is LimitKey:
            if len(_parsed) >= PARSED_KEYS_MAX:
                _parsed.clear()
            _parsed[text] = key
        return key


@dataclass(frozen=True, slots=True)
class KeyTypeParams:
    """Configured limits of one key type (the ``[politeness.keys.<type>]`` table)."""

    rate: float
    """Cost units per second (requests per second for an unweighted type)."""
    burst: float = 0.0
    """Burst tolerance, seconds."""
    slot_width: float = DEFAULT_SLOT_WIDTH
    """Seconds a request may start late before it forfeits its slot."""
    weighted: bool = True
    """Whether the request's cost is charged (False: one unit per request)."""
    _params: KeyParams = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Validates once; the value is immutable, so every booking shares these parameters.
        params = KeyParams.from_rate(self.rate, self.burst, self.slot_width, weighted=self.weighted)
        object.__setattr__(self, "_params", params)

    def key_params(self) -> KeyParams:
        return self._params


DEFAULT_KEY_TYPE_PARAMS: Final[Mapping[KeyType, KeyTypeParams]] = MappingProxyType(
    {
        KeyType.SITE: KeyTypeParams(rate=1.0, burst=0.0, weighted=False),
        KeyType.ORIGIN: KeyTypeParams(rate=2.0, burst=0.0),
        KeyType.BUCKET: KeyTypeParams(rate=50.0, burst=5.0),
        KeyType.CDN: KeyTypeParams(rate=20.0, burst=1.0),
        KeyType.CDN_MISS: KeyTypeParams(rate=2.0, burst=0.0),
        KeyType.IMGSVC: KeyTypeParams(rate=10.0, burst=1.0),
    }
)


class RequestClass(StrEnum):
    INDEX = "index"
    """Search results, listings, tag and category pages: expensive for the server."""
    DETAIL = "detail"
    IMAGE = "image"
    ROBOTS = "robots"


DEFAULT_COSTS: Final[Mapping[RequestClass, float]] = MappingProxyType(
    {
        RequestClass.INDEX: 4.0,
        RequestClass.DETAIL: 2.0,
        RequestClass.IMAGE: 1.0,
        RequestClass.ROBOTS: 1.0,
    }
)


@dataclass(frozen=True, slots=True)
class UrlRule:
    """``pattern`` (a regular expression searched in the path and query) means ``klass``."""

    pattern: str
    klass: RequestClass
    _compiled: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        try:
            compiled = re.compile(self.pattern)
        except re.error as exc:
            raise ValueError(f"URL rule {self.pattern!r} is not a valid regex: {exc}") from None
        object.__setattr__(self, "_compiled", compiled)

    def matches(self, target: str) -> bool:
        return self._compiled.search(target) is not None


_IMAGE_SUFFIXES: Final = r"(?i)\.(?:jpe?g|png|gif|webp|avif|svg|ico|bmp|tiff?)(?:\?|$)"

# Pieces of the index rules. A rule that ends in _END matches only when the path ends there
# (a trailing slash and any query allowed): what follows an index word decides the class.
_END: Final = r"/?(?:\?|$)"
_SEGMENT: Final = r"/[^/?#]+"
_EXT: Final = r"(?:\.\w+)?"  # /listings.html, /search.php
_DATE: Final = r"(?:/\d{4}(?:[-/]\d{1,2}){0,2})?"  # /2024, /2024/05, /2024-05-17

DEFAULT_URL_RULES: Final[tuple[UrlRule, ...]] = (
    UrlRule(r"^/robots\.txt(?:\?|$)", RequestClass.ROBOTS),
    UrlRule(_IMAGE_SUFFIXES, RequestClass.IMAGE),
    # The rest finds index pages (cost 4); a page no rule matches is a detail page (cost 2).
    # Searching and browsing: everything below is an index (/search/shoes, /browse/a/b).
    UrlRule(r"(?i)/(?:search|find|browse)(?:[/?.]|$)", RequestClass.INDEX),
    # Pagination anywhere: /page/3, /blog/page/2, /category/news/page/3.
    UrlRule(r"(?i)/page/\d+(?:[/?.]|$)", RequestClass.INDEX),
    # Named collections: the word, or the word and one name (/tags, /tag/python/, /list/2,
    # /lists/favourites); a page below the name is a detail (/tags/python/post-1).
    UrlRule(rf"(?i)/(?:tags?|lists?)(?:\.\w+|{_SEGMENT})?{_END}", RequestClass.INDEX),
    # Categories nest: /category/news, /categories/shoes/boots/.
    UrlRule(rf"(?i)/categor(?:y|ies){_EXT}(?:{_SEGMENT})*{_END}", RequestClass.INDEX),
    # Browsable by date: the word, or the word and a date (/archive/2024/, /calendar/2026/1,
    # /events/2024/05); an event or a post is a detail (/events/2024-summer-fair, /archives/123,
    # WordPress's numeric permalinks).
    UrlRule(rf"(?i)/(?:archives?|calendar|events){_EXT}{_DATE}{_END}", RequestClass.INDEX),
    # Listings: /listings, /listing?page=2 are indexes; one listing is a detail
    # (/listing/123, /listings/some-flat).
    UrlRule(rf"(?i)/listings?{_EXT}{_END}", RequestClass.INDEX),
    # A directory index file (/blog/index.html), but not a path below it (/index.php/a-post).
    UrlRule(r"(?i)/index(?:\.\w+)?/?$", RequestClass.INDEX),
    # Searching, paging or sorting queries on any path (but not ?p=123, a WordPress post).
    UrlRule(r"(?i)[?&](?:q|s|query|search|page|sort|filter)=", RequestClass.INDEX),
    UrlRule(r"^/(?:index\.\w+)?$", RequestClass.INDEX),  # the home page
)
"""Request classes from the path and query, first match wins, else ``DETAIL``.

An index word as the last path segment is an index page (``/listings``, ``/events/``,
``/tags``); a collection word (tag, list, category) followed by its name still is
(``/tags/python``, ``/list/2``, ``/category/news/``), as is a date after a date-browsable word
(``/archive/2024/``); ``page/N`` anywhere, search and browse paths, and searching, paging or
sorting queries are indexes. An index word followed by an id or a slug names one thing: a
detail page (``/listing/123``, ``/listings/some-flat``, ``/events/2024-summer-fair``,
``/tags/python/post-1``). In the simulated web (``courtier.simweb.pages``) ``/``,
``/list/N`` (a catalogue page of items), ``/search?q=..`` and ``/calendar/Y/M`` are indexes,
``/item/N`` is a detail page, ``/img/N.jpg`` an image.
"""


@dataclass(frozen=True, slots=True)
class CostModel:
    """Request classes from URL rules (first match wins, else ``default``) and their costs."""

    rules: tuple[UrlRule, ...] = DEFAULT_URL_RULES
    costs: Mapping[RequestClass, float] = field(default_factory=lambda: DEFAULT_COSTS)
    default: RequestClass = RequestClass.DETAIL

    def __post_init__(self) -> None:
        for klass in RequestClass:
            cost = self.costs.get(klass)
            if isinstance(cost, bool) or not isinstance(cost, int | float) or not cost > 0:
                raise ValueError(f"cost of {klass} requests must be positive, got {cost!r}")

    def classify(self, url: Url, content_type: str | None = None) -> RequestClass:
        """The class of a request for ``url``; ``content_type`` refines it once known."""
        return self.classify_target(url.target, content_type)

    def classify_target(self, target: str, content_type: str | None = None) -> RequestClass:
        """The class of a request line's path and query (``/list/2?page=3``)."""
        not_an_image = False
        if content_type is not None:
            media = content_type.partition(";")[0].strip().lower()
            if media.startswith("image/"):
                return RequestClass.IMAGE
            # A page served at an image-looking URL is a page, and costs like one.
            not_an_image = bool(media)
        for rule in self.rules:
            if rule.matches(target) and not (not_an_image and rule.klass is RequestClass.IMAGE):
                return rule.klass
        return self.default

    def cost(self, url: Url, content_type: str | None = None) -> float:
        return float(self.costs[self.classify(url, content_type)])

    def cost_of_target(self, target: str, content_type: str | None = None) -> float:
        return float(self.costs[self.classify_target(target, content_type)])


def request_cost(
    url: Url, model: CostModel | None = None, content_type: str | None = None
) -> float:
    """The cost units one request for ``url`` spends."""
    return (model or CostModel()).cost(url, content_type)


class MediaSource(StrEnum):
    """A host that serves other sites' media, limited on its own keys."""

    CDN = "cdn"
    STORE = "store"
    IMGSVC = "imgsvc"
    SAME_ORIGIN = "same-origin"
    """A media host on a seed site's servers (``pipeline.media_places``): its origin pays."""
    HOST = "host"
    """A host outside the seed that renders may fetch from (``[render] hosts``): booked on
    its own site key."""


DEFAULT_CDN_HOSTS: Final = frozenset(
    {
        "images.ctfassets.net",  # Contentful: /<space>/<asset>/<token>/<file>
        "images.secure.ctfassets.net",
        "assets.ctfassets.net",
        "downloads.ctfassets.net",
        "cdn.simcdn.test",
        "images.simassets.test",
    }
)
"""Shared CDN hostnames whose first path segment names the customer (``.test``: the
simulated web's; ``images.simassets.test`` is its Contentful, known by this name alone)."""
DEFAULT_IMGSVC_HOSTS: Final = frozenset(
    {
        "res.cloudinary.com",
        "ik.imagekit.io",
        "imagedelivery.net",  # Cloudflare Images: /<account hash>/<image>/<variant>
        "i0.wp.com",
        "i1.wp.com",
        "i2.wp.com",
        "img.simresize.test",
    }
)
"""Shared image-service hostnames whose first path segment names the customer."""
DEFAULT_IMGSVC_DOMAINS: Final = frozenset({"imgix.net", "cloudimg.io", "twic.pics", "sirv.com"})
"""Image services that give each customer a hostname of its own under their domain
(``acme.imgix.net``): such a host is one customer of the service."""


@dataclass(frozen=True, slots=True)
class KeyRules:
    """Which hosts are CDNs and image services.

    Shared hosts (``cdn_hosts``, ``imgsvc_hosts``) name the customer in the first path
    segment. A host whose *name* says CDN edge (``cdn_names``: ``d1234.cloudfront.net``,
    ``acme.b-cdn.net``; see ``courtier.origins.cdn``) is one customer's CDN hostname: the host
    is the customer, its registrable domain the CDN.
    """

    cdn_hosts: frozenset[str] = DEFAULT_CDN_HOSTS
    imgsvc_hosts: frozenset[str] = DEFAULT_IMGSVC_HOSTS
    cdn_names: CdnRules | None = field(default_factory=CdnRules)
    imgsvc_domains: frozenset[str] = DEFAULT_IMGSVC_DOMAINS

    def media_source(self, url: Url) -> MediaSource | None:
        """The kind of media host ``url`` is on, or None for an ordinary site."""
        if object_store(url) is not None:
            return MediaSource.STORE
        if self.imgsvc_domain(url.host) is not None:
            return MediaSource.IMGSVC
        if self.cdn_named(url.host):
            return MediaSource.CDN
        if _first_segment(url) is None:
            return None
        if url.host in self.cdn_hosts:
            return MediaSource.CDN
        if url.host in self.imgsvc_hosts:
            return MediaSource.IMGSVC
        return None

    def cdn_named(self, host: str) -> bool:
        """A per-customer CDN hostname, recognised by its name (not a configured shared one)."""
        if self.cdn_names is None or host in self.cdn_hosts or host in self.imgsvc_hosts:
            return False
        if is_ip_address(host) or self.imgsvc_domain(host) is not None:
            return False
        return self.cdn_names.cdn_domain(host) is not None

    def imgsvc_domain(self, host: str) -> str | None:
        """The image service whose per-customer hostname ``host`` is (``imgix.net`` for
        ``acme.imgix.net``; the service's own name is not a customer's), or None."""
        if host in self.imgsvc_hosts:
            return None
        _, dot, rest = host.partition(".")
        while dot:
            if rest in self.imgsvc_domains:
                return rest
            _, dot, rest = rest.partition(".")
        return None


def _first_segment(url: Url) -> str | None:
    segment = url.target.partition("?")[0].split("/", 2)[1]
    return segment.lower() or None


def politeness_keys(
    url: Url,
    *,
    origin: str | None = None,
    cache_miss_expected: bool = True,
    rules: KeyRules | None = None,
    customer_origin: str | None = None,
    service_caches: bool = True,
) -> tuple[LimitKey, ...]:
    """The limit keys a request for ``url`` is booked against.

    ``origin`` is the inferred origin id of the site (None while unknown: the site alone is
    limited). ``cache_miss_expected`` adds the ``cdn-miss`` key to a CDN request; keep it True
    until the CDN's hit rate for that customer is known, so misses are never under-counted.
    ``customer_origin`` is the origin of the site whose page embeds a CDN or image-service
    URL: an expected miss is booked on it too, since the cache fetches the object from there.
    ``service_caches`` says an image service acts as a cache (False: store-like, its misses
    are its own work, not the customer's).
    """
    rules = rules or KeyRules()
    store = object_store(url)
    if store is not None:
        return (LimitKey(KeyType.BUCKET, f"{store.provider}/{store.bucket}"),)
    if rules.cdn_named(url.host):
        assert rules.cdn_names is not None
        keys = [LimitKey(KeyType.CDN, rules.cdn_names.cdn_domain(url.host) or url.host)]
        if cache_miss_expected:
            keys.append(LimitKey(KeyType.CDN_MISS, url.site))
            if customer_origin is not None:
                keys.append(LimitKey(KeyType.ORIGIN, customer_origin))
        return tuple(keys)
    service = rules.imgsvc_domain(url.host)
    if service is not None:
        keys = [LimitKey(KeyType.IMGSVC, f"{service}/{url.site}")]
        if service_caches and cache_miss_expected and customer_origin is not None:
            keys.append(LimitKey(KeyType.ORIGIN, customer_origin))
        return tuple(keys)
    customer = _first_segment(url)
    if url.host in rules.cdn_hosts and customer is not None:
        keys = [LimitKey(KeyType.CDN, url.site)]
        if cache_miss_expected:
            keys.append(LimitKey(KeyType.CDN_MISS, f"{url.site}/{customer}"))
            if customer_origin is not None:
                keys.append(LimitKey(KeyType.ORIGIN, customer_origin))
        return tuple(keys)
    if url.host in rules.imgsvc_hosts and customer is not None:
        keys = [LimitKey(KeyType.IMGSVC, f"{url.site}/{customer}")]
        if service_caches and cache_miss_expected and customer_origin is not None:
            keys.append(LimitKey(KeyType.ORIGIN, customer_origin))
        return tuple(keys)
    keys = [LimitKey(KeyType.SITE, url.site)]
    if origin is not None:
        keys.append(LimitKey(KeyType.ORIGIN, origin))
    return tuple(keys)


def guess_origin(cname_target: str | None, addresses: Iterable[str]) -> str | None:
    """A stand-in origin id until origin inference runs: the CNAME target, else the addresses.

    Sites behind one CNAME target, or resolving to the same address set, get the same id.
    """
    if cname_target:
        return f"cname={cname_target.lower().rstrip('.')}"
    unique = sorted(set(addresses))
    return f"addr={','.join(unique)}" if unique else None


_OVERRIDE_FIELDS: Final = frozenset({"rate", "burst", "slot_width"})


def parse_override(
    rule: str, types: Mapping[KeyType, KeyTypeParams] = DEFAULT_KEY_TYPE_PARAMS
) -> tuple[str, KeyParams]:
    """``"KEY => rate=R [burst=B] [slot_width=W]"`` as (the key, its parameters): those of
    its key type with the fields given replaced (``site:example.org => rate=0.2``,
    ``origin:platform-a => rate=1 burst=2``). ValueError when it is not of that form."""
    left, arrow, right = rule.partition("=>")
    if not arrow:
        raise ValueError(f"{rule!r} is not of the form 'KEY => rate=R [burst=B]'")
    key = LimitKey.parse(left.strip().lower().rstrip("."))
    values: dict[str, float] = {}
    for word in right.replace(",", " ").split():
        name, equals, number = word.partition("=")
        if not equals or name not in _OVERRIDE_FIELDS:
            raise ValueError(f"{rule!r}: {word!r} is not rate=, burst= or slot_width=")
        values[name] = float(number)
    if not values:
        raise ValueError(f"{rule!r} sets nothing (rate=, burst= or slot_width=)")
    base = types[key.type]
    merged = KeyTypeParams(
        values.get("rate", base.rate),
        values.get("burst", base.burst),
        values.get("slot_width", base.slot_width),
        base.weighted,
    )
    return str(key), merged.key_params()


@dataclass(frozen=True, slots=True)
class LimitPolicy:
    """Parameters per key type, with per-key overrides (Crawl-delay, feedback, config)."""

    types: Mapping[KeyType, KeyTypeParams] = field(default_factory=lambda: DEFAULT_KEY_TYPE_PARAMS)
    overrides: Mapping[str, KeyParams] = field(default_factory=dict)
    _by_type: Mapping[KeyType, KeyParams] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        missing = [t.value for t in KeyType if t not in self.types]
        if missing:
            raise ValueError(f"no limits configured for key types: {', '.join(missing)}")
        # A policy is a value: copies taken here are what it answers with, so a caller's
        # dict changed later cannot make ``params`` disagree with itself. A new setting is a
        # new policy (and so a fresh cache).
        object.__setattr__(self, "types", MappingProxyType(dict(self.types)))
        object.__setattr__(self, "overrides", MappingProxyType(dict(self.overrides)))
        by_type = {key_type: params.key_params() for key_type, params in self.types.items()}
        object.__setattr__(self, "_by_type", by_type)

    @classmethod
    def from_config(cls, table: Mapping[str, Mapping[str, object]]) -> LimitPolicy:
        """Read ``{"<type>": {"rate": .., "burst": .., "slot_width": ..}}`` over the defaults."""
        types = dict(DEFAULT_KEY_TYPE_PARAMS)
        for name, values in table.items():
            try:
                key_type = KeyType(name)
            except ValueError:
                raise ValueError(f"unknown limit key type {name!r}") from None
            base = types[key_type]
            unknown = set(values) - {"rate", "burst", "slot_width", "weighted"}
            if unknown:
                raise ValueError(f"unknown settings for {name} keys: {', '.join(sorted(unknown))}")
            merged = {
                "rate": values.get("rate", base.rate),
                "burst": values.get("burst", base.burst),
                "slot_width": values.get("slot_width", base.slot_width),
                "weighted": values.get("weighted", base.weighted),
            }
            if not isinstance(merged["weighted"], bool):
                raise ValueError(f"{name}.weighted must be true or false")
            try:
                types[key_type] = KeyTypeParams(**merged)  # type: ignore[arg-type]
            except ValueError as exc:
                raise ValueError(f"limits of {name} keys: {exc}") from None
        return cls(types=MappingProxyType(types))

    def params(self, key: LimitKey) -> KeyParams:
        if self.overrides:
            override = self.overrides.get(str(key))
            if override is not None:
                return override
        return self._by_type[key.type]

    def params_of(self, text: str) -> KeyParams:
        """``params(LimitKey.parse(text))``: ValueError when ``text`` names no key."""
        return self.params(LimitKey.parse(text))

    def limits(self, keys: Sequence[LimitKey]) -> tuple[Limit, ...]:
        """The ``Limit`` of every key, ready for ``Limiter.book``."""
        return tuple(Limit(str(key), self.params(key)) for key in keys)
