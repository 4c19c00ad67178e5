"""The SQLite frontier store (the embedded default), behind ``FrontierStore``.

Contract (``courtier.frontier.base`` states the rules every backend keeps): one connection,
used from one thread at a time (the crawler runs every call on a single store thread, so the
event loop never waits on disk). Every write method is one transaction.

The due query is an index walk, never a scan: a partial index on ``(site, lane, next_due)``
holds only rows that can fall due (``next_due`` is NULL while a URL is leased, refused or
failed for good), and for each host one range scan per lane reads at most the batch size.
So the cost of "give me this host's next N URLs" depends on N, not on the size of the host's
frontier or of the store.

Schema versions (``PRAGMA user_version``): 0 is the first schema, before refresh scheduling;
opening such a file adds the scheduling columns with ``ALTER TABLE ADD COLUMN`` and fills them
in place (queued URLs due at their discovery time, fetched ones due one initial refresh
interval after their fetch), so an existing crawl continues where it stopped.

Version 2 adds the validators of conditional refresh (``etag``, ``last_modified``) and the
digest of the last payload kept (``payload_digest``), NULL for every existing row: a store
from before simply sends no conditional request until each URL's next 2xx.

Clock floors live in ``limit_clocks``, the table (and declaration) the crawl engine used to
write into the store file itself: it is created on open whatever the version, without a
version bump, so stores that already hold saved floors keep them and an older courtier can
still open a newer store.

A transaction of a batch the engine sized (``write_batch``, ``ingest``, ``record_fetch``,
``lease_due``, ``lease``; up to ``JOURNAL_IN_MEMORY_ROWS`` rows) keeps its statement journal in
memory (``temp_store``): a statement that changes many rows inside a transaction saves the
pages it changes there, to undo itself alone if it fails, and SQLite spills that journal to a
file in the temporary directory past 64 KiB: each batch's pages were written twice, once to
the log and once there (~3,400 page writes a second at 2,000 sites). A transaction of any
other size (a seed, a release of every lease, an eviction) keeps the file: it may touch every
page of a large store.

Origins (``save_origins``) live in ``origin_sites`` and ``origin_changes``, the tables of
``courtier.origins.store`` (whose functions hold their SQL), created the same way on open: so
``OriginStore`` opened on the store file (``courtier origins``) reads what a crawl saved.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

from courtier.frontier import controls, fresh, observations, spend
from courtier.frontier.base import (
    CLASS_LANE,
    DEFAULT_REFRESH_POLICY,
    DueUrl,
    FrontierError,
    FrontierUnavailable,
    HorizonLink,
    HostEdge,
    Ingested,
    LeasedUrl,
    NewUrl,
    Outcome,
    PageSchedule,
    ScheduleRow,
    SiteState,
    StoredRobots,
    UrlLane,
    UrlStatus,
    check_limit,
    future_floors,
    lead_of,
    refresh_lane,
    schedule_after,
    upgrades_by_canonical,
)
from courtier.frontier.refresh import Importance, RefreshPolicy, RefreshState, reclassify
from courtier.origins import store as origin_tables
from courtier.origins.cluster import Assignment, OriginChange
from courtier.politeness.limiter.base import Fence
from courtier.runtime.sqlite_wal import use_wal

__all__ = [
    "SCHEMA_VERSION",
    "DueUrl",
    "FrontierError",
    "HorizonLink",
    "HostEdge",
    "Ingested",
    "LeasedUrl",
    "NewUrl",
    "Outcome",
    "PageSchedule",
    "SiteState",
    "SqliteFrontier",
    "UrlLane",
    "UrlStatus",
]

SCHEMA_VERSION: Final = 2

_SCHEMA_V0: Final = """
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

# Created on open at any schema version (see the module docstring).
_ROBOTS_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS robots_answers (
    site TEXT PRIMARY KEY,
    http_status INTEGER,
    body BLOB NOT NULL,
    fetched_at REAL NOT NULL,
    expires_at REAL NOT NULL
) WITHOUT ROWID
"""
_CLOCKS_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS limit_clocks (
    key TEXT PRIMARY KEY,
    not_before REAL NOT NULL
) WITHOUT ROWID
"""
_RAISE_CLOCK: Final = (
    "INSERT INTO limit_clocks (key, not_before) VALUES (?, ?) ON CONFLICT (key) "
    "DO UPDATE SET not_before = max(not_before, excluded.not_before)"
)

