"""Crawler traps: a cap per URL pattern, so an endless calendar costs a few requests.

A URL's *pattern* is its host and path with the variable parts collapsed, plus the sorted
set of its query keys (values dropped):

- a numeric segment or digit run becomes ``{n}``; a year ``{year}``; a date ``{date}``;
  a long hex, UUID or random-looking token ``{id}``; path parameters (``;jsessionid=...``)
  are dropped;
- query keys are sorted and de-duplicated, digits in them collapsed (``f1``, ``f2`` -> ``f{n}``),
  and a query that repeats a key is marked ``{repeated}``;
  more than ``max_query_keys`` distinct keys collapse to ``?{many}``;
- a path whose segments repeat (a segment three times or more) keeps only its distinct
  segments, marked ``{loop}``, so every lap of ``/a/b/a/b/...`` shares one pattern;
- a path deeper than ``max_pattern_segments`` is cut and marked ``{deep}``.

So ``/calendar/2026/11/30`` and ``/calendar/1999/1/2`` share ``/calendar/{year}/{n}/{n}``,
and ``/page?sid=a81f...`` shares ``/page?sid`` with every other session id.

A pattern is *volatile* when its variable parts look like a trap rather than a catalogue:
dates or years, session-id keys or random tokens, a repeated query key, too many keys, a
repeated path segment (``/a/b/a/b/a``), or a cut path. Volatile patterns get the small cap
(``volatile_pattern_cap``, default 30): a calendar or a session-id loop costs tens of
requests, not thousands. Other patterns (``/product/{n}``) get the large ``per_pattern_cap``,
since a shop legitimately has thousands of products. Caps are per host (the host is part of the
pattern), and a host cannot escape them by minting endless patterns: past
``max_patterns_per_host`` its new patterns share one overflow pattern.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Final
from urllib.parse import parse_qsl, urlsplit

SESSION_KEYS: Final = frozenset(
    {
        "sid", "sessid", "sessionid", "session_id", "session", "jsessionid", "phpsessid",
        "aspsessionid", "cfid", "cftoken", "zenid", "oscsid", "s_id", "sess",
    }
)  # fmt: skip
_YEAR: Final = re.compile(r"(?:19|20)\d\d")
_DATE: Final = re.compile(
    r"(?:19|20)\d\d(?P<sep>[-_./]?)(?:0?[1-9]|1[0-2])(?:(?P=sep)(?:0?[1-9]|[12]\d|3[01]))?"
    r"|(?:0?[1-9]|[12]\d|3[01])[-_.](?:0?[1-9]|1[0-2])[-_.](?:19|20)\d\d"
)
_HEXISH: Final = re.compile(r"[0-9a-f]{16,}|[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}", re.I)
_TOKEN: Final = re.compile(r"[A-Za-z0-9_\-]{20,}")
_DIGITS: Final = re.compile(r"\d+")


@dataclass(frozen=True, slots=True)
class TrapPolicy:
    per_pattern_cap: int = 1000
    volatile_pattern_cap: int = 30
    max_patterns_per_host: int = 5000
    max_query_keys: int = 12
    max_pattern_segments: int = 12

    def __post_init__(self) -> None:
        for name in ("per_pattern_cap", "volatile_pattern_cap", "max_patterns_per_host"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")
        if self.max_query_keys < 1 or self.max_pattern_segments < 1:
            raise ValueError("max_query_keys and max_pattern_segments must be >= 1")

    def cap_for(self, pattern: UrlPattern) -> int:
        return self.volatile_pattern_cap if pattern.volatile else self.per_pattern_cap


@dataclass(frozen=True, slots=True)
class UrlPattern:
    key: str
    host: str
    volatile: bool


@dataclass(frozen=True, slots=True)
class TrapVerdict:
    pattern: UrlPattern
    admitted: bool
    count: int  # URLs admitted under the pattern so far, this one included if admitted
    cap: int


def url_pattern(url: str, policy: TrapPolicy = TrapPolicy()) -> UrlPattern:
    """The pattern of ``url`` (see the module rules). Never raises: a URL that does not parse
    is patterned from its raw text and counted as volatile."""
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
    except ValueError:
        raw = url.split("?", 1)[0]
        return UrlPattern(f"?raw:{_DIGITS.sub('{n}', raw)}", "", True)
    return UrlPattern(*pattern_of(host, parts.path, parts.query, policy))


def pattern_of(
    host: str, path: str, query: str, policy: TrapPolicy = TrapPolicy()
) -> tuple[str, str, bool]:
    """(key, host, volatile) of the pattern of a URL already split into its lower-case host
    (as ``urlsplit(url).hostname`` gives it), path and query: ``url_pattern`` without the
    split, for callers that hold the parts (a parse worker, right after canonicalising)."""
    path_key, path_volatile = _path_pattern(path, policy)
    if len(query) <= _CACHED_QUERY_CHARS:
        query_key, query_volatile = _cached_query_pattern(query, policy.max_query_keys)
    else:
        query_key, query_volatile = _query_pattern(query, policy.max_query_keys)
    key = f"{host}{path_key}" + (f"?{query_key}" if query_key else "")
    return key, host, path_volatile or query_volatile


def _path_pattern(path: str, policy: TrapPolicy) -> tuple[str, bool]:
    if ";" in path:
        segments = [segment.split(";", 1)[0] for segment in path.split("/")[1:]]
        volatile = any(";" in s and _is_session_parameter(s) for s in path.split("/"))
    else:
        segments, volatile = path.split("/")[1:], False
    collapsed = []
    for segment in segments:
        if len(segment) <= _CACHED_CHARS:
            shape, segment_volatile = _cached_segment_shape(segment)
        else:
            shape, segment_volatile = _segment_shape(segment)
        collapsed.append(shape)
        volatile |= segment_volatile
    if len(collapsed) >= 3:  # a shape seen three times needs three segments
        repeats = Counter(shape for shape in collapsed if shape)
        if repeats and max(repeats.values()) >= 3:
            # A path that loops (/a/b/a/b/a/...): every lap is a new URL, so the pattern keeps
            # only the distinct segments, and all laps share it.
            return "/{loop}/" + "/".join(dict.fromkeys(collapsed)), True
    if len(collapsed) > policy.max_pattern_segments:
        collapsed = [*collapsed[: policy.max_pattern_segments], "{deep}"]
        volatile = True
    return "/" + "/".join(collapsed), volatile


def _segment_shape(segment: str) -> tuple[str, bool]:
    if not segment:
        return "", False
    if _DATE.fullmatch(segment):
        return "{date}", True
    if segment.isdigit():
        return ("{year}", True) if _YEAR.fullmatch(segment) else ("{n}", False)
    if _HEXISH.fullmatch(segment) or (_TOKEN.fullmatch(segment) and _looks_random(segment)):
        return "{id}", True
    return _DIGITS.sub("{n}", segment), False


def _query_pattern(query: str, max_query_keys: int) -> tuple[str, bool]:
    if not query:
        return "", False
    if "%" in query or "+" in query:
        pairs = parse_qsl(query, keep_blank_values=True)
    else:  # what parse_qsl gives when there is nothing to unquote, without its overhead
        pairs = [_pair(piece) for piece in query.split("&") if piece]
    keys = []
    volatile = False
    for key, value in pairs:
        if len(key) <= _CACHED_CHARS:
            shape, session = _cached_key_shape(key)
        else:
            shape, session = _key_shape(key)
        keys.append(shape)
        if session or (
            _cached_volatile_value(value)
            if len(value) <= _CACHED_CHARS
            else _looks_volatile_value(value)
        ):
            volatile = True
    distinct = sorted(set(keys))
    volatile |= len(distinct) < len(keys)  # a repeated key: a query string that keeps growing
    if len(distinct) > max_query_keys:
        return "{many}", True
    # Repeats are marked in the key so that ``?f=1`` and ``?f=1&f=1`` count separately:
    # one pattern, one cap.
    repeated = ["{repeated}"] if len(distinct) < len(keys) else []
    return "&".join(distinct + repeated), volatile


def _pair(piece: str) -> tuple[str, str]:
    name, _, value = piece.partition("=")
    return name, value


def _key_shape(key: str) -> tuple[str, bool]:
    """A query key's part of the pattern, and whether it names a session."""
    lowered = key.lower()
    return _DIGITS.sub("{n}", lowered), lowered in SESSION_KEYS


