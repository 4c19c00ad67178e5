"""The SQLite store's batched statements (JSON arrays unpacked by SQLite) keep every value
exactly and every row-by-row rule: first canonical wins, inlinks count each link."""

from __future__ import annotations

import random
from pathlib import Path

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