# Columns added by version 1, with their declarations (ADD COLUMN needs constant defaults).
_V1_COLUMNS: Final = (
    ("next_due", "REAL"),
    ("lane", f"INTEGER NOT NULL DEFAULT {int(UrlLane.DISCOVERY)}"),
    ("refresh_interval", "REAL"),
    ("fingerprint", "TEXT"),
    ("unchanged_fetches", "INTEGER NOT NULL DEFAULT 0"),
    ("importance", f"TEXT NOT NULL DEFAULT '{Importance.ORDINARY.value}'"),
    ("freshlane", "INTEGER NOT NULL DEFAULT 0"),
    ("leased_at", "REAL"),
)

# Columns added by version 2: the validators a conditional refresh sends back.
_V2_COLUMNS: Final = (("etag", "TEXT"), ("last_modified", "TEXT"), ("payload_digest", "TEXT"))

JOURNAL_IN_MEMORY_ROWS: Final = 10_000
"""Rows a transaction may write with its statement journal in memory: about a page a row at
most (a batch of 9,500 on a 164 MB store: 36 MB more peak memory, docs/frontier-store.md)."""

_DUE_INDEX: Final = (
    "CREATE INDEX IF NOT EXISTS urls_due ON urls (site, lane, next_due) WHERE next_due IS NOT NULL"
)

_DUE_COLUMNS: Final = (
    "id, canonical, fetch_url, site, depth, redirects, lane, next_due, "
    "etag, last_modified, payload_digest, fetched_at"
)
# One bounded range scan per lane: reads at most ``limit`` rows per lane. The lanes are put in
# serving order in Python: an outer ORDER BY would make SQLite sort every branch into a
# temporary b-tree, which measured 40% slower for a batch of one URL per host.
_DUE_ONE_HOST: Final = " UNION ALL ".join(
    f"SELECT * FROM (SELECT {_DUE_COLUMNS} FROM urls "
    f"WHERE site = ?1 AND lane = {int(lane)} AND next_due <= ?2 "
    "ORDER BY next_due, id LIMIT ?3)"
    for lane in UrlLane
)

# A batch travels as one JSON array (serialised in C, unpacked by SQLite with the GIL
# released): one statement per kind of row instead of one per row, so the store thread hands
# the GIL back and forth with the event loop a few times per batch, not thousands of times.
# ``json_each`` walks the array in order: ids follow the batch's order and the first of two
# equal canonicals wins, as with row-by-row inserts; RETURNING names the rows inserted.


def _items(*columns: str) -> str:
    """``SELECT`` of the JSON array rows' items as columns (``json_extract``: SQLite 3.9+)."""
    items = ", ".join(f"json_extract(value, '$[{i}]') AS {c}" for i, c in enumerate(columns))
    # WHERE true: an upsert's SELECT needs it, else ON CONFLICT reads as a join's ON.
    return f"SELECT {items} FROM json_each(?) WHERE true"


