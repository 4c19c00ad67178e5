"""PostgreSQL limiter: TATs in one table, one atomic statement per booking (or batch).

A booking is one statement (``_BOOK``), so one transaction, that runs the arithmetic of
``courtier.politeness.gcra.book`` in SQL:

1. ``locked``: lock the keys' rows in key order (``ORDER BY key FOR UPDATE``; the lock is
   taken above the sort) and read their latest TATs. Two bookers of overlapping keys queue on
   the first key they share, so they can never deadlock, and a multi-key booking sees every
   key as it is after the bookings it waited for;
2. ``plan``: ``start = greatest(now, max(tat - burst))``, the saturated keys, and how many
   rows were found;
3. ``booked``: ``tat = greatest(tat, start) + charge`` for every key, only if every key has a
   row and ``start`` is within ``max_lead`` (otherwise nothing is written).

``raise_floor`` is one upsert (``tat = greatest(tat, floor)``) and ``charge`` one upsert
(``tat = greatest(tat, now) + charge``) returning the new TAT; both write the keys in key
order, like a booking's lock, so they queue behind bookings of the same keys (and bookings
behind them) instead of deadlocking, and a booking that waited for a floor sees it.

A key seen for the first time has no row to lock: the booking then inserts ``-Infinity``
rows for its keys (which changes no booking) and runs the statement again. The charges
(``cost * T`` or ``T``) are computed in Python by ``KeyParams.charge`` so both implementations
add the very same doubles. Sessions run with ``synchronous_commit = off``: limiter rows are
soft state, and a crash that loses the last few hundred milliseconds of bookings only lets
those keys be booked from a slightly earlier TAT.

One statement with data-modifying CTEs measured about twice the throughput of the same logic
in a PL/pgSQL function (three statements) under pgbench on the benchmark machine.

``book_many`` books a batch (the scheduler's queue of lanes waiting to book) in one round
trip: ``courtier_book_many``, a PL/pgSQL function, locks every key of the batch in key order
first (so batches and bookings queue on the first key they share, never deadlock), then runs
each booking's arithmetic in the batch's order, each seeing the TATs the ones before it
wrote, its fence checked like ``_BOOK``'s. A key whose row it did not lock (one another
session inserted since) counts as missing: that booking writes nothing and is asked again
after ``_ADD_KEYS``, as ``_BOOK``'s is (each statement of a function sees rows committed
since the one before, so an unlocked row could have changed under it). Equal to that many
``book`` calls one after another with nobody booking between them; what the client pays per
round trip (psycopg, the event loop, the socket) is paid once per batch, which is most of a
worker's CPU beside a booking (``python bench/bench_rebook.py --size web --sites 2000
--page-bytes 6000 --duration 60 --store sqlite postgresql``).

Connections are a small fixed set; concurrent ``book`` calls take turns on them. A session
lost (a server restart, a failover) is replaced at its next use; while the server cannot be
reached every call raises ``LimiterUnavailable`` (nothing is booked, so nothing is sent). After
each failed attempt calls raise it without trying for a backoff that doubles up to 5 s, and
then one caller tries while the others go on raising it (callers that were waiting for a
session when the outage was found raise it too), so thousands of lanes waiting for a booking
do not each dial a server that is down.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import psycopg

from courtier.politeness.gcra import Booking, Limit, Refusal, Slot, check_request, slot_slack
from courtier.politeness.limiter.base import (
    DEFAULT_PRUNE_MARGIN,
    SHARD_LEASES,
    BookingRequest,
    BookingResult,
    Clock,
    Fence,
    LeaseLost,
    LimiterError,
    LimiterUnavailable,
    booking_time,
    check_charge,
    check_floors,
    check_time,
)
from courtier.runtime.pg_arrays import float_array, int_array, text_array

log = logging.getLogger(__name__)

TABLE: Final = "courtier_limiter_tat"
_SCHEMA_LOCK: Final = 0x636F757274696572  # pg_advisory_xact_lock id ("courtier")

LEASES: Final = SHARD_LEASES

_SCHEMA: Final = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    key text PRIMARY KEY,
    tat double precision NOT NULL
) WITH (fillfactor = 50);
CREATE TABLE IF NOT EXISTS {LEASES} (
    shard integer PRIMARY KEY,
    owner text,
    token bigint NOT NULL DEFAULT 0,
    expires_at double precision NOT NULL DEFAULT 0
);
CREATE OR REPLACE FUNCTION courtier_book_many(
    p_keys text[], p_bursts float8[], p_charges float8[], p_ends integer[], p_nows float8[],
    p_leads float8[], p_shards integer[], p_owners text[], p_tokens bigint[]
) RETURNS TABLE (b_start float8, b_found integer, b_saturated text[], b_held boolean)
LANGUAGE plpgsql AS $$
DECLARE
    lo integer := 1;
    hi integer;
    p_now float8;
    locked text[];
BEGIN
    SELECT coalesce(array_agg(l.key), '{{}}') INTO locked FROM (
        SELECT t.key FROM {TABLE} AS t WHERE t.key = ANY (p_keys) ORDER BY t.key FOR UPDATE
    ) AS l;
    FOR i IN 1 .. coalesce(cardinality(p_ends), 0) LOOP
        hi := p_ends[i];
        p_now := p_nows[i];
        b_held := p_shards[i] IS NULL OR EXISTS (
            SELECT 1 FROM {LEASES} AS f
            WHERE f.shard = p_shards[i] AND f.owner = p_owners[i] AND f.token = p_tokens[i]
              AND f.expires_at > extract(epoch FROM clock_timestamp()));
        SELECT greatest(p_now, max(t.tat - r.burst)), count(*)::integer,
               coalesce(array_agg(t.key ORDER BY t.key)
                        FILTER (WHERE t.tat - r.burst - p_now > p_leads[i]), '{{}}')
          INTO b_start, b_found, b_saturated
          FROM unnest(p_keys[lo:hi], p_bursts[lo:hi]) AS r(key, burst)
          JOIN {TABLE} AS t ON t.key = r.key
         WHERE t.key = ANY (locked);
        IF b_held AND b_found = hi - lo + 1 AND b_start - p_now <= p_leads[i] THEN
            UPDATE {TABLE} AS t SET tat = greatest(t.tat, b_start) + r.charge
              FROM unnest(p_keys[lo:hi], p_charges[lo:hi]) AS r(key, charge)
             WHERE t.key = r.key;
        END IF;
        RETURN NEXT;
        lo := hi + 1;
    END LOOP;
END
$$
"""