def _looks_volatile_value(value: str) -> bool:
    if _DATE.fullmatch(value) or _YEAR.fullmatch(value):
        return True
    return bool(_HEXISH.fullmatch(value) or (_TOKEN.fullmatch(value) and _looks_random(value)))


# Segments, keys and values repeat across a site's URLs ("item", "page", "2026"): short ones
# are judged once each (the functions are pure; the caches are bounded).
_CACHE_SIZE: Final = 8192
_CACHED_CHARS: Final = 64
_cached_segment_shape: Final = lru_cache(maxsize=_CACHE_SIZE)(_segment_shape)
_cached_key_shape: Final = lru_cache(maxsize=_CACHE_SIZE)(_key_shape)
_cached_volatile_value: Final = lru_cache(maxsize=_CACHE_SIZE)(_looks_volatile_value)
# Whole query strings repeat too (every card's "?ref=grid&pos=3", a site's "?utm_source=..."):
# 1.6 us to pattern one, 0.09 to look it up (timeit, best of 5).
_CACHED_QUERY_CHARS: Final = 128
_cached_query_pattern: Final = lru_cache(maxsize=_CACHE_SIZE)(_query_pattern)


def clear_pattern_caches() -> None:
    """Forget every segment, key, value and query judged (as a new process would have)."""
    for cache in (
        _cached_segment_shape,
        _cached_key_shape,
        _cached_volatile_value,
        _cached_query_pattern,
    ):
        cache.cache_clear()


