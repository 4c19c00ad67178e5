from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from courtier.frontier.base import FrontierError, HostEdge, Ingested, NewUrl, UrlLane
from courtier.frontier.dedup import DedupCache, DedupingWriter
from courtier.frontier.sqlite_store import SqliteFrontier

T0 = 1_800_000_000.0


def _url(path: str, lane: UrlLane = UrlLane.DISCOVERY) -> NewUrl:
    return NewUrl(f"http://a.test{path}", f"http://a.test{path}", "a.test", 1, 0, lane)


def test_a_repeat_is_caught_and_a_first_sighting_is_not():
    cache = DedupCache(100)
    assert cache.first_sighting("http://a.test/")
    assert not cache.first_sighting("http://a.test/")
    assert "http://a.test/" in cache and "http://a.test/x" not in cache


def test_memory_stays_within_capacity_however_many_urls_pass():
    cache = DedupCache(1000)
    for i in range(50_000):
        cache.first_sighting(f"http://a.test/{i}")
        assert len(cache) <= 1000
    assert cache.rotations == 100


def test_urls_that_keep_being_linked_survive_rotations_and_one_offs_are_forgotten():
    cache = DedupCache(100)
    cache.first_sighting("http://a.test/nav")
    for i in range(1000):
        cache.first_sighting(f"http://a.test/{i}")
        assert not cache.first_sighting("http://a.test/nav")
    assert "http://a.test/0" not in cache
    assert cache.first_sighting("http://a.test/0")  # forgotten: offered again, not lost


def test_a_tiny_capacity_is_refused():
    with pytest.raises(ValueError, match=r"^capacity must be at least 2, got 1$"):
        DedupCache(1)


def test_the_smallest_and_odd_capacities_hold_their_bound():
    for capacity in (2, 5, 7):
        cache = DedupCache(capacity)
        for i in range(120):
            cache.first_sighting(f"http://a.test/{i}")
            assert len(cache) <= capacity
        assert cache.rotations == 120 // (capacity // 2)  # generations of capacity // 2
        assert not cache.first_sighting("http://a.test/119")


def test_a_forgotten_url_leaves_the_previous_generation_too():
    cache = DedupCache(4)  # generations of two
    for path in ("/a", "/b", "/c"):
        cache.first_sighting(f"http://a.test{path}")
    assert cache.rotations == 1  # /a and /b are the previous generation now
    cache.forget(["http://a.test/a", "http://a.test/c"])
    assert "http://a.test/a" not in cache and "http://a.test/c" not in cache
    assert "http://a.test/b" in cache


def test_the_writer_counts_the_write_amplification_it_saves(tmp_path: Path):
    store = SqliteFrontier(tmp_path / "f.sqlite3")
    writer = DedupingWriter(store, capacity=1000)
    links = [_url(f"/{i % 10}") for i in range(100)]  # ten pages, each linked ten times
    result = writer.ingest(links, T0)
    assert (result.offered, result.inserted, result.sites) == (100, 10, ("a.test",))
    writer.ingest(links[:10], T0)
    stats = writer.stats()
    assert (stats.offered, stats.suppressed, stats.passed, stats.inserted) == (110, 100, 10, 10)
    assert stats.amplification_without_cache == pytest.approx(11.0)
    assert stats.amplification_with_cache == pytest.approx(1.0)
    assert stats.writes_saved == pytest.approx(100 / 110)
    assert stats.as_dict() == {
        "capacity": 1000,
        "size": 10,
        "offered": 110,
        "suppressed": 100,
        "passed": 10,
        "inserted": 10,
        "rotations": 0,
        "writes_saved": pytest.approx(100 / 110),
        "amplification_without_cache": pytest.approx(11.0),
        "amplification_with_cache": pytest.approx(1.0),
    }
    assert store.counts()["queued"] == 10


def test_an_offer_in_an_urgent_lane_always_reaches_the_store(tmp_path: Path):
    store = SqliteFrontier(tmp_path / "f.sqlite3")
    writer = DedupingWriter(store)
    writer.write_batch([_url("/story")], [], [], T0)
    writer.write_batch([_url("/story", UrlLane.FRESHLANE)], [], [], T0 + 1)
    schedule = store.schedule_of("http://a.test/story")
    assert schedule is not None and schedule.lane is UrlLane.FRESHLANE


class _FailingStore(SqliteFrontier):
    def ingest(self, new_urls: Sequence[NewUrl], now: float) -> Ingested:
        raise FrontierError("disk full")


def test_urls_of_a_failed_write_are_offered_again_not_lost(tmp_path: Path):
    failing = DedupingWriter(_FailingStore(tmp_path / "f.sqlite3"))
    with pytest.raises(FrontierError):
        failing.ingest([_url("/a")], T0)
    assert "http://a.test/a" not in failing.cache
    store = SqliteFrontier(tmp_path / "g.sqlite3")
    writer = DedupingWriter(store)
    with pytest.raises(FrontierError):
        writer.write_batch([_url("/b")], [], [], T0, host_edges=[HostEdge("a", "b", -1)])
    assert writer.write_batch([_url("/b")], [], [], T0) == ["a.test"]
