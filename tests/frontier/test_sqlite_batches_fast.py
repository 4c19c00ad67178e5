"""The SQLite store's batched statements (JSON arrays unpacked by SQLite) keep every value
exactly and every row-by-row rule: first canonical wins, inlinks count each link."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from courtier.frontier import sqlite_store
from courtier.frontier.base import HorizonLink, NewUrl, Outcome, UrlStatus
from courtier.frontier.sqlite_store import SqliteFrontier


def test_times_and_unicode_survive_a_batch_bit_for_bit(tmp_path: Path) -> None:
    store = SqliteFrontier(tmp_path / "f.sqlite3")
    rng = random.Random(5)
    urls = [
        NewUrl(f"http://a.test/ü/{i}", f"http://a.test/%C3%BC/{i}", "a.test", 1) for i in range(50)
    ]
    store.write_batch(urls, [], [], 1.0)
    leased = store.lease_due(50, ["a.test"], 2.0)["a.test"]
    times = {u.id: rng.uniform(1e9, 2e9) for u in leased}
    outcomes = [Outcome(i, UrlStatus.DONE, 200, t, "fp", etag='"é"') for i, t in times.items()]
    store.write_batch([], outcomes, [], 3.0)
    for url in urls:
        schedule = store.schedule_of(url.canonical)
        assert schedule is not None and schedule.etag == '"é"'
        assert schedule.fetched_at == times[schedule.id]
        assert schedule.next_due == times[schedule.id] + schedule.refresh_interval  # type: ignore[operator]
    store.close()


def test_first_of_two_equal_canonicals_wins_and_each_horizon_link_counts(tmp_path: Path) -> None:
    store = SqliteFrontier(tmp_path / "f.sqlite3")
    first = NewUrl("http://a.test/x", "http://a.test/x?first", "a.test", 1)
    second = NewUrl("http://a.test/x", "http://a.test/x?second", "a.test", 2)
    links = [HorizonLink("http://h.test/", "h.test", "a.test")] * 3
    fed = store.write_batch([first, second], [], links, 1.0)
    assert fed == ["a.test"]
    (leased,) = store.lease_due(5, ["a.test"], 2.0)["a.test"]
    assert (leased.fetch_url, leased.depth) == ("http://a.test/x?first", 1)
    store.write_batch([], [], links[:1], 3.0)
    assert store.host_links()[0].links == 4
    assert store.counts()["horizon_urls"] == 1
    store.close()


def _bytes_written() -> int:
    """What this process has handed to write calls so far (Linux)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    raise AssertionError("no wchar in /proc/self/io")


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="needs Linux's /proc/self/io")
@pytest.mark.parametrize("in_memory_rows", [sqlite_store.JOURNAL_IN_MEMORY_ROWS, 0])
def test_a_batch_writes_the_pages_it_changes_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_memory_rows: int
) -> None:
    """A crawl-sized batch (new URLs over many sites, outcomes of leased ones) on a store with
    rows on every page: its pages go to the write-ahead log and nowhere else. Past the bound
    (here 0 rows), SQLite's statement journal spills them to a temporary file as well."""
    monkeypatch.setattr(sqlite_store, "JOURNAL_IN_MEMORY_ROWS", in_memory_rows)
    store = SqliteFrontier(tmp_path / "f.sqlite3")
    store._db.execute("PRAGMA wal_autocheckpoint=0")  # the log only grows: its size is a count
    rng = random.Random(8)
    sites = [f"s{n}.test" for n in range(300)]

    def new(count: int, first: int) -> list[NewUrl]:
        return [
            NewUrl(f"http://{s}/p/{i}", f"http://{s}/p/{i}", s, 1)
            for i in range(first, first + count)
            for s in [rng.choice(sites)]
        ]

    store.write_batch(new(6000, 0), [], [], 1.0)
    leased = [u for urls in store.lease_due(4, sites, 2.0).values() for u in urls]
    outcomes = [Outcome(u.id, UrlStatus.DONE, 200, 3.0, "fp") for u in leased]
    log = tmp_path / "f.sqlite3-wal"
    log_before, written_before = log.stat().st_size, _bytes_written()
    store.write_batch(new(2000, 6000), outcomes, [], 3.0)
    logged = log.stat().st_size - log_before
    written = _bytes_written() - written_before
    assert logged > 100 * 4096  # the batch changed many pages
    if in_memory_rows:
        assert written < 1.1 * logged
    else:
        assert written > 1.5 * logged  # the measure sees a second copy when there is one
    store.close()


def test_the_log_holds_many_batches_before_the_database_file_is_written(tmp_path: Path) -> None:
    """Batches that change more pages than SQLite's default checkpoint (1,000) leave the
    database file untouched until ``WAL_CHECKPOINT_PAGES``: a page rewritten batch after
    batch is copied into it once, not once a batch."""
    store = SqliteFrontier(tmp_path / "f.sqlite3")
    sites = [f"s{n}.test" for n in range(300)]
    store.write_batch([NewUrl(f"http://{s}/", f"http://{s}/", s, 0) for s in sites], [], [], 1.0)
    store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    database = tmp_path / "f.sqlite3"
    before = database.read_bytes()
    log = tmp_path / "f.sqlite3-wal"
    first = 0
    while log.stat().st_size < 1500 * 4096:  # past the default's checkpoint
        store.write_batch(
            [
                NewUrl(f"http://{s}/p/{first + i}", f"http://{s}/p/{first + i}", s, 1)
                for i, s in enumerate(sites * 5)
            ],
            [],
            [],
            2.0,
        )
        first += 1500
    assert log.stat().st_size < sqlite_store.WAL_CHECKPOINT_PAGES * 4096
    assert database.read_bytes() == before
    store.close()
