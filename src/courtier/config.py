"""Crawl configuration: defaults < TOML file < ``-s section.key=value`` overrides.

The file is grouped by stage (``[crawl]``, ``[fetch]``, ``[politeness]``, ``[robots]``) and
has one table of limits per key type (``[limits.site]``, ``[limits.origin]``, ...). Every
value has a default here, so a crawl needs no file at all. Unknown sections or keys are an
error: a typo must not silently fall back to a default.
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from functools import partial
from pathlib import Path
from typing import Any

from courtier import __version__
from courtier.frontier.split import SplitPolicy
from courtier.frontier.surface import DEFAULT_LEVELS, SurfaceLevel, SurfacePolicy
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
)


class ConfigError(ValueError):
    """A configuration file or override that cannot be applied."""


@dataclass(frozen=True, slots=True)
class CrawlSection:
    max_in_flight: int = 512
    """Requests in flight over all sites at once (Little's law: rate x seconds per fetch);
    a fetch counts until its page is parsed. Above it nothing new is booked (booked slots
    are still honoured)."""
    max_depth: int = 20
    """Links deeper than this from a seed root are not followed (a first bound on traps)."""
    parse_workers: int = 1
    """Processes that parse HTML; parsing never runs on the fetch event loop."""
    queue_per_site: int = 16
    """URLs a site holds in memory at once; the rest wait in the frontier store."""
    flush_interval: float = 0.5
    """Seconds between batched store writes."""
    due_recheck: float = 30.0
    """Seconds between looks for newly due work (refresh, fastlane) on idle sites."""
    origin_recheck: float = 60.0
    """Seconds between re-checks of origin evidence whose DNS answers have expired."""
    limiter: str = "memory"
    """Where the limit keys' clocks live: "memory" (this process; floors saved at a stop) or
    "sqlite" (the store file, written before each request it books)."""

    def __post_init__(self) -> None:
        if self.limiter not in ("memory", "sqlite"):
            raise ValueError(f'limiter must be "memory" or "sqlite", got {self.limiter!r}')


@dataclass(frozen=True, slots=True)
class FetchSection:
    user_agent_token: str = "courtier"
    contact_url: str = "https://github.com/courtier-crawler/courtier#operators"
    connect_timeout: float = 10.0
    read_timeout: float = 20.0
    total_timeout: float = 60.0
    max_body_bytes: int = 8 * 1024 * 1024
    """Largest body kept, counted after decompression (a compression bomb stops here)."""
    max_header_bytes: int = 16 * 1024
    """Longest single header line accepted."""
    max_headers: int = 100
    """Most response header fields accepted."""
    allowed_types: tuple[str, ...] = (
        "text/",
        "application/xhtml+xml",
        "application/xml",
        "application/rss+xml",
        "application/atom+xml",
        "application/json",
        "application/gzip",
        "application/x-gzip",
        "image/",
    )
    """Media types (or prefixes ending in '/') whose bodies are read; others are not downloaded."""
    ca_file: str = ""
    """A PEM file of CA certificates trusted besides the system's (a private or test CA);
    certificates are always verified."""

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

    def policy(self) -> LimitPolicy:
        """The limiter's view: these limits by key type."""
        table = {
            key_type.value: dataclasses.asdict(getattr(self, key_type.value.replace("-", "_")))
            for key_type in KeyType
        }
        return LimitPolicy.from_config(table)


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
    the seed sites themselves are ordinary frontier URLs either way."""
    cdn_hosts: tuple[str, ...] = tuple(sorted(DEFAULT_CDN_HOSTS))
    """Shared CDN hosts whose first path segment names the customer."""
    imgsvc_hosts: tuple[str, ...] = tuple(sorted(DEFAULT_IMGSVC_HOSTS))
    """Shared image-service hosts whose first path segment names the customer."""
    max_in_flight: int = 32
    """Media requests in flight at once, all media hosts together."""
    max_in_flight_per_key: int = 4
    """Media requests in flight on one bucket, CDN customer or image-service customer."""
    max_queued: int = 100_000
    """Media URLs waiting in memory; more are dropped (counted) until the queue drains."""

    def __post_init__(self) -> None:
        if min(self.max_in_flight, self.max_in_flight_per_key, self.max_queued) < 1:
            raise ValueError("media in-flight and queue limits must be at least 1")

    def rules(self) -> KeyRules:
        return KeyRules(
            cdn_hosts=frozenset(h.lower().rstrip(".") for h in self.cdn_hosts),
            imgsvc_hosts=frozenset(h.lower().rstrip(".") for h in self.imgsvc_hosts),
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

    @property
    def site_interval(self) -> float:
        """Seconds between request starts on one site (Crawl-delay only ever raises it)."""
        return 1.0 / self.limits.site.rate

    def as_dict(self) -> dict[str, dict[str, Any]]:
        return {f.name: dataclasses.asdict(getattr(self, f.name)) for f in fields(self)}


def _coerce(section: str, key: str, current: Any, value: Any) -> Any:
    if isinstance(value, str) and not isinstance(current, str):
        try:
            value = tomllib.loads(f"v = {value}")["v"]
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{section}.{key}: cannot read {value!r}: {exc}") from None
    if isinstance(current, tuple):
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{section}.{key}: expected a list of strings")
        return tuple(value)
    if isinstance(current, bool) or not isinstance(current, int | float | str):
        ok = isinstance(value, type(current))
    elif isinstance(current, float):
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        value = float(value) if ok else value
    else:
        ok = isinstance(value, type(current)) and not isinstance(value, bool)
    if not ok:
        raise ConfigError(
            f"{section}.{key}: expected {type(current).__name__}, got {type(value).__name__}"
        )
    return value


def _apply_table(name: str, current: Any, table: Any) -> Any:
    """``current`` (a settings dataclass) with ``table`` applied, recursively, type-checked."""
    if not isinstance(table, Mapping):
        raise ConfigError(f"[{name}] must be a table")
    known = {f.name: f for f in fields(current)}
    updates = {}
    for key, value in table.items():
        attribute = str(key).replace("-", "_")
        if attribute not in known:
            options = ", ".join(sorted(known))
            raise ConfigError(f"unknown setting {name}.{key} (known: {options})")
        old = getattr(current, attribute)
        if dataclasses.is_dataclass(old):
            updates[attribute] = _apply_table(f"{name}.{key}", old, value)
        else:
            updates[attribute] = _coerce(name, str(key), old, value)
    try:
        return replace(current, **updates)
    except ValueError as exc:
        raise ConfigError(f"[{name}]: {exc}") from None


def apply(config: Config, values: Mapping[str, Any]) -> Config:
    """Return ``config`` with ``values`` ({section: {key: value}}) applied, type-checked."""
    sections = {f.name for f in fields(config)}
    changes: dict[str, Any] = {}
    for section, table in values.items():
        if section not in sections:
            raise ConfigError(f"unknown section [{section}] (known: {', '.join(sorted(sections))})")
        changes[section] = _apply_table(section, getattr(config, section), table)
    return replace(config, **changes)


def load(path: Path | None = None, overrides: Iterable[str] = ()) -> Config:
    """Defaults, then the TOML file at ``path``, then ``section.key=value`` overrides."""
    config = Config()
    if path is not None:
        try:
            config = apply(config, tomllib.loads(path.read_text(encoding="utf-8")))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"{path}: {exc}") from None
    for item in overrides:
        name, sep, value = item.partition("=")
        words = name.strip().split(".")
        if not sep or len(words) < 2 or not all(words):
            raise ConfigError(f"override {item!r} is not of the form section.key=value")
        nested: Any = value.strip()
        for word in reversed(words[1:]):
            nested = {word: nested}
        config = apply(config, {words[0]: nested})
    return config