_BOOK: Final = f"""
WITH req AS (
    SELECT * FROM unnest(%(keys)s::text[], %(bursts)s::float8[], %(charges)s::float8[])
        AS r(key, burst, charge)
), locked AS (
    SELECT t.key, t.tat FROM {TABLE} AS t
    WHERE t.key = ANY (%(keys)s::text[]) ORDER BY t.key FOR UPDATE
), plan AS (
    SELECT greatest(%(now)s::float8, max(l.tat - r.burst)) AS start,
           count(*) AS found,
           coalesce(array_agg(l.key ORDER BY l.key)
                    FILTER (WHERE l.tat - r.burst - %(now)s::float8 > %(lead)s::float8),
                    '{{}}') AS saturated
    FROM locked AS l JOIN req AS r ON r.key = l.key
), fenced AS (
    SELECT %(fshard)s::integer IS NULL OR EXISTS (
        SELECT 1 FROM {LEASES} AS f
        WHERE f.shard = %(fshard)s::integer AND f.owner = %(fowner)s::text
          AND f.token = %(ftoken)s::bigint
          AND f.expires_at > extract(epoch FROM clock_timestamp())
    ) AS held
), booked AS (
    UPDATE {TABLE} AS t SET tat = greatest(t.tat, plan.start) + r.charge
    FROM plan, req AS r, fenced
    WHERE t.key = r.key AND fenced.held
      AND plan.found = cardinality(%(keys)s::text[])
      AND plan.start - %(now)s::float8 <= %(lead)s::float8
    RETURNING 1
)
SELECT plan.start, plan.found, plan.saturated, fenced.held FROM plan, fenced
"""

