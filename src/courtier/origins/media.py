"""Media sources: what an image response says about the cache in front of it.

Rules:
- A cache-status verdict comes from the headers caches add, most explicit first:
  ``Cache-Status`` (RFC 9211), ``CF-Cache-Status``, ``X-Cache-Status``, ``X-Cache``,
  ``Akamai-Cache-Status``, ``X-Vercel-Cache``, ``X-Proxy-Cache``, then ``X-Varnish`` (two ids:
  a hit), then ``Age`` (over zero: the object was already in the cache). A response that
  reached the origin to be answered (``MISS``, ``EXPIRED``, ``BYPASS``, ``DYNAMIC``,
  ``REVALIDATED``, CloudFront's ``RefreshHit``) is a miss: the origin did work for it. Several
  caches in one header (a shield and an edge) make a hit when any of them hit, since the
  origin was then not asked. Nothing known: ``UNKNOWN``.
- A cache's miss expectation per customer is learned from its verdicts: a miss is expected
  (and booked against the customer's origin before the request) until enough recent
  verdicts show a high hit ratio. A miss that was not expected is charged after the fact.
- An image service is judged per customer (its key): limited as a CDN while the customer's
  answers carry cache verdicts (or before they have shown anything), as an object store once
  ``store_after`` answers in a row carried none, and as a CDN again when verdicts come back:
  the mode follows the latest evidence, it never sticks.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final


class CacheVerdict(StrEnum):
    HIT = "hit"
    MISS = "miss"
    UNKNOWN = "unknown"


class ServiceBehaviour(StrEnum):
    """How an image service behaves, as far as its responses have shown."""

    CACHE = "cdn-like"
    STORE = "store-like"
    UNKNOWN = "unknown"


# Header names in the order they are trusted (lowercase).
_STATUS_HEADERS: Final = (
    "cf-cache-status",
    "x-cache-status",
    "x-cache",
    "akamai-cache-status",
    "x-vercel-cache",
    "x-proxy-cache",
)
_HIT_WORDS: Final = frozenset({"hit", "stale", "updating", "tcp_hit", "tcp_mem_hit", "prerender"})
_MISS_WORDS: Final = frozenset(
    {
        "miss",
        "expired",
        "bypass",
        "dynamic",
        "revalidated",
        "refreshhit",
        "tcp_miss",
        "tcp_refresh_miss",
        "tcp_refresh_hit",
        "pass",
    }
)
_WORD = re.compile(r"[a-z_]+")


def _word_verdict(value: str) -> CacheVerdict:
    """One cache's status word (``HIT``, ``Miss from cloudfront``, ``TCP_MISS``...)."""
    words = _WORD.findall(value.lower())
    if not words:
        return CacheVerdict.UNKNOWN
    first = words[0]
    if first in _HIT_WORDS:
        return CacheVerdict.HIT
    if first in _MISS_WORDS:
        return CacheVerdict.MISS
    return CacheVerdict.UNKNOWN


def _combine(verdicts: Iterable[CacheVerdict]) -> CacheVerdict:
    """Several caches in a row: any hit kept the origin out of it."""
    seen = set(verdicts)
    if CacheVerdict.HIT in seen:
        return CacheVerdict.HIT
    if CacheVerdict.MISS in seen:
        return CacheVerdict.MISS
    return CacheVerdict.UNKNOWN


def _rfc9211_verdict(value: str) -> CacheVerdict:
    """``Cache-Status: Edge; hit, Shield; fwd=uri-miss`` (RFC 9211)."""
    verdicts = []
    for member in value.split(","):
        params = [p.strip().lower() for p in member.split(";")[1:]]
        if "hit" in params:
            verdicts.append(CacheVerdict.HIT)
        elif any(p.startswith("fwd=") for p in params):
            verdicts.append(CacheVerdict.MISS)
    return _combine(verdicts)


def cache_verdict(headers: Iterable[tuple[str, str]]) -> CacheVerdict:
    """Hit, miss or unknown, from a response's headers (any case, any order)."""
    by_name: dict[str, list[str]] = {}
    for name, value in headers:
        by_name.setdefault(name.lower(), []).append(value)
    if "cache-status" in by_name:
        verdict = _combine(_rfc9211_verdict(v) for v in by_name["cache-status"])
        if verdict is not CacheVerdict.UNKNOWN:
            return verdict
    for name in _STATUS_HEADERS:
        values = by_name.get(name)
        if values:
            verdict = _combine(_word_verdict(part) for v in values for part in v.split(","))
            if verdict is not CacheVerdict.UNKNOWN:
                return verdict
    varnish = by_name.get("x-varnish")
    if varnish:
        ids = varnish[-1].split()
        if all(i.isdigit() for i in ids) and ids:
            return CacheVerdict.HIT if len(ids) >= 2 else CacheVerdict.MISS
    age = by_name.get("age")
    if age:
        try:
            if int(age[-1].strip()) > 0:
                return CacheVerdict.HIT
        except ValueError:
            pass
    return CacheVerdict.UNKNOWN


@dataclass(slots=True)
class CacheObservations:
    """Recent cache verdicts for one cache and customer (or one image service)."""

    window: int = 32
    min_known: int = 8
    """Verdicts needed before a miss is no longer expected."""
    expect_miss_above: float = 0.1
    """A miss share above this keeps misses expected."""
    store_after: int = 5
    """Responses in a row without any verdict that make an image service store-like."""
    recent: deque[CacheVerdict] = field(default_factory=deque)
    verdicts_seen: int = 0
    silent_seen: int = 0
    silent_run: int = 0
    """Latest answers in a row that carried no verdict."""

    def record(self, verdict: CacheVerdict) -> None:
        if verdict is CacheVerdict.UNKNOWN:
            self.silent_seen += 1
            self.silent_run += 1
            return
        self.verdicts_seen += 1
        self.silent_run = 0
        self.recent.append(verdict)
        while len(self.recent) > self.window:
            self.recent.popleft()

    @property
    def miss_expected(self) -> bool:
        if len(self.recent) < self.min_known:
            return True
        misses = sum(1 for v in self.recent if v is CacheVerdict.MISS)
        return misses / len(self.recent) > self.expect_miss_above

    @property
    def behaviour(self) -> ServiceBehaviour:
        if self.silent_run >= self.store_after:
            return ServiceBehaviour.STORE
        if self.verdicts_seen:
            return ServiceBehaviour.CACHE
        return ServiceBehaviour.UNKNOWN
