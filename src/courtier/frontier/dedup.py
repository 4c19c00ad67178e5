"""A bounded dedup cache in front of the frontier store.

Most links a crawler finds point at URLs it already knows (the navigation of every page of a
site links the same few dozen pages). The store deduplicates on its unique key, but each of
those repeats still costs a write attempt (an index probe inside a write transaction). The
cache remembers the URLs recently offered and drops repeats before they reach the store.

Rules:
- **Bounded.** Two generations of at most ``capacity // 2`` keys each: when the current
  generation fills, it becomes the previous one and the old previous one is dropped. A key
  found in the previous generation is copied forward, so URLs that keep being linked stay,
  while memory never exceeds ``capacity`` keys (an approximate LRU at set speed).
- **Never loses a URL.** The cache only ever *skips a repeat*: a URL it forgot is offered to
  the store again, which ignores it (correct, merely a wasted write). URLs offered in a more
  urgent lane than discovery always pass (the store moves a queued URL to that lane). When a
  write fails, the URLs it carried are forgotten, so the next offer retries them.
- Keys are the 64-bit ``hash`` of the canonical URL, not the URL: 16 bytes of set slot plus a
  small int instead of the whole string. Python salts string hashes per process, so nobody
  can craft collisions; the chance that a new URL is wrongly taken for a known one is about
  ``capacity / 2**64`` per offer.
- Counters say what the cache saved: ``offered`` URLs, ``suppressed`` repeats, ``passed`` to
  the store, and (through ``ingest``) rows really ``inserted``. Write amplification is writes
  attempted per new row: ``offered / inserted`` without the cache, ``passed / inserted`` with
  it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from courtier.frontier.base import (
    FrontierStore,
    HorizonLink,
    HostEdge,
    Ingested,
    NewUrl,
    Outcome,
    UrlLane,
)


@dataclass(frozen=True, slots=True)
class DedupStats:
    capacity: int
    size: int
    offered: int
    suppressed: int
    passed: int
    inserted: int
    rotations: int

    @property
    def writes_saved(self) -> float:
        """The share of offered URLs that never reached the store."""
        return self.suppressed / self.offered if self.offered else 0.0

    @property
    def amplification_without_cache(self) -> float | None:
        """Write attempts per inserted row had every offer reached the store."""
        return self.offered / self.inserted if self.inserted else None

    @property
    def amplification_with_cache(self) -> float | None:
        """Write attempts per inserted row with the cache in front."""
        return self.passed / self.inserted if self.inserted else None

    def as_dict(self) -> dict[str, float | int | None]:
        return {
            "capacity": self.capacity,
            "size": self.size,
            "offered": self.offered,
            "suppressed": self.suppressed,
            "passed": self.passed,
            "inserted": self.inserted,
            "rotations": self.rotations,
            "writes_saved": self.writes_saved,
            "amplification_without_cache": self.amplification_without_cache,
            "amplification_with_cache": self.amplification_with_cache,
        }


class DedupCache:
    """The two-generation set of recently seen canonical URLs (see the module rules)."""

    def __init__(self, capacity: int) -> None:
        if capacity < 2:
            raise ValueError(f"capacity must be at least 2, got {capacity}")
        self.capacity = capacity
        self._generation = capacity // 2
        self._current: set[int] = set()
        self._previous: set[int] = set()
        self.rotations = 0

    def __len__(self) -> int:
        return len(self._current) + len(self._previous)

    def __contains__(self, canonical: str) -> bool:
        key = hash(canonical)
        return key in self._current or key in self._previous

    def first_sighting(self, canonical: str) -> bool:
        """Remember ``canonical``; True if it was not remembered already."""
        key = hash(canonical)
        current = self._current
        if key in current:
            return False
        seen = key in self._previous
        current.add(key)  # a repeat from the previous generation is copied forward
        if len(current) >= self._generation:
            self._previous, self._current = current, set()
            self.rotations += 1
        return not seen

    def forget(self, canonicals: Iterable[str]) -> None:
        for canonical in canonicals:
            key = hash(canonical)
            self._current.discard(key)
            self._previous.discard(key)

    def clear(self) -> None:
        self._current.clear()
        self._previous.clear()


class DedupingWriter:
    """The store's write path with a ``DedupCache`` in front and the counters of what it saved.

    Drop-in for the two write methods of ``FrontierStore``; reads go to ``store`` directly.
    """

    def __init__(self, store: FrontierStore, capacity: int = 2_000_000) -> None:
        self.store = store
        self.cache = DedupCache(capacity)
        self._offered = 0
        self._suppressed = 0
        self._inserted = 0

    def filter(self, new_urls: Iterable[NewUrl]) -> list[NewUrl]:
        """The URLs worth writing: first sightings, and every offer in an urgent lane."""
        fresh: list[NewUrl] = []
        offered = 0
        first_sighting = self.cache.first_sighting
        for url in new_urls:
            offered += 1
            if first_sighting(url.canonical) or url.lane < UrlLane.DISCOVERY:
                fresh.append(url)
        self._offered += offered
        self._suppressed += offered - len(fresh)
        return fresh

    def ingest(self, new_urls: Sequence[NewUrl], now: float) -> Ingested:
        fresh = self.filter(new_urls)
        try:
            result = self.store.ingest(fresh, now)
        except BaseException:
            self.cache.forget(url.canonical for url in fresh)
            raise
        self._inserted += result.inserted
        return Ingested(len(new_urls), result.inserted, result.sites)

    def write_batch(
        self,
        new_urls: Sequence[NewUrl],
        outcomes: Sequence[Outcome],
        horizon: Sequence[HorizonLink],
        now: float,
        *,
        host_edges: Sequence[HostEdge] = (),
    ) -> list[str]:
        fresh = self.filter(new_urls)
        try:
            return self.store.write_batch(fresh, outcomes, horizon, now, host_edges=host_edges)
        except BaseException:
            self.cache.forget(url.canonical for url in fresh)
            raise

    def stats(self) -> DedupStats:
        return DedupStats(
            capacity=self.cache.capacity,
            size=len(self.cache),
            offered=self._offered,
            suppressed=self._suppressed,
            passed=self._offered - self._suppressed,
            inserted=self._inserted,
            rotations=self.cache.rotations,
        )