_BOOK_MANY: Final = """
SELECT * FROM courtier_book_many(%(keys)s::text[], %(bursts)s::float8[], %(charges)s::float8[],
    %(ends)s::integer[], %(nows)s::float8[], %(leads)s::float8[], %(shards)s::integer[],
    %(owners)s::text[], %(tokens)s::bigint[])
"""

_ADD_KEYS: Final = f"""
INSERT INTO {TABLE} (key, tat) SELECT k, '-Infinity' FROM unnest(%s::text[]) AS k ORDER BY k
ON CONFLICT (key) DO NOTHING
"""

_RAISE_FLOOR: Final = f"""
INSERT INTO {TABLE} AS t (key, tat)
SELECT k, f FROM unnest(%(keys)s::text[], %(floors)s::float8[]) AS v(k, f) ORDER BY k
ON CONFLICT (key) DO UPDATE SET tat = greatest(t.tat, excluded.tat)
"""

_CHARGE: Final = f"""
INSERT INTO {TABLE} AS t (key, tat) VALUES (%(key)s, %(now)s::float8 + %(charge)s::float8)
ON CONFLICT (key) DO UPDATE SET tat = greatest(t.tat, %(now)s::float8) + %(charge)s::float8
RETURNING t.tat
"""

Params = Sequence[object] | dict[str, Any]