_INSERT_URLS: Final = (
    "INSERT OR IGNORE INTO urls (canonical, fetch_url, site, depth, redirects, status, "
    "discovered_at, next_due, lane) SELECT c, f, s, d, r, 0, ?1, ?1 - a, l FROM "
    f"({_items('c', 'f', 's', 'd', 'r', 'l', 'a').replace('?', '?2')}) RETURNING site"
)
"""``a``: how long before ``now`` a row falls due (``base.lead_of``: its priority's days)."""
_IDS: Final = "SELECT value FROM json_each(?)"
_LEASE_IDS: Final = (
    f"UPDATE urls SET status = 1, next_due = NULL, leased_at = ? WHERE id IN ({_IDS})"
)
_OUTCOME_ROWS: Final = (
    "SELECT id, fingerprint, refresh_interval, unchanged_fetches, importance, freshlane, "
    f"etag, last_modified, payload_digest FROM urls WHERE id IN ({_IDS})"
)
_OUTCOME_COLUMNS: Final = (
    "id",
    "status",
    "http_status",
    "fetched_at",
    "lane",
    "fingerprint",
    "refresh_interval",
    "unchanged_fetches",
    "next_due",
    "etag",
    "last_modified",
    "payload_digest",
)
_WRITE_OUTCOMES: Final = (
    "UPDATE urls SET "
    + ", ".join(f"{c} = v.{c}" for c in _OUTCOME_COLUMNS[1:])
    + f", leased_at = NULL FROM ({_items(*_OUTCOME_COLUMNS)}) AS v WHERE urls.id = v.id"
)
_ADD_HORIZON: Final = (
    "INSERT INTO horizon_urls (canonical, site, first_seen, inlinks) "
    f"SELECT c, s, ?1, n FROM ({_items('c', 's', 'n').replace('?', '?2')}) WHERE true "
    "ON CONFLICT (canonical) DO UPDATE SET inlinks = inlinks + excluded.inlinks"
)
_ADD_HORIZON_SITES: Final = (
    "INSERT INTO sites (site, state, added_at) SELECT value, 'horizon', ? FROM json_each(?) "
    "WHERE true ON CONFLICT (site) DO NOTHING"
)
_ADD_EDGES: Final = (
    f"INSERT INTO host_links (src, dst, links) {_items('s', 'd', 'n')} "
    "ON CONFLICT (src, dst) DO UPDATE SET links = links + excluded.links"
)
_UPGRADE_LANE: Final = (
    "UPDATE urls SET lane = ?1, next_due = min(next_due, ?2) "
    "WHERE canonical = ?3 AND status = 0 AND lane > ?1"
)
_SCHEDULE_COLUMNS: Final = (
    "id, canonical, site, depth, status, lane, next_due, refresh_interval, fingerprint, "
    "unchanged_fetches, importance, freshlane, fetched_at, http_status, etag, last_modified, "
    "payload_digest"
)


WAL_CHECKPOINT_PAGES: Final = 10_000
"""Pages the write-ahead log holds before a commit copies them into the database (SQLite's
default is 1,000). A crawl rewrites the same index and row pages batch after batch; each
checkpoint copies a page once however often it changed since the last, so a longer log
copies fewer: the crawl-shaped store load 70-85 -> 65-68 ms of CPU a cycle, for a log of
~55 MB instead of ~18 (docs/frontier-store.md)."""


def _failed(exc: sqlite3.Error) -> FrontierError:
    """A busy or locked file is transient (another process writes it: ``FrontierUnavailable``,
    waited for); anything else, a full disk included, stops the crawl with what it says. A
    failed transaction was rolled back: nothing of it is written."""
    text = str(exc)
    if isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text):
        return FrontierUnavailable(f"SQLite frontier busy: {text}")
    return FrontierError(f"SQLite frontier error: {text}")


