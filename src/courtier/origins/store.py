"""Origins in the crawl's SQLite store: site -> origin, confidence, evidence, when checked.

Contract: the tables live in the same file as the frontier (``--store``), created here with
``IF NOT EXISTS`` so this module never touches the frontier's own tables. One connection, used
from one thread. ``save`` writes one batch in one transaction and records every change of a
site's origin in ``origin_changes`` (a site seen for the first time is a change from nothing).
``recheck_at`` is when the site's DNS facts expire (the smallest TTL of its answers).

The SQL lives in module-level functions that take a connection (``create_tables``,
``save_assignments``, ``read_origins``): ``OriginStore`` uses them on its own connection and the
SQLite frontier (``FrontierStore.save_origins``) on the frontier's, inside its own transaction,
so both write the same tables the same way. ``changes_from`` and ``evidence_json`` are the
backend-independent parts, shared with the PostgreSQL frontier.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from courtier.origins.cluster import Assignment, OriginChange
from courtier.origins.evidence import Evidence

_SCHEMA = """
CREATE TABLE IF NOT EXISTS origin_sites (
    site TEXT PRIMARY KEY,
    origin TEXT NOT NULL,
    confidence REAL NOT NULL,
    evidence TEXT NOT NULL,
    checked_at REAL NOT NULL,
    recheck_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS origin_sites_origin ON origin_sites (origin);
CREATE INDEX IF NOT EXISTS origin_sites_recheck ON origin_sites (recheck_at);
CREATE TABLE IF NOT EXISTS origin_changes (
    id INTEGER PRIMARY KEY,
    site TEXT NOT NULL,
    old_origin TEXT,
    new_origin TEXT NOT NULL,
    changed_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS origin_changes_site ON origin_changes (site);
"""


def create_tables(db: sqlite3.Connection) -> None:
    """Create the origin tables and indexes if missing (statement by statement, so this can run
    inside the caller's transaction; never touches any other table)."""
    for statement in _SCHEMA.split(";"):
        if statement.strip():
            db.execute(statement)


def read_origins(db: sqlite3.Connection) -> dict[str, str]:
    """Every stored site and its origin."""
    return dict(db.execute("SELECT site, origin FROM origin_sites").fetchall())


def changes_from(
    previous: Mapping[str, str], assignments: Iterable[Assignment]
) -> list[OriginChange]:
    """The changes a batch makes, in batch order: each assignment whose origin differs from the
    site's ``previous`` one (a site absent from ``previous`` changes from None)."""
    return [
        OriginChange(a.site, previous.get(a.site), a.origin)
        for a in assignments
        if previous.get(a.site) != a.origin
    ]


def evidence_json(assignment: Assignment) -> str:
    """The stored form of an assignment's evidence (what ``_stored`` reads back)."""
    return json.dumps([e.to_json() for e in assignment.evidence])


def save_assignments(
    db: sqlite3.Connection,
    assignments: Sequence[Assignment],
    checked_at: float,
    recheck_at: Mapping[str, float],
) -> list[OriginChange]:
    """Upsert ``assignments`` and log in ``origin_changes`` the sites whose origin moved (a first
    sighting is a change from None); return those changes. A site missing from ``recheck_at``
    is due again at ``checked_at``. Runs in the caller's transaction: it neither begins nor
    commits one."""
    cursor = db.cursor()
    previous: dict[str, str] = {}
    for site in dict.fromkeys(a.site for a in assignments):
        row = cursor.execute("SELECT origin FROM origin_sites WHERE site = ?", (site,)).fetchone()
        if row is not None:
            previous[site] = row[0]
    changes = changes_from(previous, assignments)
    cursor.executemany(
        "INSERT INTO origin_sites (site, origin, confidence, evidence, checked_at, "
        "recheck_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (site) DO UPDATE SET "
        "origin = excluded.origin, confidence = excluded.confidence, "
        "evidence = excluded.evidence, checked_at = excluded.checked_at, "
        "recheck_at = excluded.recheck_at",
        [
            (
                a.site,
                a.origin,
                a.confidence,
                evidence_json(a),
                checked_at,
                recheck_at.get(a.site, checked_at),
            )
            for a in assignments
        ],
    )
    cursor.executemany(
        "INSERT INTO origin_changes (site, old_origin, new_origin, changed_at) VALUES (?, ?, ?, ?)",
        [(c.site, c.old, c.new, checked_at) for c in changes],
    )
    return changes


class OriginStoreError(Exception):
    """The store file cannot be read as an origin store."""


@dataclass(frozen=True, slots=True)
class StoredOrigin:
    assignment: Assignment
    checked_at: float
    recheck_at: float


@dataclass(frozen=True, slots=True)
class StoredChange:
    change: OriginChange
    changed_at: float


class OriginStore:
    def __init__(self, path: Path | str, *, create: bool = True) -> None:
        if not create and not Path(path).exists():
            raise OriginStoreError(f"no store at {path}")
        try:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(path))
            self._db.execute("PRAGMA busy_timeout = 5000")
            create_tables(self._db)
        except (sqlite3.DatabaseError, OSError) as exc:
            raise OriginStoreError(f"{path}: {exc}") from exc

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> OriginStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def origins(self) -> dict[str, str]:
        return read_origins(self._db)

    def save(
        self,
        assignments: Iterable[Assignment],
        checked_at: float,
        recheck_at: Mapping[str, float],
    ) -> list[OriginChange]:
        """Upsert a batch; return (and log in ``origin_changes``) the sites whose origin moved."""
        with self._db:
            return save_assignments(self._db, list(assignments), checked_at, recheck_at)

    def get(self, site: str) -> StoredOrigin | None:
        row = self._db.execute(
            "SELECT site, origin, confidence, evidence, checked_at, recheck_at "
            "FROM origin_sites WHERE site = ?",
            (site,),
        ).fetchone()
        return None if row is None else _stored(row)

    def all(self) -> list[StoredOrigin]:
        rows = self._db.execute(
            "SELECT site, origin, confidence, evidence, checked_at, recheck_at "
            "FROM origin_sites ORDER BY origin, site"
        ).fetchall()
        return [_stored(row) for row in rows]

    def due(self, now: float) -> list[str]:
        """Sites whose facts have expired and should be looked up again."""
        rows = self._db.execute(
            "SELECT site FROM origin_sites WHERE recheck_at <= ? ORDER BY recheck_at", (now,)
        ).fetchall()
        return [site for (site,) in rows]

    def changes(self, site: str | None = None) -> list[StoredChange]:
        query = "SELECT site, old_origin, new_origin, changed_at FROM origin_changes"
        args: tuple[str, ...] = ()
        if site is not None:
            query += " WHERE site = ?"
            args = (site,)
        rows = self._db.execute(query + " ORDER BY id", args).fetchall()
        return [StoredChange(OriginChange(s, old, new), at) for s, old, new, at in rows]


def _stored(row: tuple[str, str, float, str, float, float]) -> StoredOrigin:
    site, origin, confidence, evidence_text, checked_at, recheck_at = row
    try:
        evidence = tuple(Evidence.from_json(item) for item in json.loads(evidence_text))
    except (ValueError, KeyError, TypeError) as exc:
        raise OriginStoreError(f"bad evidence stored for {site}: {exc}") from exc
    return StoredOrigin(Assignment(site, origin, confidence, evidence), checked_at, recheck_at)