class PostgresLimiter:
    """Build it with ``await PostgresLimiter.connect(conninfo)``."""

    def __init__(
        self,
        connections: Sequence[psycopg.AsyncConnection[Any]],
        clock: Clock,
        conninfo: str,
        synchronous_commit: bool,
    ):
        self._clock = clock
        self._conninfo = conninfo
        self._synchronous_commit = synchronous_commit
        self._all = list(connections)
        self._idle: asyncio.Queue[psycopg.AsyncConnection[Any]] = asyncio.Queue()
        self._cursors: dict[psycopg.AsyncConnection[Any], psycopg.AsyncCursor[Any]] = {}
        for conn in self._all:
            self._idle.put_nowait(conn)
        self._outage: Outage | None = None

    @classmethod
    async def connect(
        cls,
        conninfo: str,
        *,
        clock: Clock = time.time,
        connections: int = 2,
        create_schema: bool = True,
        synchronous_commit: bool = False,
    ) -> PostgresLimiter:
        """Open ``connections`` sessions to ``conninfo`` (and create the table)."""
        if connections < 1:
            raise ValueError(f"connections must be at least 1, got {connections}")
        opened: list[psycopg.AsyncConnection[Any]] = []
        try:
            for _ in range(connections):
                opened.append(await _open(conninfo, synchronous_commit))
            if create_schema:
                await _create_schema(opened[0])
        except psycopg.Error as exc:
            for conn in opened:
                await conn.close()
            raise LimiterError(f"cannot set up the PostgreSQL limiter: {exc}") from exc
        return cls(opened, clock, conninfo, synchronous_commit)

    @property
    def clock(self) -> Clock:
        return self._clock

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
        keys = [limit.key for limit in limits]
        params: dict[str, Any] = {
            "keys": text_array(keys),
            "bursts": float_array(limit.params.burst for limit in limits),
            "charges": float_array(limit.params.charge(cost) for limit in limits),
            "lead": max_lead,
            "fshard": None if fence is None else fence.shard,
            "fowner": None if fence is None else fence.owner,
            "ftoken": None if fence is None else fence.token,
        }
        for _attempt in range(5):
            params["now"] = booking_time(self._clock, start_after)
            start, found, saturated, held = await self._fetch_one(_BOOK, params)
            if not held:
                raise LeaseLost(f"shard {fence.shard if fence else '?'} is no longer ours")
            if found == len(keys):
                break
            await self._fetch_all(_ADD_KEYS, (text_array(keys),), rows=False)
        else:
            raise LimiterError(f"the rows of {keys!r} keep disappearing (a concurrent prune?)")
        return _answer(limits, cost, max_lead, slack, params["now"], start, saturated)

    async def book_many(self, requests: Sequence[BookingRequest]) -> list[BookingResult]:
        for r in requests:
            check_request(r.limits, r.cost, r.max_lead, r.slack)
        results: dict[int, BookingResult] = {}
        pending = list(range(len(requests)))
        for _attempt in range(5):
            if not pending:
                break
            nows = [booking_time(self._clock, requests[i].start_after) for i in pending]
            rows = await self._fetch_all(
                _BOOK_MANY, _batch_params([requests[i] for i in pending], nows)
            )
            short: list[int] = []
            for index, now, (start, found, saturated, held) in zip(
                pending, nows, rows, strict=True
            ):
                r = requests[index]
                if not held:
                    shard = r.fence.shard if r.fence else "?"
                    results[index] = LeaseLost(f"shard {shard} is no longer ours")
                elif found < len(r.limits):
                    short.append(index)  # a key seen for the first time: rows, then again
                else:
                    results[index] = _answer(
                        r.limits, r.cost, r.max_lead, r.slack, now, start, saturated
                    )
            if short:
                keys = sorted({limit.key for i in short for limit in requests[i].limits})
                await self._fetch_all(_ADD_KEYS, (text_array(keys),), rows=False)
            pending = short
        if pending:
            keys = [limit.key for limit in requests[pending[0]].limits]
            raise LimiterError(f"the rows of {keys!r} keep disappearing (a concurrent prune?)")
        return [results[i] for i in range(len(requests))]

    async def raise_floor(self, floors: Mapping[str, float]) -> None:
        checked = check_floors(floors)
        if not checked:
            return
        keys = sorted(checked)
        params = {
            "keys": text_array(keys),
            "floors": float_array(checked[key] for key in keys),
        }
        await self._fetch_all(_RAISE_FLOOR, params, rows=False)

    async def charge(self, limit: Limit, cost: float) -> float:
        check_charge(limit, cost)
        params = {"key": limit.key, "now": self._clock(), "charge": limit.params.charge(cost)}
        (tat,) = await self._fetch_one(_CHARGE, params)
        return float(tat)

    async def keys_after(self, when: float) -> dict[str, float]:
        query = f"SELECT key, tat FROM {TABLE} WHERE tat > %s"
        return dict(await self._fetch_all(query, (check_time("when", when),)))

    async def tats(self, keys: Sequence[str]) -> dict[str, float]:
        query = f"SELECT key, tat FROM {TABLE} WHERE key = ANY (%s::text[]) AND tat > '-Infinity'"
        return dict(await self._fetch_all(query, (text_array(keys),)))

    async def prune(self, margin: float = DEFAULT_PRUNE_MARGIN) -> int:
        query = f"WITH gone AS (DELETE FROM {TABLE} WHERE tat < %s RETURNING 1) "
        query += "SELECT count(*) FROM gone"
        (count,) = await self._fetch_one(query, (self._clock() - margin,))
        return int(count)

    async def _replace(self, lost: psycopg.AsyncConnection[Any]) -> psycopg.AsyncConnection[Any]:
        self._cursors.pop(lost, None)
        fresh = await _open(self._conninfo, self._synchronous_commit)
        self._all[self._all.index(lost)] = fresh
        return fresh

    async def close(self) -> None:
        for conn in self._all:
            await conn.close()

    def _pass_outage(self) -> Outage | None:
        """``LimiterUnavailable`` while an outage's backoff lasts. Past it, this caller is
        the one that finds out whether the server is back, and the backoff is pushed on so
        the others wait for its answer: one caller at a time, not every lane of the crawl.
        Returns the outage this caller goes on in (None: there is none)."""
        outage = self._outage
        if outage is None:
            return None
        now = time.monotonic()
        if now < outage.retry_at:
            raise LimiterUnavailable(f"PostgreSQL limiter unreachable: {outage.error}")
        self._outage = outage = dataclasses.replace(outage, retry_at=now + outage.delay)
        return outage

    async def _fetch_one(self, query: str, params: Params) -> tuple[Any, ...]:
        rows = await self._fetch_all(query, params)
        return rows[0]

    async def _fetch_all(
        self, query: str, params: Params, *, rows: bool = True
    ) -> list[tuple[Any, ...]]:
        passed = self._pass_outage()
        conn = await self._idle.get()
        try:
            current = self._outage
            if current is not None and current is not passed:
                # The server was found unreachable while this caller waited for a session
                # (or another caller is finding out whether it is back): no attempt of its
                # own, or a crowd that queued before the outage would each dial it.
                raise LimiterUnavailable(f"PostgreSQL limiter unreachable: {current.error}")
            if conn.closed:  # lost earlier: a new session takes its place
                conn = await self._replace(conn)
            cursor = self._cursors.get(conn)
            if cursor is None:
                cursor = self._cursors[conn] = conn.cursor()
            await cursor.execute(query, params, prepare=True)
            found = await cursor.fetchall() if rows else []
        except psycopg.Error as exc:
            if isinstance(exc, psycopg.OperationalError) or conn.closed:
                if self._outage is passed:  # else another caller in flight recorded it
                    self._outage = Outage.after(passed, str(exc))
                raise LimiterUnavailable(f"PostgreSQL limiter unreachable: {exc}") from exc
            raise LimiterError(f"PostgreSQL limiter error: {exc}") from exc
        finally:
            self._idle.put_nowait(conn)
        if self._outage is not None:
            log.warning(
                "the PostgreSQL limiter is back after %.1f s",
                time.monotonic() - self._outage.since,
            )
            self._outage = None
        return found