class SqliteFrontier:
    """The embedded frontier store. ``cache_mib`` sizes SQLite's page cache."""

    def __init__(
        self,
        path: Path,
        *,
        refresh_policy: RefreshPolicy = DEFAULT_REFRESH_POLICY,
        cache_mib: int = 64,
    ) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._policy = refresh_policy
        self._journal_in_memory = False
        try:
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            use_wal(self._db, 5.0)  # the connection's own busy timeout (sqlite3's default)
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(f"PRAGMA cache_size=-{max(1, cache_mib) * 1024}")
            self._db.execute(f"PRAGMA wal_autocheckpoint={WAL_CHECKPOINT_PAGES}")
            self._migrate()
        except sqlite3.DatabaseError as exc:
            raise FrontierError(f"cannot open the frontier store {path}: {exc}") from exc

    def _migrate(self) -> None:
        version = int(self._db.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            raise FrontierError(
                f"store schema version {version} is newer than this courtier ({SCHEMA_VERSION})"
            )
        if version < 1:
            self._upgrade()
        if version < SCHEMA_VERSION:
            self._add_validators()
        self._db.execute(_CLOCKS_SCHEMA)
        self._db.execute(_ROBOTS_SCHEMA)
        origin_tables.create_tables(self._db)
        for statement in controls.SQLITE_TABLES:
            self._db.execute(statement)
        present = {row[1] for row in self._db.execute("PRAGMA table_info(site_controls)")}
        for name, declaration in controls.LATER_COLUMNS:
            if name not in present:  # a store made before the column was
                self._db.execute(f"ALTER TABLE site_controls ADD COLUMN {name} {declaration}")
        self._db.execute(observations.SQLITE_TABLE)
        self._db.execute(fresh.SQLITE_TABLE)
        self._db.execute(spend.SQLITE_TABLE)

    def _upgrade(self) -> None:
        with self._transaction():
            for statement in _SCHEMA_V0.split(";"):
                if statement.strip():
                    self._db.execute(statement)
            present = {row[1] for row in self._db.execute("PRAGMA table_info(urls)")}
            for name, declaration in _V1_COLUMNS:
                if name not in present:
                    self._db.execute(f"ALTER TABLE urls ADD COLUMN {name} {declaration}")
            initial = self._policy.ordinary.initial
            # Rows of a version-0 store: queued URLs are due since their discovery, fetched
            # ones one initial interval after their fetch; leased ones wait for release_leases.
            self._db.execute(
                "UPDATE urls SET next_due = discovered_at WHERE status = 0 AND next_due IS NULL"
            )
            self._db.execute(
                "UPDATE urls SET lane = ?, refresh_interval = ?, "
                "next_due = coalesce(fetched_at, discovered_at) + ? "
                "WHERE status = 2 AND next_due IS NULL AND refresh_interval IS NULL",
                (int(UrlLane.REFRESH), initial, initial),
            )
            self._db.execute(_DUE_INDEX)
            self._db.execute("PRAGMA user_version = 1")

    def _add_validators(self) -> None:
        """Version 1 -> 2: the validator columns, NULL for every row."""
        with self._transaction():
            present = {row[1] for row in self._db.execute("PRAGMA table_info(urls)")}
            for name, declaration in _V2_COLUMNS:
                if name not in present:
                    self._db.execute(f"ALTER TABLE urls ADD COLUMN {name} {declaration}")
            self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    @contextmanager
    def _transaction(self, rows: int | None = None) -> Iterator[None]:
        """One write transaction, taken up front (no lock upgrade half-way), rolled back on
        any error so a failed batch leaves nothing half-written. ``rows``: what a batch
        writes at most, known in advance (None: unbounded); see the module's docstring."""
        in_memory = rows is not None and rows <= JOURNAL_IN_MEMORY_ROWS
        try:
            if in_memory is not self._journal_in_memory:
                # Read when the transaction begins; switched only between batch kinds.
                self._db.execute(f"PRAGMA temp_store={'MEMORY' if in_memory else 'DEFAULT'}")
                self._journal_in_memory = in_memory
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            raise _failed(exc) from exc

    def close(self) -> None:
        self._db.close()

    # -- sites -----------------------------------------------------------------------------

    def add_sites(self, sites: Iterable[str], state: str, now: float) -> None:
        with self._transaction():
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
        with self._transaction():
            self._db.execute("UPDATE sites SET state = ? WHERE site = ?", (state, site))

    def site_states(self) -> dict[str, str]:
        return dict(self._db.execute("SELECT site, state FROM sites").fetchall())

    # -- an operator's controls (``courtier.frontier.controls``) ---------------------------

    def record_control(
        self,
        action: controls.ControlAction,
        control: controls.SiteControl | controls.OriginControl | None = None,
        states: Mapping[str, str] | None = None,
    ) -> int:
        with self._transaction():
            return controls.write_control(self._db.execute, action, control, states or {})

    def control_actions(self, after: int = 0, limit: int = 1000) -> list[controls.ControlAction]:
        check_limit(limit)
        return controls.actions_from(self._db.execute(controls.ACTIONS_AFTER, (after, limit)))

    def last_actions(self, limit: int = 10, target: str = "") -> list[controls.ControlAction]:
        check_limit(limit)
        rows = self._db.execute(controls.LAST_ACTIONS, (target, target, limit))
        return controls.actions_from(rows)

    def site_controls(self) -> dict[str, controls.SiteControl]:
        return controls.controls_from(self._db.execute(controls.CONTROLS))

    def fresh_sources(self) -> list[fresh.FreshSource]:
        return fresh.sources_from(self._db.execute(fresh.SELECT))

    def save_fresh(
        self, sources: Sequence[fresh.FreshSource], scheduled: Sequence[fresh.FreshSource]
    ) -> None:
        with self._transaction():
            self._db.executemany(fresh.UPSERT, [fresh.row(s) for s in sources])
            self._db.executemany(fresh.SCHEDULE, [fresh.schedule_row(s) for s in scheduled])

    def set_hand_sources(self, canonicals: Sequence[str], interval: float, now: float) -> None:
        with self._transaction():
            self._db.execute(fresh.FORGET_HAND)
            self._db.executemany(fresh.HAND, [(interval, now, now, c) for c in canonicals])

    def origin_controls(self) -> dict[str, controls.OriginControl]:
        return controls.origin_controls_from(self._db.execute(controls.ORIGIN_CONTROLS))

    def save_observations(self, found: Sequence[observations.Observation], now: float) -> None:
        with self._transaction():
            observations.write(self._db.execute, found, now)

    def observations_after(
        self, after: int, worker: str, limit: int = 1000
    ) -> list[observations.Observation]:
        check_limit(limit)
        rows = self._db.execute(observations.AFTER, (after, worker, limit))
        return observations.observations_from(rows)

    # -- writing ---------------------------------------------------------------------------

    def write_batch(
        self,
        new_urls: Sequence[NewUrl],
        outcomes: Sequence[Outcome],
        horizon: Sequence[HorizonLink],
        now: float,
        *,
        host_edges: Sequence[HostEdge] = (),
    ) -> list[str]:
        rows = len(new_urls) + len(outcomes) + len(horizon) + len(host_edges)
        with self._transaction(rows):
            fed, _ = self._insert(new_urls, now)
            self._apply_outcomes(outcomes)
            self._record_horizon(horizon, now)
            self._add_edges(host_edges)
        return sorted(fed)

    def ingest(self, new_urls: Sequence[NewUrl], now: float) -> Ingested:
        with self._transaction(len(new_urls)):
            fed, inserted = self._insert(new_urls, now)
        return Ingested(len(new_urls), inserted, tuple(sorted(fed)))

    def _insert(self, new_urls: Sequence[NewUrl], now: float) -> tuple[set[str], int]:
        """Insert the rows (inside the caller's transaction), knowing exactly which sites
        really received a new URL; then move queued URLs offered in a more urgent lane to it.
        Returns the sites fed and the rows inserted."""
        if not new_urls:
            return set(), 0
        rows = _json(
            (
                u.canonical,
                u.fetch_url,
                u.site,
                u.depth,
                u.redirects,
                int(u.lane),
                lead_of(u.priority),
            )
            for u in new_urls
        )
        sites = [row[0] for row in self._db.execute(_INSERT_URLS, (now, rows))]
        urgent = upgrades_by_canonical(u for u in new_urls if u.lane < UrlLane.DISCOVERY)
        if urgent:
            self._db.executemany(
                _UPGRADE_LANE, [(int(u.lane), now, u.canonical) for u in urgent.values()]
            )
        return set(sites), len(sites)

    def record_fetch(self, outcomes: Sequence[Outcome]) -> None:
        with self._transaction(len(outcomes)):
            self._apply_outcomes(outcomes)

    def _apply_outcomes(self, outcomes: Sequence[Outcome]) -> None:
        """Read every URL's stored state in one statement, schedule in Python (a second
        outcome for a URL builds on the first), write back in one statement."""
        if not outcomes:
            return
        ids = _json(sorted({o.url_id for o in outcomes}))
        stored = {
            row[0]: ScheduleRow(
                row[1], row[2], row[3], Importance(row[4]), bool(row[5]), row[6], row[7], row[8]
            )
            for row in self._db.execute(_OUTCOME_ROWS, (ids,))
        }
        updates: dict[int, list[Any]] = {}
        for outcome in outcomes:
            row = stored.get(outcome.url_id)
            if row is None:
                continue
            new = schedule_after(row, outcome, self._policy)
            stored[outcome.url_id] = new.stored(row.importance, row.freshlane)
            # UPDATE ... FROM applies one source row per URL: the last outcome's, which
            # already built on the earlier ones.
            updates[outcome.url_id] = list(new.written(outcome))
        if updates:
            self._db.execute(_WRITE_OUTCOMES, (_json(updates.values()),))

    def _record_horizon(self, horizon: Sequence[HorizonLink], now: float) -> None:
        if not horizon:
            return
        inlinks: dict[str, list[Any]] = {}
        for link in horizon:
            seen = inlinks.get(link.canonical)
            if seen is None:
                inlinks[link.canonical] = [link.canonical, link.site, 1]
            else:
                seen[2] += 1
        self._db.execute(_ADD_HORIZON, (now, _json(inlinks.values())))
        self._db.execute(_ADD_HORIZON_SITES, (now, _json(sorted({h.site for h in horizon}))))
        self._add_edges([HostEdge(h.from_site, h.site) for h in horizon])

    def _add_edges(self, edges: Sequence[HostEdge]) -> None:
        totals: dict[tuple[str, str], int] = {}
        for edge in edges:
            if edge.links < 0:
                raise FrontierError(f"negative link count for {edge.src} -> {edge.dst}")
            if edge.links:
                totals[edge.src, edge.dst] = totals.get((edge.src, edge.dst), 0) + edge.links
        if totals:
            rows = [(src, dst, links) for (src, dst), links in totals.items()]
            self._db.execute(_ADD_EDGES, (_json(rows),))

    def recrawl(self, urls: Sequence[NewUrl], now: float) -> int:
        with self._transaction():
            before = self._db.total_changes
            self._db.executemany(
                "INSERT INTO urls (canonical, fetch_url, site, depth, redirects, status, "
                "discovered_at, next_due, lane) VALUES (?, ?, ?, ?, ?, 0, ?, ?, ?) "
                "ON CONFLICT (canonical) DO UPDATE SET lane = excluded.lane, "
                "next_due = excluded.next_due WHERE urls.status != 1",
                [
                    (u.canonical, u.fetch_url, u.site, u.depth, u.redirects, now, now, 0)
                    for u in upgrades_by_canonical(urls).values()
                ],
            )
            return self._db.total_changes - before

    def set_freshlane(self, urls: Sequence[NewUrl], interval: float, now: float) -> int:
        if not (math.isfinite(interval) and interval > 0):
            raise FrontierError(f"freshlane interval must be positive and finite, got {interval}")
        lane = int(UrlLane.FRESHLANE)
        with self._transaction():
            before = self._db.total_changes
            self._db.executemany(
                "INSERT INTO urls (canonical, fetch_url, site, depth, redirects, status, "
                "discovered_at, next_due, lane, freshlane, refresh_interval) "
                "VALUES (?, ?, ?, ?, ?, 0, ?, ?, ?, 1, ?) "
                "ON CONFLICT (canonical) DO UPDATE SET freshlane = 1, "
                "refresh_interval = excluded.refresh_interval, "
                "lane = CASE WHEN urls.status = 1 THEN urls.lane ELSE excluded.lane END, "
                "next_due = CASE WHEN urls.status = 1 THEN NULL "
                "ELSE min(coalesce(urls.next_due, excluded.next_due), excluded.next_due) END",
                [
                    (
                        u.canonical,
                        u.fetch_url,
                        u.site,
                        u.depth,
                        u.redirects,
                        now,
                        now,
                        lane,
                        interval,
                    )
                    for u in upgrades_by_canonical(urls).values()
                ],
            )
            return self._db.total_changes - before

    def set_importance(
        self, canonicals: Iterable[str], importance: Importance, now: float
    ) -> list[str]:
        unknown: list[str] = []
        lane = int(refresh_lane(False, importance))
        with self._transaction():
            for canonical in dict.fromkeys(canonicals):
                row = self._db.execute(
                    "SELECT id, fingerprint, refresh_interval, next_due, unchanged_fetches "
                    "FROM urls WHERE canonical = ?",
                    (canonical,),
                ).fetchone()
                if row is None:
                    unknown.append(canonical)
                    continue
                url_id, fingerprint, interval, next_due, unchanged = row
                if interval is not None and next_due is not None:
                    state = reclassify(
                        RefreshState(fingerprint, interval, next_due, unchanged),
                        importance,
                        self._policy,
                        now,
                    )
                    interval, next_due = state.interval, state.next_due
                self._db.execute(
                    "UPDATE urls SET importance = ?, refresh_interval = ?, next_due = ?, "
                    f"{CLASS_LANE} WHERE id = ?",
                    (importance.value, interval, next_due, lane, url_id),
                )
        return unknown

    def evict_deeper(self, site: str, max_depth: int) -> int:
        with self._transaction():
            return self._db.execute(
                "DELETE FROM urls WHERE site = ? AND status = 0 AND depth > ?", (site, max_depth)
            ).rowcount

    # -- crawling --------------------------------------------------------------------------

    def due(self, limit_per_host: int, hosts: Sequence[str], now: float) -> dict[str, list[DueUrl]]:
        return {
            host: [DueUrl(r[0], r[1], r[2], r[3], r[4], r[5], UrlLane(r[6]), *r[7:]) for r in rows]
            for host, rows in self._due_rows(limit_per_host, hosts, now)
        }

    def _due_rows(
        self, limit_per_host: int, hosts: Sequence[str], now: float
    ) -> Iterator[tuple[str, list[tuple[Any, ...]]]]:
        """Per host with due URLs, its rows (``_DUE_COLUMNS``) in serving order."""
        check_limit(limit_per_host)
        if limit_per_host == 0:
            return
        execute = self._db.cursor().execute
        for host in dict.fromkeys(hosts):
            rows = execute(_DUE_ONE_HOST, (host, now, limit_per_host)).fetchall()
            if rows:
                if len(rows) > 1:
                    rows.sort(key=_serving_order)
                    del rows[limit_per_host:]
                yield host, rows

    def lease_due(
        self,
        limit_per_host: int,
        hosts: Sequence[str],
        now: float,
        fences: Mapping[str, Fence] | None = None,
    ) -> dict[str, list[LeasedUrl]]:
        with self._transaction(limit_per_host * len(hosts)):
            due = {
                host: [
                    LeasedUrl(r[0], r[2], r[3], r[4], r[5], _LANES[r[6]], r[8], r[9], r[10], r[11])
                    for r in rows
                ]
                for host, rows in self._due_rows(limit_per_host, hosts, now)
            }
            if due:
                ids = _json(u.id for urls in due.values() for u in urls)
                self._db.execute(_LEASE_IDS, (now, ids))
        return due

    def lease(
        self, site: str, limit: int, now: float | None = None, fence: Fence | None = None
    ) -> list[LeasedUrl]:
        """Queued URLs of ``site``, shallowest first, marked leased in the same transaction
        (one machine's store: no shard leases, ``fence`` is not checked)."""
        with self._transaction(limit):
            rows = self._db.execute(
                "SELECT id, fetch_url, site, depth, redirects, lane FROM urls "
                "WHERE site = ? AND status = 0 ORDER BY depth, id LIMIT ?",
                (site, limit),
            ).fetchall()
            self._db.executemany(
                "UPDATE urls SET status = 1, next_due = NULL, leased_at = ? WHERE id = ?",
                [(now, row[0]) for row in rows],
            )
        return [LeasedUrl(r[0], r[1], r[2], r[3], r[4], UrlLane(r[5])) for r in rows]

    def release_leases(
        self,
        leased_before: float | None = None,
        *,
        sites: Sequence[str] | None = None,
        ids: Sequence[int] | None = None,
        fence: Fence | None = None,
    ) -> int:
        """Return leased URLs to the due set (all, or those leased before ``leased_before``;
        a lease of unknown age counts as old); due since they were leased. One machine's
        store: no shard leases, ``fence`` is not checked."""
        condition = "status = 1"
        params: tuple[object, ...] = ()
        if leased_before is not None:
            condition += " AND (leased_at IS NULL OR leased_at < ?)"
            params = (leased_before,)
        if sites is not None:
            condition += f" AND site IN ({', '.join('?' * len(sites))})"
            params += tuple(sites)
        if ids is not None:
            condition += f" AND id IN ({', '.join('?' * len(ids))})"
            params += tuple(ids)
        if (sites is not None and not sites) or (ids is not None and not ids):
            return 0
        with self._transaction():
            return self._db.execute(
                "UPDATE urls SET status = CASE WHEN fetched_at IS NULL THEN 0 ELSE 2 END, "
                "next_due = coalesce(leased_at, fetched_at, discovered_at), leased_at = NULL "
                f"WHERE {condition}",
                params,
            ).rowcount

    # -- reading ---------------------------------------------------------------------------

    def sites_with_queued(self) -> list[str]:
        rows = self._db.execute("SELECT DISTINCT site FROM urls WHERE status = 0")
        return [row[0] for row in rows]

    def site_sizes(self, sites: Sequence[str] | None = None) -> dict[str, tuple[int, int]]:
        where, params = _sites_in(sites, "WHERE")
        rows = self._db.execute(
            "SELECT site, COUNT(*), SUM(CASE WHEN status = 0 AND lane = 3 THEN 1 ELSE 0 END) "
            f"FROM urls {where} GROUP BY site",
            params,
        )
        return {row[0]: (int(row[1]), int(row[2])) for row in rows}

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
            "SELECT dst, SUM(links) AS n FROM host_links GROUP BY dst ORDER BY n DESC, dst LIMIT ?",
            (limit,),
        )
        return [(row[0], int(row[1])) for row in rows]

    def host_links(self) -> list[HostEdge]:
        rows = self._db.execute("SELECT src, dst, links FROM host_links ORDER BY src, dst")
        return [HostEdge(r[0], r[1], int(r[2])) for r in rows]

    def schedule_of(self, canonical: str) -> PageSchedule | None:
        row = self._db.execute(
            f"SELECT {_SCHEDULE_COLUMNS} FROM urls WHERE canonical = ?", (canonical,)
        ).fetchone()
        return None if row is None else PageSchedule.from_row(row)

    # -- budgets (``courtier.frontier.spend``) -----------------------------------------------

    def spent(self) -> dict[str, int]:
        return spend.totals(self._db.execute(spend.SELECT))

    def add_spent(self, amounts: Mapping[str, int]) -> dict[str, int]:
        with self._transaction():
            self._db.executemany(spend.SQLITE_ADD, spend.rows(amounts))
            return spend.totals(self._db.execute(spend.SELECT))

    def fetched_per_site(self, sites: Sequence[str] | None = None) -> dict[str, int]:
        where, params = _sites_in(sites, "AND")
        rows = self._db.execute(f"{spend.FETCHED} {where} GROUP BY site", params)
        return {str(row[0]): int(row[1]) for row in rows}

    # -- clock floors ----------------------------------------------------------------------

    def save_clock_floors(self, floors: Mapping[str, float], now: float) -> None:
        rows = future_floors(floors, now)
        with self._transaction():
            self._db.execute("DELETE FROM limit_clocks WHERE not_before <= ?", (now,))
            self._db.executemany(_RAISE_CLOCK, rows)

    def save_robots(self, answers: Sequence[StoredRobots]) -> None:
        with self._transaction():
            self._db.executemany(
                "INSERT OR REPLACE INTO robots_answers VALUES (?, ?, ?, ?, ?)",
                [(a.site, a.http_status, a.body, a.fetched_at, a.expires_at) for a in answers],
            )

    def load_robots(
        self, now: float, sites: Sequence[str] | None = None
    ) -> dict[str, StoredRobots]:
        where, params = _sites_in(sites, "AND")
        rows = self._db.execute(
            "SELECT site, http_status, body, fetched_at, expires_at FROM robots_answers "
            f"WHERE expires_at > ? {where}",
            (now, *params),
        )
        return {
            str(row[0]): StoredRobots(row[0], row[1], bytes(row[2]), row[3], row[4]) for row in rows
        }

    def refresh_lastmod(self, changes: Sequence[tuple[str, float]], now: float) -> int:
        with self._transaction():
            before = self._db.total_changes
            self._db.executemany(
                "UPDATE urls SET next_due = min(next_due, ?) WHERE canonical = ? "
                "AND status = 2 AND next_due IS NOT NULL AND fetched_at < ?",
                [(now, canonical, lastmod) for canonical, lastmod in changes],
            )
            return self._db.total_changes - before

    def load_clock_floors(self, now: float) -> dict[str, float]:
        rows = self._db.execute(
            "SELECT key, not_before FROM limit_clocks WHERE not_before > ?", (now,)
        )
        return {str(key): float(when) for key, when in rows}

    # -- origins ---------------------------------------------------------------------------

    def save_origins(
        self,
        assignments: Sequence[Assignment],
        checked_at: float,
        recheck_at: Mapping[str, float],
    ) -> list[OriginChange]:
        with self._transaction():
            return origin_tables.save_assignments(self._db, assignments, checked_at, recheck_at)

    def origins(self) -> dict[str, str]:
        return origin_tables.read_origins(self._db)


def _serving_order(row: tuple[Any, ...]) -> tuple[int, float, int]:
    return row[6], row[7], row[0]


_LANES: Final = {int(lane): lane for lane in UrlLane}
_ENCODE: Final = json.JSONEncoder(ensure_ascii=False, check_circular=False).encode


def _json(values: Iterable[Any]) -> str:
    """A JSON array for ``json_each``: UTF-8 as is (SQLite's own escapes cover the rest)."""
    return _ENCODE(list(values))


def _sites_in(sites: Sequence[str] | None, joiner: str) -> tuple[str, tuple[str, ...]]:
    """A ``site IN (...)`` condition after ``joiner`` (WHERE, AND), or none for all sites."""
    if sites is None:
        return "", ()
    return f"{joiner} site IN ({', '.join('?' * len(sites))})", tuple(sites)
