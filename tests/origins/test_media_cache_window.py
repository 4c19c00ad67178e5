"""A cache's hit ratio is judged over its latest verdicts, and any cache of several that hit
kept the origin out of it, whichever order the header lists them in."""

from __future__ import annotations

from courtier.origins.media import CacheObservations, CacheVerdict, cache_verdict

HIT, MISS = CacheVerdict.HIT, CacheVerdict.MISS


def test_an_edge_hit_listed_before_the_origin_miss_is_a_hit() -> None:
    assert cache_verdict([("Cache-Status", "Edge; hit, Origin; fwd=uri-miss")]) is HIT
    assert cache_verdict([("Cache-Status", "Edge; fwd=miss, Origin; fwd=uri-miss")]) is MISS


def test_the_hit_ratio_is_judged_over_a_full_window_of_verdicts() -> None:
    seen = CacheObservations(window=4, min_known=4)
    for _ in range(4):
        seen.record(HIT)
    assert len(seen.recent) == 4
    assert not seen.miss_expected  # a full window of hits is enough to trust the cache


def test_only_the_latest_window_of_verdicts_counts() -> None:
    seen = CacheObservations(window=4, min_known=4)
    seen.record(MISS)
    for _ in range(3):
        seen.record(HIT)
    assert seen.miss_expected  # one miss in four: above 10 %
    seen.record(HIT)
    assert list(seen.recent) == [HIT] * 4
    assert not seen.miss_expected  # the miss has left the window


def test_caches_listed_without_spaces_are_still_several_caches() -> None:
    assert cache_verdict([("X-Cache", "MISS,HIT")]) is HIT


def test_x_varnish_ids_that_are_not_numbers_say_nothing() -> None:
    assert cache_verdict([("X-Varnish", "abc def")]) is CacheVerdict.UNKNOWN


def test_an_object_one_second_old_came_from_the_cache() -> None:
    assert cache_verdict([("Age", "1")]) is HIT