@dataclass(frozen=True, slots=True)
class Outage:
    """The limiter's server unreachable since ``since`` (monotonic); asked again at
    ``retry_at``, with backoff and jitter."""

    since: float
    retry_at: float
    delay: float
    error: str

    @classmethod
    def after(cls, last: Outage | None, error: str) -> Outage:
        now = time.monotonic()
        if last is None:
            log.warning("the PostgreSQL limiter is unreachable; nothing is booked: %s", error)
            return cls(now, now + 0.25, 0.25, error)
        delay = min(last.delay * 2, 5.0)
        return cls(last.since, now + delay * random.uniform(0.5, 1.0), delay, error)


def _answer(
    limits: Sequence[Limit],
    cost: float,
    max_lead: float,
    slack: float | None,
    now: float,
    start: float,
    saturated: Sequence[str],
) -> Booking:
    keys = tuple(limit.key for limit in limits)
    if start - now > max_lead:
        held = set(saturated)  # reported in the caller's order, as gcra.book does
        return Refusal(start - max_lead, start, tuple(k for k in keys if k in held))
    return Slot(start, start + slot_slack(limits, slack), keys, cost)


def _batch_params(requests: Sequence[BookingRequest], nows: Sequence[float]) -> dict[str, Any]:
    """``courtier_book_many``'s arguments: the requests' keys one after another (``ends``:
    where each request's keys end, 1-based), one time, lead and fence per request."""
    limits = [limit for r in requests for limit in r.limits]
    ends, end = [], 0
    for r in requests:
        end += len(r.limits)
        ends.append(end)
    fences = [r.fence for r in requests]
    return {
        "keys": text_array(limit.key for limit in limits),
        "bursts": float_array(limit.params.burst for limit in limits),
        "charges": float_array(limit.params.charge(r.cost) for r in requests for limit in r.limits),
        "ends": int_array(ends),
        "nows": float_array(nows),
        "leads": float_array(r.max_lead for r in requests),
        "shards": int_array(None if f is None else f.shard for f in fences),
        "owners": text_array(None if f is None else f.owner for f in fences),
        "tokens": int_array(None if f is None else f.token for f in fences),
    }


async def _open(conninfo: str, synchronous_commit: bool) -> psycopg.AsyncConnection[Any]:
    conn = await psycopg.AsyncConnection.connect(conninfo, autocommit=True)
    # The booking's plan never depends on its parameters; planning it anew for every call
    # (what PostgreSQL does by default here) costs more than executing it. A generic plan is
    # made once per session, often while the table is still small, where a sequential scan
    # looks cheapest; that plan would stay while the table grows, so keys are always looked
    # up through the primary key instead.
    await conn.execute("SET plan_cache_mode = force_generic_plan")
    await conn.execute("SET enable_seqscan = off")
    if not synchronous_commit:
        await conn.execute("SET synchronous_commit = off")
    return conn


async def _create_schema(conn: psycopg.AsyncConnection[Any]) -> None:
    """Create the table; the advisory lock keeps concurrent starters apart."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
        await conn.execute(_SCHEMA.encode())
