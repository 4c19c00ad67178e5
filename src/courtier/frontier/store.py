"""The SQLite frontier store (the embedded default).

Contract: one connection, used from one thread only (the crawler runs every call on a single
store thread, so the event loop never waits on disk). Writes come in batches: one transaction
per batch, never one per URL. Crawling is a query: ``lease`` hands out queued URLs of one site
in depth order and marks them leased, so nothing is handed out twice; ``release_leases`` puts
leased-but-unfinished URLs back on start-up, which is what makes a stopped crawl resume where
it left off.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path


class UrlStatus(IntEnum):
    QUEUED = 0
    LEASED = 1
    DONE = 2
    REFUSED = 3
    FAILED = 4


class SiteState:
    SEED = "seed"
    HORIZON = "horizon"
    REQUESTED = "requested"
    SUSPENDED = "suspended"


@dataclass(frozen=True, slots=True)
class NewUrl:
    canonical: str
    fetch_url: str
    site: str
    depth: int
    redirects: int = 0


@dataclass(frozen=True, slots=True)
class LeasedUrl:
    id: int
    fetch_url: str
    site: str
    depth: int
    redirects: int


@dataclass(frozen=True, slots=True)
class Outcome:
    url_id: int
    status: UrlStatus
    http_status: int | None
    fetched_at: float


@dataclass(frozen=True, slots=True)
class HorizonLink:
    canonical: str
    site: str
    from_site: str


_SCHEMA = """
CREATE TABLE IF NOT EXISTS sites (
    site TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    added_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS urls (
    id INTEGER PRIMARY KEY,
    canonical TEXT NOT NULL UNIQUE,
    fetch_url TEXT NOT NULL,
    site TEXT NOT NULL,
    depth INTEGER NOT NULL,
    redirects INTEGER NOT NULL DEFAULT 0,
    status INTEGER NOT NULL DEFAULT 0,
    discovered_at REAL NOT NULL,
    fetched_at REAL,
    http_status INTEGER
);
CREATE INDEX IF NOT EXISTS urls_by_site_status ON urls (site, status, depth, id);
CREATE TABLE IF NOT EXISTS horizon_urls (
    canonical TEXT PRIMARY KEY,
    site TEXT NOT NULL,
    first_seen REAL NOT NULL,
    inlinks INTEGER NOT NULL DEFAULT 1
);
CREATE TABLE IF NOT EXISTS host_links (
    src TEXT NOT NULL,
    dst TEXT NOT NULL,
    links INTEGER NOT NULL,
    PRIMARY KEY (src, dst)
) WITHOUT ROWID;
"""


class SqliteFrontier:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        self._db.close()

    def add_sites(self, sites: Iterable[str], state: str, now: float) -> None:
        """Add sites in ``state``; a site already known keeps its state unless it was horizon."""
        with self._db:
            self._db.executemany(
                "INSERT INTO sites (site, state, added_at) VALUES (?, ?, ?) "
                "ON CONFLICT (site) DO UPDATE SET state = excluded.state "
                "WHERE sites.state = 'horizon' AND excluded.state != 'horizon'",
                [(site, state, now) for site in sites],
            )

    def sites_in_state(self, *states: str) -> list[str]:
        marks = ",".join("?" * len(states))
        rows = self._db.execute(f"SELECT site FROM sites WHERE state IN ({marks})", states)
        return [row[0] for row in rows]

    def set_site_state(self, site: str, state: str) -> None:
        with self._db:
            self._db.execute("UPDATE sites SET state = ? WHERE site = ?", (state, site))

    def write_batch(
        self,
        new_urls: Sequence[NewUrl],
        outcomes: Sequence[Outcome],
        horizon: Sequence[HorizonLink],
        now: float,
    ) -> list[str]:
        """Apply one batch in one transaction; return the sites that received new URLs."""
        with self._db:
            before = self._db.total_changes
            self._db.executemany(
                "INSERT OR IGNORE INTO urls "
                "(canonical, fetch_url, site, depth, redirects, status, discovered_at) "
                "VALUES (?, ?, ?, ?, ?, 0, ?)",
                [(u.canonical, u.fetch_url, u.site, u.depth, u.redirects, now) for u in new_urls],
            )
            inserted = self._db.total_changes - before
            self._db.executemany(
                "UPDATE urls SET status = ?, http_status = ?, fetched_at = ? WHERE id = ?",
                [(int(o.status), o.http_status, o.fetched_at, o.url_id) for o in outcomes],
            )
            self._db.executemany(
                "INSERT INTO horizon_urls (canonical, site, first_seen) VALUES (?, ?, ?) "
                "ON CONFLICT (canonical) DO UPDATE SET inlinks = inlinks + 1",
                [(h.canonical, h.site, now) for h in horizon],
            )
            self._db.executemany(
                "INSERT INTO sites (site, state, added_at) VALUES (?, 'horizon', ?) "
                "ON CONFLICT (site) DO NOTHING",
                [(site, now) for site in {h.site for h in horizon}],
            )
            self._db.executemany(
                "INSERT INTO host_links (src, dst, links) VALUES (?, ?, 1) "
                "ON CONFLICT (src, dst) DO UPDATE SET links = links + 1",
                [(h.from_site, h.site) for h in horizon],
            )
        return sorted({u.site for u in new_urls}) if inserted else []

    def lease(self, site: str, limit: int) -> list[LeasedUrl]:
        """Queued URLs of ``site``, shallowest first, marked leased in the same transaction."""
        with self._db:
            rows = self._db.execute(
                "SELECT id, fetch_url, site, depth, redirects FROM urls "
                "WHERE site = ? AND status = 0 ORDER BY depth, id LIMIT ?",
                (site, limit),
            ).fetchall()
            self._db.executemany(
                "UPDATE urls SET status = 1 WHERE id = ?", [(row[0],) for row in rows]
            )
        return [LeasedUrl(*row) for row in rows]

    def release_leases(self) -> int:
        """Return leased URLs to the queue (after a stop); the count released."""
        with self._db:
            return self._db.execute("UPDATE urls SET status = 0 WHERE status = 1").rowcount

    def sites_with_queued(self) -> list[str]:
        rows = self._db.execute("SELECT DISTINCT site FROM urls WHERE status = 0")
        return [row[0] for row in rows]

    def counts(self) -> dict[str, int]:
        by_status = dict(
            self._db.execute("SELECT status, COUNT(*) FROM urls GROUP BY status").fetchall()
        )
        horizon_sites = self._db.execute(
            "SELECT COUNT(*) FROM sites WHERE state = 'horizon'"
        ).fetchone()[0]
        horizon_urls = self._db.execute("SELECT COUNT(*) FROM horizon_urls").fetchone()[0]
        result = {status.name.lower(): int(by_status.get(int(status), 0)) for status in UrlStatus}
        result["horizon_sites"] = int(horizon_sites)
        result["horizon_urls"] = int(horizon_urls)
        return result

    def horizon_sites(self, limit: int = 20) -> list[tuple[str, int]]:
        rows = self._db.execute(
            "SELECT dst, SUM(links) AS n FROM host_links GROUP BY dst ORDER BY n DESC LIMIT ?",
            (limit,),
        )
        return [(row[0], int(row[1])) for row in rows]
