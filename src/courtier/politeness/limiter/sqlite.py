"""SQLite limiter: TATs in one table of a SQLite file, shared by the processes of one machine.

A booking is one ``BEGIN IMMEDIATE`` transaction: it takes the database's write lock first,
reads the TATs of all its keys in one statement, runs ``gcra.book`` and writes the new TATs
back before committing, so concurrent bookers (tasks or processes) are serialised and a
multi-key booking is all-or-nothing. The clock is read after the lock is held, so time spent
waiting for another process never produces a slot that starts in the past. ``raise_floor`` is
one upsert statement (``tat = max(tat, floor)``) in one transaction, and ``charge`` one
``BEGIN IMMEDIATE`` transaction that reads the clock under the lock, like a booking.

The database runs in WAL mode with ``synchronous=NORMAL``: a power cut may lose the last
bookings, which only means a key is booked from a slightly earlier TAT after a restart.
SQLite calls block, so they run on one dedicated thread and the event loop never waits on
the file lock.
"""

from __future__ import annotations

import asyncio
import math
import os
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from courtier.politeness.gcra import Booking, Limit, book, charge_after, check_request
from courtier.politeness.limiter.base import (
    DEFAULT_PRUNE_MARGIN,
    BookingRequest,
    BookingResult,
    Clock,
    Fence,
    LimiterError,
    book_each,
    booking_time,
    check_charge,
    check_floors,
    check_time,
)
from courtier.runtime.sqlite_wal import use_wal

_T = TypeVar("_T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS limiter_tat (
    key TEXT PRIMARY KEY,
    tat REAL NOT NULL
) WITHOUT ROWID
"""
_UPSERT = (
    "INSERT INTO limiter_tat (key, tat) VALUES (?, ?) "
    "ON CONFLICT (key) DO UPDATE SET tat = excluded.tat"
)
_RAISE = (
    "INSERT INTO limiter_tat (key, tat) VALUES (?, ?) "
    "ON CONFLICT (key) DO UPDATE SET tat = max(tat, excluded.tat)"
)


class SqliteLimiter:
    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        clock: Clock = time.time,
        busy_timeout: float = 30.0,
    ) -> None:
        """Open (and create if needed) the limiter table in the SQLite file at ``path``.

        ``busy_timeout`` is how long a booking waits for another process's transaction.
        """
        self._clock = clock
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="courtier-limiter-sqlite")
        try:
            self._db = sqlite3.connect(
                path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
            use_wal(self._db, busy_timeout)
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(_SCHEMA)
        except sqlite3.Error as exc:
            self._executor.shutdown(wait=False)
            raise LimiterError(
                f"cannot open the limiter database {os.fspath(path)!r}: {exc}"
            ) from exc
        self._selects: dict[int, str] = {}

    @property
    def clock(self) -> Clock:
        return self._clock

    async def _run(self, work: Callable[[], _T]) -> _T:
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, work)
        except sqlite3.Error as exc:
            raise LimiterError(f"limiter database error: {exc}") from exc

    def _select(self, count: int) -> str:
        sql = self._selects.get(count)
        if sql is None:
            marks = ", ".join("?" * count)
            sql = f"SELECT key, tat FROM limiter_tat WHERE key IN ({marks})"
            self._selects[count] = sql
        return sql

    def _write(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        """``work`` in one ``BEGIN IMMEDIATE`` transaction on the calling thread."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            result = work(db)
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        return result

    def book_blocking(
        self,
        limits: Sequence[Limit],
        cost: float,
        *,
        max_lead: float = math.inf,
        slack: float | None = None,
        fence: Fence | None = None,
        start_after: float | None = None,
    ) -> Booking:
        """One booking transaction on the calling thread (``book`` runs this off the loop)."""
        keys = [limit.key for limit in limits]

        def write(db: sqlite3.Connection) -> Booking:
            tats = dict(db.execute(self._select(len(keys)), keys).fetchall())
            now = booking_time(self._clock, start_after)
            booking, updates = book(tats, now, limits, cost, max_lead=max_lead, slack=slack)
            if updates:
                db.executemany(_UPSERT, updates.items())
            return booking

        return self._write(write)

    async def book(
        self,
        limits: Sequence[Limit],
        cost: float,
        *,
        max_lead: float = math.inf,
        slack: float | None = None,
        fence: Fence | None = None,
        start_after: float | None = None,
    ) -> Booking:
        check_request(limits, cost, max_lead, slack)
        limits = tuple(limits)
        return await self._run(
            lambda: self.book_blocking(
                limits, cost, max_lead=max_lead, slack=slack, start_after=start_after
            )
        )

    async def book_many(self, requests: Sequence[BookingRequest]) -> list[BookingResult]:
        return await book_each(self, requests)

    async def raise_floor(self, floors: Mapping[str, float]) -> None:
        rows = sorted(check_floors(floors).items())
        if not rows:
            return

        def write(db: sqlite3.Connection) -> None:
            db.executemany(_RAISE, rows)

        await self._run(lambda: self._write(write))

    async def charge(self, limit: Limit, cost: float) -> float:
        check_charge(limit, cost)

        def write(db: sqlite3.Connection) -> float:
            tats = dict(db.execute(self._select(1), (limit.key,)).fetchall())
            tat = charge_after(tats, self._clock(), limit, cost)
            db.execute(_UPSERT, (limit.key, tat))
            return tat

        return await self._run(lambda: self._write(write))

    async def keys_after(self, when: float) -> dict[str, float]:
        after = check_time("when", when)

        def read() -> dict[str, float]:
            query = "SELECT key, tat FROM limiter_tat WHERE tat > ?"
            return dict(self._db.execute(query, (after,)).fetchall())

        return await self._run(read)

    async def tats(self, keys: Sequence[str]) -> dict[str, float]:
        wanted = list(keys)
        if not wanted:
            return {}

        def read() -> dict[str, float]:
            return dict(self._db.execute(self._select(len(wanted)), wanted).fetchall())

        return await self._run(read)

    async def prune(self, margin: float = DEFAULT_PRUNE_MARGIN) -> int:
        def delete() -> int:
            horizon = self._clock() - margin
            return self._db.execute("DELETE FROM limiter_tat WHERE tat < ?", (horizon,)).rowcount

        return await self._run(delete)

    async def close(self) -> None:
        try:
            await self._run(self._db.close)
        finally:
            self._executor.shutdown(wait=True)
