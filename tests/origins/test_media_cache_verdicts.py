"""Cache verdicts from response headers, and what a cache's or image service's answers teach."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from courtier.origins.media import (
    CacheObservations,
    CacheVerdict,
    ServiceBehaviour,
    cache_verdict,
)

HIT, MISS, UNKNOWN = CacheVerdict.HIT, CacheVerdict.MISS, CacheVerdict.UNKNOWN


@pytest.mark.parametrize(
    ("headers", "verdict"),
    [
        ([("X-Cache", "HIT")], HIT),
        ([("X-Cache", "MISS")], MISS),
        ([("x-cache", "Hit from cloudfront")], HIT),
        ([("X-Cache", "Miss from cloudfront")], MISS),
        ([("X-Cache", "RefreshHit from cloudfront")], MISS),  # revalidated at the origin
        ([("X-Cache", "Error from cloudfront")], UNKNOWN),
        ([("X-Cache", "MISS, HIT")], HIT),  # Fastly shield missed, edge hit: origin untouched
        ([("X-Cache", "MISS, MISS")], MISS),
        ([("X-Cache", "TCP_MEM_HIT")], HIT),
        ([("X-Cache", "TCP_MISS from a23-1.deploy.akamaitechnologies.com")], MISS),
        ([("CF-Cache-Status", "HIT")], HIT),
        ([("CF-Cache-Status", "EXPIRED")], MISS),
        ([("CF-Cache-Status", "DYNAMIC")], MISS),
        ([("CF-Cache-Status", "BYPASS")], MISS),
        ([("CF-Cache-Status", "REVALIDATED")], MISS),
        ([("CF-Cache-Status", "STALE")], HIT),
        ([("CF-Cache-Status", "UPDATING")], HIT),
        ([("X-Cache-Status", "HIT")], HIT),
        ([("X-Cache-Status", "MISS")], MISS),
        ([("Akamai-Cache-Status", "Miss from child, Hit from parent")], HIT),
        ([("X-Vercel-Cache", "MISS")], MISS),
        ([("Cache-Status", "ExampleCache; hit")], HIT),
        ([("Cache-Status", "OriginCache; fwd=uri-miss")], MISS),
        ([("Cache-Status", "Origin; fwd=miss, Edge; hit; ttl=100")], HIT),
        ([("Cache-Status", "Edge; fwd=stale; fwd-status=304")], MISS),
        ([("X-Varnish", "123 456")], HIT),
        ([("X-Varnish", "123")], MISS),
        ([("Age", "120")], HIT),
        ([("Age", "0")], UNKNOWN),
        ([("Age", "soon")], UNKNOWN),
        ([], UNKNOWN),
        ([("Server", "nginx"), ("Content-Type", "image/jpeg")], UNKNOWN),
        # The most explicit header wins over Age (an old object revalidated at the origin).
        ([("CF-Cache-Status", "EXPIRED"), ("Age", "3600")], MISS),
        ([("X-Cache", "HIT"), ("Age", "0")], HIT),
    ],
)
def test_cache_verdict(headers: list[tuple[str, str]], verdict: CacheVerdict) -> None:
    assert cache_verdict(headers) is verdict


@given(st.lists(st.tuples(st.text(max_size=30), st.text(max_size=60)), max_size=8))
def test_any_headers_give_a_verdict_without_raising(headers: list[tuple[str, str]]) -> None:
    assert cache_verdict(headers) in set(CacheVerdict)


def test_a_miss_is_expected_until_enough_hits_are_seen() -> None:
    seen = CacheObservations(min_known=4, window=8)
    assert seen.miss_expected
    for _ in range(3):
        seen.record(HIT)
    assert seen.miss_expected  # three verdicts are not enough to trust a hit ratio
    seen.record(HIT)
    assert not seen.miss_expected
    seen.record(MISS)  # one in five: still above 10 %
    assert seen.miss_expected
    for _ in range(8):
        seen.record(HIT)  # the miss leaves the window
    assert not seen.miss_expected


def test_unknown_verdicts_never_lower_the_miss_expectation() -> None:
    seen = CacheObservations(min_known=2)
    for _ in range(50):
        seen.record(UNKNOWN)
    assert seen.miss_expected


def test_an_image_service_is_a_cache_once_it_shows_one_and_a_store_after_silence() -> None:
    cache = CacheObservations(store_after=3)
    assert cache.behaviour is ServiceBehaviour.UNKNOWN
    cache.record(UNKNOWN)
    cache.record(MISS)
    assert cache.behaviour is ServiceBehaviour.CACHE
    for _ in range(2):
        cache.record(UNKNOWN)
    assert cache.behaviour is ServiceBehaviour.CACHE  # a silent image or two: still a cache
    cache.record(UNKNOWN)
    assert cache.behaviour is ServiceBehaviour.STORE  # the evidence changed: so does the mode
    cache.record(HIT)
    assert cache.behaviour is ServiceBehaviour.CACHE  # and back

    store = CacheObservations(store_after=3)
    for _ in range(2):
        store.record(UNKNOWN)
    assert store.behaviour is ServiceBehaviour.UNKNOWN
    store.record(UNKNOWN)
    assert store.behaviour is ServiceBehaviour.STORE
