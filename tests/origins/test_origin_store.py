"""The origin tables in the crawl's store: upserts, evidence kept, changes logged, re-checks due."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from courtier.origins.cluster import Assignment, OriginChange
from courtier.origins.evidence import Evidence, Kind
from courtier.origins.store import (
    OriginStore,
    OriginStoreError,
    create_tables,
    read_origins,
    save_assignments,
)


def _a(site: str, origin: str, confidence: float = 0.9) -> Assignment:
    return Assignment(site, origin, confidence, (Evidence(Kind.CNAME, "edge.p.test", 0.95, "d"),))


def test_saved_origins_read_back_with_their_evidence(tmp_path: Path) -> None:
    with OriginStore(tmp_path / "s.sqlite3") as store:
        store.save([_a("a.test", "cname:edge.p.test")], 100.0, {"a.test": 400.0})
        stored = store.get("a.test")
    assert stored is not None
    assert stored.assignment == _a("a.test", "cname:edge.p.test")
    assert (stored.checked_at, stored.recheck_at) == (100.0, 400.0)


def test_a_change_of_origin_is_logged_and_an_unchanged_one_is_not(tmp_path: Path) -> None:
    with OriginStore(tmp_path / "s.sqlite3") as store:
        first = store.save([_a("a.test", "site:a.test"), _a("b.test", "x")], 1.0, {})
        again = store.save([_a("a.test", "site:a.test")], 2.0, {})
        moved = store.save([_a("a.test", "addr:192.0.2.5")], 3.0, {})
        history = store.changes("a.test")
    assert [(c.site, c.old) for c in first] == [("a.test", None), ("b.test", None)]
    assert again == []
    assert [(c.old, c.new) for c in moved] == [("site:a.test", "addr:192.0.2.5")]
    assert [(h.change.new, h.changed_at) for h in history] == [
        ("site:a.test", 1.0),
        ("addr:192.0.2.5", 3.0),
    ]


def test_sites_past_their_recheck_time_are_due(tmp_path: Path) -> None:
    with OriginStore(tmp_path / "s.sqlite3") as store:
        store.save([_a("a.test", "o"), _a("b.test", "o")], 0.0, {"a.test": 10.0, "b.test": 50.0})
        assert store.due(20.0) == ["a.test"]


def test_origin_tables_live_beside_the_frontier_and_leave_its_tables_alone(tmp_path: Path) -> None:
    path = tmp_path / "frontier.sqlite3"
    frontier = sqlite3.connect(path)  # a frontier-like file: WAL, a table of its own
    frontier.execute("PRAGMA journal_mode=WAL")
    with frontier:
        frontier.execute("CREATE TABLE sites (site TEXT PRIMARY KEY, state TEXT)")
        frontier.execute("INSERT INTO sites VALUES ('a.test', 'seed')")
    frontier.close()
    with OriginStore(path) as store:
        store.save([_a("a.test", "o")], 0.0, {})
    db = sqlite3.connect(path)
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert tables == {"sites", "origin_sites", "origin_changes"}
    assert db.execute("SELECT site, state FROM sites").fetchall() == [("a.test", "seed")]


def test_a_missing_store_is_a_clear_error_when_not_creating(tmp_path: Path) -> None:
    with pytest.raises(OriginStoreError, match="no store"):
        OriginStore(tmp_path / "absent.sqlite3", create=False)


def test_a_file_that_is_not_sqlite_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "junk.sqlite3"
    path.write_bytes(b"this is not a database, just some text that is long enough" * 20)
    with pytest.raises(OriginStoreError):
        OriginStore(path)


def test_the_table_functions_write_in_the_callers_transaction(tmp_path: Path) -> None:
    """What the SQLite frontier relies on: the SQL runs on any connection, inside the caller's
    transaction, and a rollback takes back the origins and their change log alike."""
    path = tmp_path / "s.sqlite3"
    db = sqlite3.connect(path, isolation_level=None)
    create_tables(db)
    create_tables(db)  # idempotent
    db.execute("BEGIN IMMEDIATE")
    assert save_assignments(db, [_a("a.test", "o1")], 1.0, {}) == [
        OriginChange("a.test", None, "o1")
    ]
    db.execute("ROLLBACK")
    assert read_origins(db) == {}
    db.execute("BEGIN IMMEDIATE")
    save_assignments(db, [_a("a.test", "o1"), _a("b.test", "o1")], 1.0, {"b.test": 9.0})
    db.execute("COMMIT")
    db.close()
    with OriginStore(path, create=False) as store:
        assert store.origins() == {"a.test": "o1", "b.test": "o1"}
        assert [c.change for c in store.changes()] == [
            OriginChange("a.test", None, "o1"),
            OriginChange("b.test", None, "o1"),
        ]
        assert store.due(5.0) == ["a.test"]