def _is_session_parameter(segment: str) -> bool:
    """Any of the segment's ``;`` path parameters names a session (``/p;lang=en;jsessionid=``:
    not only the first)."""
    return any(
        parameter.split("=", 1)[0].strip().lower() in SESSION_KEYS
        for parameter in segment.split(";")[1:]
    )


def _looks_random(token: str) -> bool:
    """Letters and digits interleaved, as in generated ids (``x7Kq9zP2mL4vB8nQ1wE5``), not in
    slugs (``best-spades-2026-review``): count switches between letters and digits."""
    classes = [ch.isdigit() for ch in token if ch.isalnum()]
    switches = sum(a != b for a, b in itertools.pairwise(classes))
    return sum(classes) >= 3 and len(classes) - sum(classes) >= 3 and switches >= 4


class PatternCounter:
    """Counts admissions per pattern across a crawl; the one mutable piece of this module.

    Restore after a restart by passing the counts the store kept. Memory is bounded by
    ``max_patterns_per_host`` patterns per host plus one overflow pattern each.
    """

    def __init__(
        self, policy: TrapPolicy = TrapPolicy(), counts: Mapping[str, int] | None = None
    ) -> None:
        self._policy = policy
        self.default_policy = policy == TrapPolicy()
        """Patterns made by ``pattern_of`` with its default policy are this counter's."""
        self._counts: dict[str, int] = dict(counts or {})
        self._patterns_per_host: Counter[str] = Counter(
            key.split("/", 1)[0] for key in self._counts
        )

    @property
    def policy(self) -> TrapPolicy:
        return self._policy

    def admit(self, url: str) -> TrapVerdict:
        """Count ``url`` against its pattern's cap if there is room; say what happened."""
        pattern = self._bounded(url_pattern(url, self._policy))
        cap = self._policy.cap_for(pattern)
        count = self._counts.get(pattern.key, 0)
        if count >= cap:
            return TrapVerdict(pattern, False, count, cap)
        if count == 0:
            self._patterns_per_host[pattern.host] += 1
        self._counts[pattern.key] = count + 1
        return TrapVerdict(pattern, True, count + 1, cap)

    def admit_pattern(self, key: str, host: str, volatile: bool) -> bool:
        """``admit`` for a pattern computed elsewhere (``pattern_of`` under this counter's
        policy, in a parse worker): the same count, cap and overflow, as dictionary work only.
        True when admitted."""
        counts = self._counts
        count = counts.get(key)
        if count is None:
            count = 0
            if self._patterns_per_host[host] >= self._policy.max_patterns_per_host:
                key, volatile = f"{host}/{{overflow}}", False
                count = counts.get(key, 0)
        policy = self._policy
        if count >= (policy.volatile_pattern_cap if volatile else policy.per_pattern_cap):
            return False
        if count == 0:
            self._patterns_per_host[host] += 1
        counts[key] = count + 1
        return True

    def counts(self) -> dict[str, int]:
        return dict(self._counts)

    def _bounded(self, pattern: UrlPattern) -> UrlPattern:
        known = pattern.key in self._counts
        if known or self._patterns_per_host[pattern.host] < self._policy.max_patterns_per_host:
            return pattern
        return UrlPattern(f"{pattern.host}/{{overflow}}", pattern.host, False)
