"""One behavioural suite for every frontier store: SQLite and PostgreSQL.

PostgreSQL runs against a real server started for the session (tests/pg.py); each test gets
its own schema. ``Backend.open`` opens another store on the same data, as a restarted crawl
or a second worker would.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from courtier.frontier.base import (
    FrontierError,
    FrontierStore,
    HorizonLink,
    HostEdge,
    LeasedUrl,
    NewUrl,
    Outcome,
    SiteState,
    StoredRobots,
    UrlLane,
    UrlStatus,
)
from courtier.frontier.controls import ControlAction, SiteControl
from courtier.frontier.fresh import FreshSource, FreshState
from courtier.frontier.postgres_store import PostgresFrontier
from courtier.frontier.refresh import DAY, HOUR, Importance, RefreshPolicy
from courtier.frontier.sqlite_store import SCHEMA_VERSION, SqliteFrontier
from courtier.origins.cluster import Assignment, OriginChange
from courtier.origins.evidence import Evidence, Kind
from courtier.origins.store import OriginStore
from courtier.politeness.limiter.base import SHARD_LEASES, Fence

POLICY = RefreshPolicy()
T0 = 1_800_000_000.0


def _url(
    path: str, site: str = "a.test", depth: int = 0, lane: UrlLane = UrlLane.DISCOVERY
) -> NewUrl:
    return NewUrl(f"http://{site}{path}", f"http://{site}{path}", site, depth, 0, lane)


Opener = Callable[[], FrontierStore]


@pytest.fixture(params=["sqlite", "postgres"])
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    opened: list[FrontierStore] = []
    if request.param == "sqlite":
        path = tmp_path / "frontier.sqlite3"

        def opener() -> FrontierStore:
            opened.append(SqliteFrontier(path))
            return opened[-1]

        yield opener
        for store in opened:
            store.close()
        return
    dsn: str = request.getfixturevalue("postgres_dsn")
    schema = f"t_{uuid.uuid4().hex[:12]}"

    def pg_opener() -> FrontierStore:
        opened.append(PostgresFrontier(dsn, schema=schema))
        return opened[-1]

    yield pg_opener
    for store in opened:
        store.close()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE".encode())


@pytest.fixture
def store(open_store: Opener) -> FrontierStore:
    return open_store()


def _fetch(store: FrontierStore, site: str, now: float, limit: int = 100) -> list[int]:
    return [u.id for u in store.lease_due(limit, [site], now).get(site, [])]


# -- the behaviour the engine already relies on -------------------------------------------


def test_lease_hands_out_shallowest_first_and_never_twice(store: FrontierStore):
    store.write_batch(
        [_url("/deep", depth=3), _url("/", depth=0), _url("/mid", depth=1)], [], [], T0
    )
    first = store.lease("a.test", 2)
    assert [u.fetch_url for u in first] == ["http://a.test/", "http://a.test/mid"]
    assert [u.fetch_url for u in store.lease("a.test", 5)] == ["http://a.test/deep"]
    assert store.lease("a.test", 5) == []
    assert store.due(10, ["a.test"], T0 + 1) == {}


def test_duplicate_urls_are_written_once_and_report_which_sites_got_new_work(
    store: FrontierStore,
):
    assert store.write_batch([_url("/"), _url("/", site="b.test"), _url("/")], [], [], T0) == [
        "a.test",
        "b.test",
    ]
    assert store.write_batch([_url("/"), _url("/x", site="b.test")], [], [], T0) == ["b.test"]
    ingested = store.ingest([_url("/"), _url("/y"), _url("/y")], T0)
    assert (ingested.offered, ingested.inserted, ingested.sites) == (3, 1, ("a.test",))
    assert store.counts()["queued"] == 4
    assert store.sites_with_queued() != []


def test_released_leases_resume_after_a_stop(open_store: Opener):
    store = open_store()
    store.write_batch([_url("/"), _url("/x")], [], [], T0)
    leased = store.lease("a.test", 10, T0)
    store.write_batch([], [Outcome(leased[0].id, UrlStatus.DONE, 200, T0 + 1)], [], T0 + 1)
    store.close()
    store = open_store()
    assert store.release_leases() == 1
    assert [u.fetch_url for u in store.lease("a.test", 10)] == ["http://a.test/x"]


def test_horizon_links_are_recorded_with_host_graph_counts(store: FrontierStore):
    store.add_sites(["a.test"], SiteState.SEED, T0)
    links = [
        HorizonLink("http://out.test/", "out.test", "a.test"),
        HorizonLink("http://out.test/", "out.test", "a.test"),
        HorizonLink("http://other.test/", "other.test", "a.test"),
    ]
    store.write_batch([], [], links, T0)
    assert store.horizon_sites() == [("out.test", 2), ("other.test", 1)]
    assert set(store.sites_in_state(SiteState.HORIZON)) == {"out.test", "other.test"}
    assert store.counts()["horizon_urls"] == 2
    # A horizon site that becomes a seed is promoted; a seed never falls back to horizon.
    store.add_sites(["out.test"], SiteState.SEED, T0 + 1)
    store.write_batch([], [], [HorizonLink("http://a.test/", "a.test", "x.test")], T0 + 1)
    assert set(store.sites_in_state(SiteState.SEED)) == {"a.test", "out.test"}
    store.set_site_state("a.test", SiteState.SUSPENDED)
    assert store.site_states()["a.test"] == SiteState.SUSPENDED


def test_seed_to_seed_links_join_horizon_links_in_the_host_graph(store: FrontierStore):
    store.write_batch(
        [],
        [],
        [HorizonLink("http://out.test/", "out.test", "a.test")],
        T0,
        host_edges=[HostEdge("a.test", "b.test", 3), HostEdge("a.test", "b.test", 2)],
    )
    store.write_batch([], [], [], T0, host_edges=[HostEdge("b.test", "a.test", 1)])
    assert store.host_links() == [
        HostEdge("a.test", "b.test", 5),
        HostEdge("a.test", "out.test", 1),
        HostEdge("b.test", "a.test", 1),
    ]


def test_a_failed_batch_leaves_nothing_half_written(store: FrontierStore):
    with pytest.raises(FrontierError):
        store.write_batch([_url("/")], [], [], T0, host_edges=[HostEdge("a.test", "b.test", -1)])
    assert store.counts()["queued"] == 0
    assert store.write_batch([_url("/")], [], [], T0) == ["a.test"]


# -- the due query -------------------------------------------------------------------------


def test_due_groups_by_host_and_caps_each_host_at_the_batch_size(store: FrontierStore):
    store.write_batch([_url(f"/{i}") for i in range(5)], [], [], T0)
    store.write_batch([_url(f"/{i}", site="b.test") for i in range(2)], [], [], T0 + 5)
    due = store.due(3, ["a.test", "b.test", "c.test"], T0 + 10)
    assert {host: len(urls) for host, urls in due.items()} == {"a.test": 3, "b.test": 2}
    assert [u.canonical for u in due["a.test"]] == [f"http://a.test/{i}" for i in range(3)]
    # Not yet due: b.test's URLs were found after the query time.
    assert set(store.due(3, ["a.test", "b.test"], T0 + 1)) == {"a.test"}
    assert store.due(0, ["a.test"], T0 + 10) == {}
    with pytest.raises(FrontierError):
        store.due(-1, ["a.test"], T0)


def test_lanes_are_served_fastlane_freshlane_refresh_then_discovery(store: FrontierStore):
    store.write_batch([_url("/fetched")], [], [], T0)
    store.write_batch([_url("/discovered")], [], [], T0 + 1)
    fetched = store.lease_due(1, ["a.test"], T0)["a.test"][0]
    store.record_fetch([Outcome(fetched.id, UrlStatus.DONE, 200, T0, "fp")])
    store.set_freshlane([_url("/fresh")], 60.0, T0)
    store.recrawl([_url("/now")], T0)
    later = T0 + POLICY.ordinary.initial + 1
    due = store.due(10, ["a.test"], later)["a.test"]
    assert [(u.canonical.rsplit("/", 1)[1], u.lane) for u in due] == [
        ("now", UrlLane.FASTLANE),
        ("fresh", UrlLane.FRESHLANE),
        ("fetched", UrlLane.REFRESH),
        ("discovered", UrlLane.DISCOVERY),
    ]
    leased = store.lease_due(2, ["a.test"], later)["a.test"]
    assert [u.lane for u in leased] == [UrlLane.FASTLANE, UrlLane.FRESHLANE]


def test_a_priority_moves_new_urls_ahead_of_lower_ones_found_since_within_their_lane(
    store: FrontierStore,
):
    """A new URL of priority p is due p days before it was written (``base.lead_of``)."""
    store.write_batch([_url(f"/old{i}") for i in range(2)], [], [], T0)
    urgent = [dataclasses.replace(_url(f"/p3-{i}"), priority=3) for i in range(2)]
    store.write_batch(
        [_url("/new"), dataclasses.replace(_url("/p1"), priority=1), *urgent], [], [], T0 + 60
    )
    store.write_batch([dataclasses.replace(_url("/old0"), priority=100)], [], [], T0 + 61)
    due = store.due(10, ["a.test"], T0 + 120)["a.test"]
    assert [u.canonical.rsplit("/", 1)[1] for u in due] == [
        "p3-0", "p3-1", "p1", "old0", "old1", "new",
    ]  # fmt: skip
    assert {u.lane for u in due} == {UrlLane.DISCOVERY}  # a known URL kept its place
    assert due[0].next_due == T0 + 60 - 3 * 86_400 and due[-1].next_due == T0 + 60
    # Older work is not held back for ever: a day and more before, it goes first.
    store.write_batch(
        [_url("/later"), dataclasses.replace(_url("/p1b"), priority=1)], [], [], T0 + 2 * 86_400
    )
    leased = store.lease_due(10, ["a.test"], T0 + 2 * 86_400)["a.test"]
    assert [u.fetch_url.rsplit("/", 1)[1] for u in leased] == [
        "p3-0", "p3-1", "p1", "old0", "old1", "new", "p1b", "later",
    ]  # fmt: skip


def test_leased_urls_leave_the_due_set_and_two_workers_never_share_one(open_store: Opener):
    first, second = open_store(), open_store()
    first.write_batch([_url(f"/{i}") for i in range(6)], [], [], T0)
    a = _fetch(first, "a.test", T0, limit=4)
    b = _fetch(second, "a.test", T0, limit=4)
    assert len(a) == 4 and len(b) == 2 and not set(a) & set(b)
    assert first.due(10, ["a.test"], T0) == {}
    assert first.counts()["leased"] == 6


def test_stale_leases_return_while_fresh_ones_stay(store: FrontierStore):
    store.write_batch([_url("/old"), _url("/new")], [], [], T0)
    store.lease_due(1, ["a.test"], T0)
    store.lease_due(1, ["a.test"], T0 + 100)
    assert store.release_leases(leased_before=T0 + 50) == 1
    due = store.due(10, ["a.test"], T0 + 200)["a.test"]
    assert [u.canonical for u in due] == ["http://a.test/old"]
    assert due[0].next_due == T0  # due since it was leased, ahead of newer work


# -- refresh scheduling ------------------------------------------------------------------


def test_unchanged_content_backs_off_and_a_change_comes_back_sooner(store: FrontierStore):
    store.write_batch([_url("/")], [], [], T0)
    now = T0
    intervals = []
    for fingerprint in ["x", "x", "x", "y"]:
        (url_id,) = _fetch(store, "a.test", now + 1)
        store.record_fetch([Outcome(url_id, UrlStatus.DONE, 200, now + 1, fingerprint)])
        schedule = store.schedule_of("http://a.test/")
        assert schedule is not None
        intervals.append(schedule.refresh_interval)
        assert schedule.next_due == pytest.approx(now + 1 + schedule.refresh_interval)
        assert schedule.lane is UrlLane.REFRESH and schedule.status is UrlStatus.DONE
        now = schedule.next_due
    initial = POLICY.ordinary.initial
    assert intervals == pytest.approx(
        [
            initial,
            initial * POLICY.grow,
            initial * POLICY.grow**2,
            initial * POLICY.grow**2 * POLICY.shrink,
        ]
    )
    assert store.due(10, ["a.test"], now - 1) == {}
    assert set(store.due(10, ["a.test"], now)) == {"a.test"}


def test_failures_and_refusals_never_fall_due_unless_the_page_was_fetched_before(
    store: FrontierStore,
):
    store.write_batch([_url("/refused"), _url("/failed"), _url("/known")], [], [], T0)
    ids = {u.fetch_url.rsplit("/", 1)[1]: u.id for u in store.lease("a.test", 10, T0)}
    store.record_fetch(
        [
            Outcome(ids["refused"], UrlStatus.REFUSED, None, T0),
            Outcome(ids["failed"], UrlStatus.FAILED, 500, T0),
            Outcome(ids["known"], UrlStatus.DONE, 200, T0, "fp"),
        ]
    )
    later = T0 + POLICY.ordinary.initial
    (known,) = _fetch(store, "a.test", later)
    store.record_fetch([Outcome(known, UrlStatus.FAILED, None, later)])
    schedule = store.schedule_of("http://a.test/known")
    assert schedule is not None
    assert schedule.status is UrlStatus.FAILED and schedule.fingerprint == "fp"
    assert schedule.next_due == later + POLICY.ordinary.initial  # the schedule holds
    assert store.due(10, ["a.test"], T0 + 1000 * DAY)["a.test"][0].id == known
    assert len(store.due(10, ["a.test"], T0 + 1000 * DAY)["a.test"]) == 1
    assert store.counts()["refused"] == 1


def test_a_fastlane_recrawl_jumps_the_queue_once(store: FrontierStore):
    store.write_batch([_url(f"/{i}") for i in range(3)], [], [], T0)
    (first,) = _fetch(store, "a.test", T0, limit=1)
    store.record_fetch([Outcome(first, UrlStatus.DONE, 200, T0, "fp")])
    assert store.recrawl([_url("/0"), _url("/new", site="b.test")], T0 + 10) == 2
    assert store.due(1, ["a.test"], T0 + 10)["a.test"][0].canonical == "http://a.test/0"
    assert store.due(1, ["b.test"], T0 + 10)["b.test"][0].lane is UrlLane.FASTLANE
    (again,) = _fetch(store, "a.test", T0 + 10, limit=1)
    assert again == first
    assert store.recrawl([_url("/0")], T0 + 11) == 0  # leased: already being fetched
    store.record_fetch([Outcome(first, UrlStatus.DONE, 200, T0 + 11, "fp")])
    schedule = store.schedule_of("http://a.test/0")
    assert schedule is not None and schedule.lane is UrlLane.REFRESH


def test_freshlane_sources_refetch_on_their_own_interval_and_their_links_jump_ahead(
    store: FrontierStore,
):
    store.write_batch([_url("/old")], [], [], T0)
    assert store.set_freshlane([_url("/")], 60.0, T0) == 1
    (root,) = _fetch(store, "a.test", T0, limit=1)
    store.record_fetch([Outcome(root, UrlStatus.DONE, 200, T0 + 1, "v1")])
    schedule = store.schedule_of("http://a.test/")
    assert schedule is not None
    assert (schedule.lane, schedule.next_due, schedule.freshlane) == (
        UrlLane.FRESHLANE,
        T0 + 61,
        True,
    )
    # A link found there, already queued in discovery, moves to the freshlane.
    store.write_batch(
        [_url("/old", lane=UrlLane.FRESHLANE), _url("/story", lane=UrlLane.FRESHLANE)],
        [],
        [],
        T0 + 2,
    )
    due = store.due(3, ["a.test"], T0 + 61)["a.test"]
    assert [u.canonical.rsplit("/", 1)[1] for u in due] == ["old", "story", ""]
    with pytest.raises(FrontierError):
        store.set_freshlane([_url("/")], 0.0, T0)


def test_a_critical_flag_pulls_a_long_interval_under_its_ceiling(store: FrontierStore):
    store.write_batch([_url("/")], [], [], T0)
    (url_id,) = _fetch(store, "a.test", T0)
    for step in range(12):  # unchanged for a long time: the interval reaches its ceiling
        store.record_fetch([Outcome(url_id, UrlStatus.DONE, 200, T0 + step, "same")])
    before = store.schedule_of("http://a.test/")
    assert before is not None and before.refresh_interval == POLICY.ordinary.ceiling
    flag_time = T0 + 100 * DAY
    missing = store.set_importance(
        ["http://a.test/", "http://a.test/nope"], Importance.CRITICAL, flag_time
    )
    assert missing == ["http://a.test/nope"]
    after = store.schedule_of("http://a.test/")
    assert after is not None and after.importance is Importance.CRITICAL
    assert after.refresh_interval == POLICY.critical.ceiling
    assert after.next_due == flag_time  # overdue under the new ceiling: due now, not earlier
    (again,) = _fetch(store, "a.test", flag_time)
    store.record_fetch([Outcome(again, UrlStatus.DONE, 200, flag_time, "new")])
    changed = store.schedule_of("http://a.test/")
    assert changed is not None
    assert changed.refresh_interval == POLICY.critical.ceiling * POLICY.shrink
    assert POLICY.critical.floor <= changed.refresh_interval <= 7 * DAY
    assert changed.refresh_interval >= HOUR


def test_surface_eviction_removes_only_deep_queued_urls(store: FrontierStore):
    store.write_batch([_url("/", depth=0), _url("/a", depth=2), _url("/b", depth=4)], [], [], T0)
    store.write_batch([_url("/c", site="b.test", depth=9)], [], [], T0)
    leased = store.lease("a.test", 1, T0)
    assert store.evict_deeper("a.test", 1) == 2
    assert store.counts() | {} == store.counts()
    assert store.counts()["queued"] == 1 and store.counts()["leased"] == len(leased)


# -- SQLite only: opening the first store's files -----------------------------------------


# The first store's schema (schema version 0), as files written before the store grew refresh
# scheduling still hold it.
_FIRST_SCHEMA = """
CREATE TABLE sites (site TEXT PRIMARY KEY, state TEXT NOT NULL, added_at REAL NOT NULL);
CREATE TABLE urls (
    id INTEGER PRIMARY KEY, canonical TEXT NOT NULL UNIQUE, fetch_url TEXT NOT NULL,
    site TEXT NOT NULL, depth INTEGER NOT NULL, redirects INTEGER NOT NULL DEFAULT 0,
    status INTEGER NOT NULL DEFAULT 0, discovered_at REAL NOT NULL, fetched_at REAL,
    http_status INTEGER
);
CREATE INDEX urls_by_site_status ON urls (site, status, depth, id);
CREATE TABLE horizon_urls (
    canonical TEXT PRIMARY KEY, site TEXT NOT NULL, first_seen REAL NOT NULL,
    inlinks INTEGER NOT NULL DEFAULT 1
);
CREATE TABLE host_links (
    src TEXT NOT NULL, dst TEXT NOT NULL, links INTEGER NOT NULL, PRIMARY KEY (src, dst)
) WITHOUT ROWID;
"""


def test_a_store_written_by_the_first_schema_opens_and_keeps_its_work(tmp_path: Path):
    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as old:
        old.executescript(_FIRST_SCHEMA)
        old.executemany(
            "INSERT INTO urls (id, canonical, fetch_url, site, depth, status, discovered_at,"
            " fetched_at, http_status) VALUES (?, ?, ?, 'a.test', ?, ?, ?, ?, ?)",
            [
                (1, "http://a.test/0", "http://a.test/0", 0, 2, T0, T0 + 5, 200),  # done
                (2, "http://a.test/1", "http://a.test/1", 1, 1, T0, None, None),  # leased
                (3, "http://a.test/2", "http://a.test/2", 2, 0, T0, None, None),  # queued
            ],
        )
        old.execute("INSERT INTO horizon_urls VALUES ('http://out.test/', 'out.test', ?, 1)", (T0,))
        old.execute("INSERT INTO host_links VALUES ('a.test', 'out.test', 1)")
        old.execute("INSERT INTO sites VALUES ('out.test', 'horizon', ?)", (T0,))
    done, leased = 1, 2

    store = SqliteFrontier(path)
    try:
        assert store.release_leases() == 1
        due = store.due(10, ["a.test"], T0 + 10)["a.test"]
        assert [u.id for u in due] == [leased, 3]
        later = T0 + 5 + POLICY.ordinary.initial
        refresh = [u for u in store.due(10, ["a.test"], later)["a.test"] if u.id == done]
        assert refresh and refresh[0].lane is UrlLane.REFRESH
        assert store.horizon_sites() == [("out.test", 1)]
    finally:
        store.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_a_store_from_a_newer_courtier_is_refused_with_a_clear_error(tmp_path: Path):
    path = tmp_path / "new.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(FrontierError, match="newer"):
        SqliteFrontier(path)


def test_site_sizes_count_known_and_queued_discovery_urls(store: FrontierStore):
    store.write_batch([_url("/"), _url("/a", depth=1), _url("/", site="b.test")], [], [], T0)
    leased = store.lease("a.test", 1, T0)
    assert len(leased) == 1
    assert store.site_sizes() == {"a.test": (2, 1), "b.test": (1, 1)}
    # A worker taking a shard asks for its sites only; a site without URLs is absent.
    assert store.site_sizes(["b.test", "none.test"]) == {"b.test": (1, 1)}
    assert store.site_sizes([]) == {}


# -- clock floors --------------------------------------------------------------------------


def test_clock_floors_outlive_the_store_and_only_future_ones_are_kept(open_store: Opener):
    first = open_store()
    first.save_clock_floors(
        {"site:a.test": T0 + 30, "origin:o": T0 + 5, "site:past.test": T0 - 1, "cdn:c": T0},
        T0,
    )
    first.close()
    again = open_store()
    assert again.load_clock_floors(T0) == {"site:a.test": T0 + 30, "origin:o": T0 + 5}
    assert again.load_clock_floors(T0 + 10) == {"site:a.test": T0 + 30}
    assert again.load_clock_floors(T0 + 30) == {}


def test_robots_answers_outlive_the_store_until_they_expire(open_store: Opener):
    first = open_store()
    body = b"User-agent: *\nCrawl-delay: 2\n"
    first.save_robots(
        [
            StoredRobots("a.test", 200, body, T0, T0 + 86400),
            StoredRobots("down.test", None, b"", T0, T0 + 600),
            StoredRobots("bin.test", 200, b"\xff\xfe\x00binary", T0, T0 + 60),
        ]
    )
    first.save_robots([StoredRobots("a.test", 404, b"", T0 + 1, T0 + 90000)])  # replaced
    first.close()
    again = open_store()
    loaded = again.load_robots(T0 + 100)
    assert sorted(loaded) == ["a.test", "down.test"]  # bin.test has expired
    assert loaded["a.test"] == StoredRobots("a.test", 404, b"", T0 + 1, T0 + 90000)
    assert loaded["down.test"].http_status is None
    assert again.load_robots(T0)["bin.test"].body == b"\xff\xfe\x00binary"
    assert sorted(again.load_robots(T0, ["bin.test", "down.test", "none.test"])) == [
        "bin.test",
        "down.test",
    ]
    assert again.load_robots(T0 + 100, ["bin.test"]) == {}
    assert again.load_robots(T0, []) == {}


def test_saved_clock_floors_are_only_raised_and_past_ones_are_forgotten(store: FrontierStore):
    store.save_clock_floors({"site:a.test": T0 + 30, "origin:o": T0 + 5, "bucket:b": T0 + 8}, T0)
    # a later stop: a lower floor never lowers a saved one, a higher one raises it
    store.save_clock_floors({"site:a.test": T0 + 20, "origin:o": T0 + 50, "bucket:b": T0 + 6}, T0)
    assert store.load_clock_floors(T0) == {
        "site:a.test": T0 + 30,
        "origin:o": T0 + 50,
        "bucket:b": T0 + 8,
    }
    # at T0 + 10 the bucket's floor is over: it is deleted, not merely hidden
    store.save_clock_floors({}, T0 + 10)
    assert store.load_clock_floors(T0 - 100) == {"site:a.test": T0 + 30, "origin:o": T0 + 50}
    # a floor no later than now is not saved, whatever was saved before
    store.save_clock_floors({"cdn:c": T0 + 10, "origin:o": T0 + 9}, T0 + 10)
    assert store.load_clock_floors(T0 - 100) == {"site:a.test": T0 + 30, "origin:o": T0 + 50}


def test_clock_floors_keep_keys_with_separators_and_quotes_apart(store: FrontierStore):
    floors = {
        "origin:addr=10.0.0.1,10.0.0.2": T0 + 1,
        'origin:q"uote': T0 + 2,
        "origin:back\\slash": T0 + 3,
        "site:{x}": T0 + 4,
        "imgsvc:img.simresize.test/acme": T0 + 5.25,
    }
    store.save_clock_floors(floors, T0)
    assert store.load_clock_floors(T0) == floors


@pytest.mark.parametrize(
    ("floors", "now", "message"),
    [
        ({"": T0 + 1}, T0, "non-empty"),
        ({"site:a.test": float("nan")}, T0, "finite"),
        ({"site:a.test": float("inf")}, T0, "finite"),
        ({"site:a.test": T0 + 1, "site:b.test": "soon"}, T0, "finite"),
        ({"site:a.test": T0 + 1}, float("nan"), "now"),
    ],
)
def test_bad_clock_floors_are_refused_and_nothing_is_written(
    store: FrontierStore, floors: dict[str, float], now: float, message: str
):
    store.save_clock_floors({"site:kept.test": T0 + 60}, T0)
    with pytest.raises(FrontierError, match=message):
        store.save_clock_floors(floors, now)
    assert store.load_clock_floors(T0) == {"site:kept.test": T0 + 60}


def test_clock_floors_saved_by_the_previous_version_are_loaded(tmp_path: Path):
    """The engine used to write ``limit_clocks`` into the store file itself; those floors
    (and the table beside a store of the current schema) stay readable."""
    path = tmp_path / "frontier.sqlite3"
    SqliteFrontier(path).close()
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE limit_clocks")
        db.execute(
            "CREATE TABLE limit_clocks (key TEXT PRIMARY KEY, not_before REAL NOT NULL) "
            "WITHOUT ROWID"
        )
        db.execute("INSERT INTO limit_clocks VALUES ('site:a.test', ?)", (T0 + 30,))
    db.close()
    store = SqliteFrontier(path)
    try:
        assert store.load_clock_floors(T0) == {"site:a.test": T0 + 30}
        store.save_clock_floors({"site:a.test": T0 + 10, "origin:o": T0 + 5}, T0)
        assert store.load_clock_floors(T0) == {"site:a.test": T0 + 30, "origin:o": T0 + 5}
    finally:
        store.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()


def test_a_first_schema_store_gains_the_clock_floors_table(tmp_path: Path):
    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as old:
        old.executescript(_FIRST_SCHEMA)
    old.close()
    store = SqliteFrontier(path)
    try:
        assert store.load_clock_floors(T0) == {}
        store.save_clock_floors({"origin:o": T0 + 5}, T0)
        assert store.load_clock_floors(T0) == {"origin:o": T0 + 5}
    finally:
        store.close()


def test_a_sites_render_controls_are_kept_with_its_other_controls(open_store: Opener):
    store = open_store()
    control = SiteControl("a.test", rate=0.5).rendering(T0, "never", None)
    control = control.rendering(T0, "always", "/app/")
    store.record_control(ControlAction("site render", "a.test", {}, "t", "me", T0), control)
    assert store.site_controls()["a.test"] == control
    cleared = control.rendering(T0 + 1, None, None)
    store.record_control(ControlAction("site render", "a.test", {}, "t", "me", T0), cleared)
    again = store.site_controls()["a.test"]
    assert (again.render, again.render_rules, again.rate) == (None, (), 0.5)


def test_a_store_made_before_render_controls_gains_their_columns(tmp_path: Path):
    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as old:
        old.execute(
            "CREATE TABLE site_controls (site TEXT PRIMARY KEY, paused INTEGER NOT NULL, "
            "paused_until REAL, rate REAL, rate_until REAL, opted_out INTEGER NOT NULL, "
            "reason TEXT NOT NULL, updated_at REAL NOT NULL)"
        )
        old.execute("INSERT INTO site_controls VALUES ('a.test', 1, NULL, NULL, NULL, 0, '', 1)")
    old.close()
    store = SqliteFrontier(path)
    try:
        assert store.site_controls()["a.test"] == SiteControl("a.test", paused=True, updated_at=1)
        control = SiteControl("a.test").rendering(T0, "always", None)
        store.record_control(ControlAction("site render", "a.test", {}, "t", "me", T0), control)
        assert store.site_controls()["a.test"].render == "always"
    finally:
        store.close()


# -- origins -------------------------------------------------------------------------------


def _origin(site: str, origin: str, confidence: float = 0.9) -> Assignment:
    evidence = (Evidence(Kind.CNAME, "edge.p.test", 0.95, f"{site} CNAMEs to edge.p.test"),)
    return Assignment(site, origin, confidence, evidence)


def test_saved_origins_log_first_sightings_then_only_the_sites_that_moved(open_store: Opener):
    store = open_store()
    assert store.origins() == {}
    first = store.save_origins(
        [_origin("a.test", "cname:edge.p.test"), _origin("b.test", "cname:edge.p.test")],
        T0,
        {"a.test": T0 + 300},
    )
    assert first == [
        OriginChange("a.test", None, "cname:edge.p.test"),
        OriginChange("b.test", None, "cname:edge.p.test"),
    ]
    moved = store.save_origins(
        [_origin("a.test", "cname:edge.p.test"), _origin("b.test", "addr:192.0.2.5")],
        T0 + 60,
        {},
    )
    assert moved == [OriginChange("b.test", "cname:edge.p.test", "addr:192.0.2.5")]
    assert store.save_origins([_origin("b.test", "addr:192.0.2.5", 0.5)], T0 + 90, {}) == []
    assert store.save_origins([], T0 + 120, {}) == []
    store.close()
    assert open_store().origins() == {"a.test": "cname:edge.p.test", "b.test": "addr:192.0.2.5"}


def test_a_site_twice_in_one_batch_logs_both_moves_and_keeps_the_last(store: FrontierStore):
    store.save_origins([_origin("a.test", "x")], T0, {})
    changes = store.save_origins([_origin("a.test", "y"), _origin("a.test", "z")], T0 + 1, {})
    assert changes == [OriginChange("a.test", "x", "y"), OriginChange("a.test", "x", "z")]
    assert store.origins() == {"a.test": "z"}


def test_a_failed_origin_batch_saves_nothing(store: FrontierStore):
    store.save_origins([_origin("a.test", "x")], T0, {})
    broken = Assignment("b.test", None, 0.5, ())  # type: ignore[arg-type]
    with pytest.raises(FrontierError):
        store.save_origins([_origin("a.test", "y"), broken], T0 + 1, {})
    assert store.origins() == {"a.test": "x"}
    assert store.save_origins([_origin("a.test", "y")], T0 + 2, {}) == [
        OriginChange("a.test", "x", "y")
    ]


def test_origins_saved_by_the_sqlite_frontier_are_read_by_the_origin_store(tmp_path: Path):
    path = tmp_path / "frontier.sqlite3"
    frontier = SqliteFrontier(path)
    try:
        frontier.write_batch([_url("/")], [], [], T0)
        frontier.save_origins([_origin("a.test", "o1"), _origin("b.test", "o1")], T0, {})
        frontier.save_origins([_origin("a.test", "o2", 0.4)], T0 + 10, {"a.test": T0 + 500})
        with OriginStore(path, create=False) as origins:  # while the frontier is still open
            assert origins.origins() == {"a.test": "o2", "b.test": "o1"}
            stored = origins.get("a.test")
            assert stored is not None
            assert stored.assignment == _origin("a.test", "o2", 0.4)
            assert (stored.checked_at, stored.recheck_at) == (T0 + 10, T0 + 500)
            assert origins.due(T0 + 100) == ["b.test"]
            assert [(c.change, c.changed_at) for c in origins.changes("a.test")] == [
                (OriginChange("a.test", None, "o1"), T0),
                (OriginChange("a.test", "o1", "o2"), T0 + 10),
            ]
            # and the other way round: what the origin store saves, the frontier reads
            origins.save([_origin("c.test", "o3")], T0 + 20, {})
        assert frontier.origins() == {"a.test": "o2", "b.test": "o1", "c.test": "o3"}
        assert frontier.counts()["queued"] == 1
    finally:
        frontier.close()


def test_an_origin_store_file_opens_as_a_frontier_and_keeps_its_origins(tmp_path: Path):
    path = tmp_path / "frontier.sqlite3"
    with OriginStore(path) as origins:
        origins.save([_origin("a.test", "o1")], T0, {})
    frontier = SqliteFrontier(path)
    try:
        assert frontier.origins() == {"a.test": "o1"}
        assert frontier.save_origins([_origin("a.test", "o2")], T0 + 1, {}) == [
            OriginChange("a.test", "o1", "o2")
        ]
    finally:
        frontier.close()


def test_postgres_keeps_origin_evidence_and_logs_changes_in_order(postgres_dsn: str):
    schema = f"t_{uuid.uuid4().hex[:12]}"
    store = PostgresFrontier(postgres_dsn, schema=schema)
    try:
        store.save_origins([_origin("b.test", "o1"), _origin("a.test", "o1")], T0, {})
        store.save_origins([_origin("a.test", "o2", 0.4)], T0 + 10, {"a.test": T0 + 500})
    finally:
        store.close()
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        sites = conn.execute(
            f"SELECT site, origin, confidence, evidence, checked_at, recheck_at "
            f"FROM {schema}.origin_sites ORDER BY site".encode()
        ).fetchall()
        changes = conn.execute(
            f"SELECT site, old_origin, new_origin, changed_at FROM {schema}.origin_changes "
            f"ORDER BY id".encode()
        ).fetchall()
        conn.execute(f"DROP SCHEMA {schema} CASCADE".encode())
    evidence = [e.to_json() for e in _origin("a.test", "o2").evidence]
    assert [(s, o, c, json.loads(e), at, due) for s, o, c, e, at, due in sites] == [
        ("a.test", "o2", 0.4, evidence, T0 + 10, T0 + 500),
        ("b.test", "o1", 0.9, [e.to_json() for e in _origin("b.test", "o1").evidence], T0, T0),
    ]
    assert changes == [
        ("b.test", None, "o1", T0),
        ("a.test", None, "o1", T0),
        ("a.test", "o1", "o2", T0 + 10),
    ]


# -- fenced leases (scale-out) ------------------------------------------------------------

OWNER = "worker-a"


@pytest.fixture
def fenced(postgres_dsn: str) -> Iterator[tuple[PostgresFrontier, psycopg.Connection[Any]]]:
    """A PostgreSQL store whose schema holds shard leases 0 and 1, both held by ``OWNER``
    with token 1, and a connection of "another worker" on the same schema."""
    schema = f"t_{uuid.uuid4().hex[:12]}"
    store = PostgresFrontier(postgres_dsn, schema=schema)
    other = psycopg.connect(postgres_dsn, autocommit=True)
    other.execute(f"SET search_path TO {schema}".encode())
    other.execute(
        f"CREATE TABLE {SHARD_LEASES} (shard integer PRIMARY KEY, owner text, "
        "token bigint NOT NULL DEFAULT 0, expires_at double precision NOT NULL DEFAULT 0)".encode()
    )
    other.execute(
        f"INSERT INTO {SHARD_LEASES} VALUES (0, %s, 1, 0), (1, %s, 1, 0)".encode(),
        (OWNER, OWNER),
    )
    store.write_batch([_url("/"), _url("/", "b.test"), _url("/", "c.test")], [], [], T0)
    try:
        yield store, other
    finally:
        store.close()
        other.execute(f"DROP SCHEMA {schema} CASCADE".encode())
        other.close()


def _take_shard_1(conn: psycopg.Connection[Any]) -> None:
    conn.execute(f"UPDATE {SHARD_LEASES} SET owner = 'worker-b', token = 2 WHERE shard = 1")


def test_a_fenced_lease_serves_only_sites_whose_shard_lease_still_holds(
    fenced: tuple[PostgresFrontier, psycopg.Connection[Any]],
):
    store, other = fenced
    fences = {"a.test": Fence(0, OWNER, 1), "b.test": Fence(1, OWNER, 1)}
    _take_shard_1(other)  # another worker took b.test's shard (and released its leases)
    leased = store.lease_due(10, ["a.test", "b.test", "c.test"], T0 + 1, fences)
    assert sorted(leased) == ["a.test"]  # b.test's fence failed; c.test has none here
    assert store.lease("b.test", 5, T0 + 1, Fence(1, OWNER, 1)) == []
    assert [u.site for u in store.lease("b.test", 5, T0 + 1, Fence(1, "worker-b", 2))] == ["b.test"]
    assert sorted(store.lease_due(10, ["c.test"], T0 + 1)) == ["c.test"]  # unfenced


def test_a_fenced_release_leaves_the_leases_of_the_shards_next_holder(
    fenced: tuple[PostgresFrontier, psycopg.Connection[Any]],
):
    store, other = fenced
    mine = Fence(1, OWNER, 1)
    assert sorted(store.lease_due(10, ["b.test"], T0 + 1, {"b.test": mine})) == ["b.test"]
    _take_shard_1(other)  # the taker releases the leases, then leases them for itself:
    other.execute("UPDATE urls SET leased_at = %s WHERE site = 'b.test'", (T0 + 2,))
    assert store.release_leases(sites=["b.test"], fence=mine) == 0  # ours no more
    assert store.release_leases(sites=["b.test"], fence=Fence(1, "worker-b", 2)) == 1
    assert store.release_leases(sites=["a.test"], fence=Fence(0, OWNER, 1)) == 0  # none leased


def test_a_fence_with_an_older_token_of_the_same_owner_is_refused(
    fenced: tuple[PostgresFrontier, psycopg.Connection[Any]],
):
    """The worker lost shard 1 and took it back: its lease now has token 2. A lease or a
    release still fenced by token 1 (a lane that has not heard) is refused, though the
    owner is the same: the owner alone does not fence."""
    store, other = fenced
    old, new = Fence(1, OWNER, 1), Fence(1, OWNER, 2)
    other.execute(f"UPDATE {SHARD_LEASES} SET token = 2 WHERE shard = 1")
    assert store.lease_due(10, ["b.test"], T0 + 1, {"b.test": old}) == {}
    assert store.lease("b.test", 5, T0 + 1, old) == []
    assert [u.site for u in store.lease("b.test", 5, T0 + 1, new)] == ["b.test"]
    assert store.release_leases(sites=["b.test"], fence=old) == 0
    assert store.release_leases(sites=["b.test"], fence=new) == 1


def test_a_take_of_the_shard_waits_for_a_fenced_lease_in_progress(
    fenced: tuple[PostgresFrontier, psycopg.Connection[Any]],
):
    """The taker's release must see every lease the old holder made: a take committed while
    a lease is in progress makes that lease re-check the new token and leave the site out."""
    store, other = fenced
    result: list[dict[str, list[LeasedUrl]]] = []
    with other.transaction():
        _take_shard_1(other)  # the take, not committed yet
        leasing = threading.Thread(
            target=lambda: result.append(
                store.lease_due(10, ["a.test", "b.test"], T0 + 1, {"b.test": Fence(1, OWNER, 1)})
            )
        )
        leasing.start()
        deadline = time.monotonic() + 10
        waiting = False
        while not waiting and leasing.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
            row = other.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND datname = current_database()"
            ).fetchone()
            waiting = bool(row and row[0])
    leasing.join(10)
    assert waiting, "the fenced lease did not wait for the take's row lock"
    assert result == [{}]
    assert other.execute("SELECT count(*) FROM urls WHERE status = 1").fetchone() == (0,)


# -- conditional refresh: validators, 304, sitemap lastmod ---------------------------------


def _refetch(store: FrontierStore, now: float) -> tuple[int, ...]:
    leased = store.lease_due(10, ["a.test"], now)["a.test"]
    return tuple(u.id for u in leased)


def test_validators_of_a_2xx_come_back_with_the_lease_and_a_304_counts_as_unchanged(
    store: FrontierStore,
):
    store.write_batch([_url("/")], [], [], T0)
    (first,) = store.lease_due(10, ["a.test"], T0 + 1)["a.test"]
    assert (first.etag, first.last_modified, first.digest, first.fetched_at) == (None,) * 4
    assert not first.conditional
    modified = "Wed, 21 Oct 2015 07:28:00 GMT"
    store.record_fetch(
        [Outcome(first.id, UrlStatus.DONE, 200, T0 + 1, "f1", '"v1"', modified, "sha1:AAA")]
    )
    schedule = store.schedule_of("http://a.test/")
    assert schedule is not None and schedule.refresh_interval is not None
    interval = schedule.refresh_interval
    (again,) = store.lease_due(10, ["a.test"], T0 + 1 + interval)["a.test"]
    assert (again.etag, again.last_modified, again.digest) == ('"v1"', modified, "sha1:AAA")
    assert again.fetched_at == pytest.approx(T0 + 1) and again.conditional
    # 304: unchanged (the interval grows as for an unchanged fingerprint), validators kept,
    # a validator the 304 repeats refreshes the stored one.
    now = T0 + 1 + interval
    store.record_fetch(
        [Outcome(again.id, UrlStatus.DONE, 304, now, None, '"v2"', None, None, not_modified=True)]
    )
    after = store.schedule_of("http://a.test/")
    assert after is not None and after.refresh_interval is not None
    assert after.refresh_interval == pytest.approx(interval * POLICY.grow)
    assert after.fingerprint == "f1" and after.unchanged_fetches == 1
    assert (after.etag, after.last_modified, after.digest) == ('"v2"', modified, "sha1:AAA")
    assert after.http_status == 304
    # A 2xx without validators clears them: nothing to send back next time.
    (third,) = store.lease_due(10, ["a.test"], after.next_due or 0)["a.test"]
    store.record_fetch([Outcome(third.id, UrlStatus.DONE, 200, after.next_due or 0, "f2")])
    final = store.schedule_of("http://a.test/")
    assert final is not None and (final.etag, final.last_modified, final.digest) == (None,) * 3


def test_errors_and_redirects_leave_the_validators_alone(store: FrontierStore):
    store.write_batch([_url("/")], [], [], T0)
    (url_id,) = _refetch(store, T0 + 1)
    store.record_fetch([Outcome(url_id, UrlStatus.DONE, 200, T0 + 1, "f", '"e"', None, "d")])
    schedule = store.schedule_of("http://a.test/")
    assert schedule is not None and schedule.next_due is not None
    (url_id,) = _refetch(store, schedule.next_due)
    store.record_fetch([Outcome(url_id, UrlStatus.DONE, 503, schedule.next_due, None)])
    kept = store.schedule_of("http://a.test/")
    assert kept is not None and (kept.etag, kept.digest) == ('"e"', "d")


def test_a_sitemap_lastmod_after_the_last_fetch_makes_the_url_due_now(store: FrontierStore):
    store.write_batch([_url("/a"), _url("/b"), _url("/new")], [], [], T0)
    ids = dict(zip(("a", "b", "new"), sorted(_refetch(store, T0 + 1)), strict=True))
    store.record_fetch([Outcome(ids[k], UrlStatus.DONE, 200, T0 + 1, k) for k in ("a", "b")])
    store.release_leases(ids=[ids["new"]])
    moved = store.refresh_lastmod(
        [("http://a.test/a", T0 + 100), ("http://a.test/b", T0), ("http://a.test/new", T0 + 100),
         ("http://a.test/unknown", T0 + 100)],
        T0 + 200,
    )  # fmt: skip
    assert moved == 1  # /b did not change since its fetch; /new was never fetched
    due = {u.fetch_url for u in store.due(10, ["a.test"], T0 + 200)["a.test"]}
    assert due == {"http://a.test/a", "http://a.test/new"}
    assert store.refresh_lastmod([], T0) == 0


def test_a_version_1_store_gains_the_validator_columns_and_keeps_its_rows(tmp_path: Path):
    path = tmp_path / "v1.sqlite3"
    store = SqliteFrontier(path)
    store.write_batch([_url("/")], [], [], T0)
    (url_id,) = _refetch(store, T0 + 1)
    store.record_fetch([Outcome(url_id, UrlStatus.DONE, 200, T0 + 1, "f")])
    store.close()
    with sqlite3.connect(path) as db:  # back to what version 1 wrote
        for column in ("etag", "last_modified", "payload_digest"):
            db.execute(f"ALTER TABLE urls DROP COLUMN {column}")
        db.execute("PRAGMA user_version = 1")
    reopened = SqliteFrontier(path)
    try:
        schedule = reopened.schedule_of("http://a.test/")
        assert schedule is not None and schedule.fingerprint == "f"
        assert schedule.etag is None and schedule.next_due is not None
        (again,) = reopened.lease_due(10, ["a.test"], schedule.next_due)["a.test"]
        assert not again.conditional
    finally:
        reopened.close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 2


def test_a_postgres_store_from_before_the_validators_gains_them(postgres_dsn: str):
    schema = f"t_{uuid.uuid4().hex[:12]}"
    store = PostgresFrontier(postgres_dsn, schema=schema)
    try:
        store.write_batch([_url("/")], [], [], T0)
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            conn.execute(
                f"ALTER TABLE {schema}.urls DROP COLUMN etag, DROP COLUMN last_modified, "
                "DROP COLUMN payload_digest".encode()
            )
        store.close()
        store = PostgresFrontier(postgres_dsn, schema=schema)
        (leased,) = store.lease_due(10, ["a.test"], T0 + 1)["a.test"]
        store.record_fetch([Outcome(leased.id, UrlStatus.DONE, 200, T0 + 1, "f", '"e"')])
        schedule = store.schedule_of("http://a.test/")
        assert schedule is not None and schedule.etag == '"e"'
    finally:
        store.close()
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE".encode())


# -- an operator's controls (courtier.frontier.controls) ---------------------------------------


def test_controls_and_their_actions_are_kept_and_read_in_order(open_store: Opener) -> None:
    from courtier.frontier.controls import ControlAction, SiteControl

    store = open_store()
    store.add_sites(["a.test", "b.test"], SiteState.SEED, T0)
    paused = SiteControl("a.test").paused_at(T0, T0 + 60, "asked")
    first = store.record_control(
        ControlAction("site pause", "a.test", {"until": T0 + 60}, "courtier site pause", "me", T0),
        paused,
    )
    second = store.record_control(
        ControlAction("site drop", "b.test", {"opt_out": True}, "courtier site drop", "me", T0),
        SiteControl("b.test", opted_out=True, updated_at=T0),
        {"b.test": SiteState.OPTED_OUT},
    )
    assert second > first
    other = open_store()  # another worker sees the same
    assert [a.target for a in other.control_actions()] == ["a.test", "b.test"]
    assert [a.id for a in other.control_actions(after=first)] == [second]
    assert other.control_actions(after=first)[0].detail == {"opt_out": True}
    assert [a.target for a in other.last_actions(1)] == ["b.test"]
    assert [a.action for a in other.last_actions(5, "a.test")] == ["site pause"]
    controls = other.site_controls()
    assert controls["a.test"] == paused
    assert controls["a.test"].held_until(T0 + 1) == T0 + 60
    assert controls["a.test"].held_until(T0 + 61) == 0.0
    assert controls["b.test"].opted_out
    # Opted out is for good: seeding the site again changes nothing.
    other.add_sites(["b.test"], SiteState.SEED, T0 + 1)
    other.add_sites(["b.test"], SiteState.REQUESTED, T0 + 1)
    assert other.site_states()["b.test"] == SiteState.OPTED_OUT
    assert "b.test" not in other.sites_in_state(SiteState.SEED, SiteState.REQUESTED)


def test_an_origins_budget_is_kept_beside_the_sites_controls(open_store: Opener) -> None:
    from courtier.frontier.controls import ControlAction, OriginControl

    store = open_store()
    limited = OriginControl("pin:pair").limited_at(T0, 0.5, 2.0, T0 + 60, "asked")
    store.record_control(
        ControlAction("origins limit", "pin:pair", {"rate": 0.5}, "courtier origins", "me", T0),
        limited,
    )
    other = open_store()
    assert other.origin_controls() == {"pin:pair": limited}
    assert other.site_controls() == {}
    assert [a.action for a in other.last_actions(5, "pin:pair")] == ["origins limit"]
    assert limited.in_effect(T0 + 59) and not limited.in_effect(T0 + 60)
    cleared = limited.limited_at(T0 + 1, None, None, None, "")
    store.record_control(
        ControlAction("origins limit", "pin:pair", {}, "courtier origins", "me", T0 + 1), cleared
    )
    assert not other.origin_controls()["pin:pair"].in_effect(T0 + 2)


def test_origin_evidence_one_worker_saw_is_read_by_the_others(open_store: Opener) -> None:
    from courtier.frontier.observations import Observation
    from courtier.origins.header_evidence import ProbeResponse
    from courtier.origins.tls_evidence import TlsFacts

    home = ProbeResponse(200, (("Server", "plat"), ("X-Platform", "b")), "ab" * 32)
    tls = TlsFacts("f" * 64, "01", "Test CA", ("*.plat.test",))
    store = open_store()
    store.save_observations(
        [Observation("a.test", "w1", home=home), Observation("b.test", "w1", tls=tls)], T0
    )
    store.save_observations([Observation("c.test", "w2", missing=home)], T0 + 1)
    other = open_store()
    seen = other.observations_after(0, "w2")  # w2 reads what w1 saw, not its own
    assert [(o.host, o.home, o.tls) for o in seen] == [
        ("a.test", home, None),
        ("b.test", None, tls),
    ]
    assert other.observations_after(seen[-1].id, "w2") == []
    assert [o.host for o in other.observations_after(0, "w1")] == ["c.test"]


# -- fast sources the crawl found (frontier.fresh) ---------------------------------------


def _watched(url_id: int, url: str, state: FreshState, interval: float, at: float):
    return FreshSource(url_id, url, "a.test", state, interval, "home page", at, at, visits=2)


def test_a_found_source_is_kept_and_its_row_falls_due_in_the_freshlane(open_store: Opener):
    store = open_store()
    store.write_batch([_url("/"), _url("/other")], [], [], T0)
    (root,) = _fetch(store, "a.test", T0, limit=1)
    store.record_fetch([Outcome(root, UrlStatus.DONE, 200, T0 + 1, "v1")])
    source = _watched(root, "http://a.test/", FreshState.SOURCE, 75.0, T0 + 1)
    store.save_fresh([source], [source])
    schedule = store.schedule_of("http://a.test/")
    assert schedule is not None
    assert (schedule.lane, schedule.freshlane, schedule.next_due) == (
        UrlLane.FRESHLANE,
        True,
        T0 + 76,
    )
    # Its next look builds on the learned interval; another worker reads what was learned.
    (again,) = _fetch(store, "a.test", T0 + 76, limit=1)
    assert again == root
    store.record_fetch([Outcome(root, UrlStatus.DONE, 200, T0 + 77, "v2")])
    schedule = store.schedule_of("http://a.test/")
    assert schedule is not None and schedule.next_due == T0 + 77 + 75
    (read,) = open_store().fresh_sources()
    assert read == source


def test_a_source_that_goes_quiet_returns_to_ordinary_refresh(store: FrontierStore):
    store.write_batch([_url("/")], [], [], T0)
    (root,) = _fetch(store, "a.test", T0, limit=1)
    store.record_fetch([Outcome(root, UrlStatus.DONE, 200, T0 + 1, "v1")])
    watched = _watched(root, "http://a.test/", FreshState.PROBING, 60.0, T0 + 1)
    store.save_fresh([watched], [watched])
    quiet = _watched(root, "http://a.test/", FreshState.QUIET, DAY, T0 + 200)
    store.save_fresh([quiet], [quiet])
    schedule = store.schedule_of("http://a.test/")
    assert schedule is not None
    assert (schedule.lane, schedule.freshlane, schedule.next_due) == (
        UrlLane.REFRESH,
        False,
        T0 + 200 + DAY,
    )
    # A later change of state with no schedule leaves the row's own schedule alone.
    store.save_fresh([dataclasses.replace(quiet, visits=9)], [])
    assert store.schedule_of("http://a.test/") == schedule
    assert store.fresh_sources()[0].visits == 9


def test_a_leased_page_keeps_its_lease_and_its_outcome_builds_on_the_learned_interval(
    store: FrontierStore,
):
    store.write_batch([_url("/")], [], [], T0)
    (root,) = _fetch(store, "a.test", T0, limit=1)
    source = _watched(root, "http://a.test/", FreshState.PROBING, 60.0, T0)
    store.save_fresh([source], [source])
    schedule = store.schedule_of("http://a.test/")
    assert schedule is not None and schedule.status is UrlStatus.LEASED
    store.record_fetch([Outcome(root, UrlStatus.DONE, 200, T0 + 2, "v1")])
    schedule = store.schedule_of("http://a.test/")
    assert schedule is not None
    assert (schedule.lane, schedule.next_due) == (UrlLane.FRESHLANE, T0 + 62)


def test_the_hand_list_replaces_the_last_runs_and_shows_as_hand(store: FrontierStore):
    store.set_freshlane([_url("/a"), _url("/b")], 120.0, T0)
    store.set_hand_sources(["http://a.test/a", "http://a.test/b"], 120.0, T0)
    store.set_hand_sources(["http://a.test/b", "http://a.test/unknown"], 300.0, T0 + 5)
    (hand,) = store.fresh_sources()
    assert (hand.url, hand.state, hand.interval, hand.evidence) == (
        "http://a.test/b",
        FreshState.HAND,
        300.0,
        "configured",
    )


def test_critical_and_popular_pages_fall_due_ahead_of_ordinary_refresh(store: FrontierStore):
    store.write_batch([_url("/plain"), _url("/critical"), _url("/popular")], [], [], T0)
    fetched = _fetch(store, "a.test", T0, limit=3)
    store.record_fetch([Outcome(i, UrlStatus.DONE, 200, T0, f"fp{i}") for i in fetched])
    assert store.set_importance(["http://a.test/critical"], Importance.CRITICAL, T0) == []
    assert store.set_importance(["http://a.test/popular"], Importance.POPULAR, T0) == []
    later = T0 + POLICY.ordinary.floor * 10
    due = store.due(10, ["a.test"], later)["a.test"]
    lanes = {u.canonical.rsplit("/", 1)[1]: u.lane for u in due}
    assert lanes == {
        "critical": UrlLane.FRESHLANE,
        "popular": UrlLane.FRESHLANE,
        "plain": UrlLane.REFRESH,
    }
    assert [u.canonical.rsplit("/", 1)[1] for u in due][-1] == "plain"
    # Their next outcome keeps them there; back to ordinary, the next one moves them back.
    (critical,) = [u.id for u in due if u.canonical.endswith("/critical")]
    store.record_fetch([Outcome(critical, UrlStatus.DONE, 200, later, "fp")])
    schedule = store.schedule_of("http://a.test/critical")
    assert schedule is not None and schedule.lane is UrlLane.FRESHLANE
    store.set_importance(["http://a.test/critical"], Importance.ORDINARY, later)
    schedule = store.schedule_of("http://a.test/critical")
    assert schedule is not None and schedule.lane is UrlLane.REFRESH
