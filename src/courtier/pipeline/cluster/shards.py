"""Site ownership in a scale-out crawl: shards of the host space, leased by workers.

Rules:
- The seed's sites fall into ``shards`` shards by a stable hash of the site key
  (``shard_of``). A worker fetches a site only while it holds the site's shard.
- Holding a shard is two things in PostgreSQL, both taken and dropped together:
  a session advisory lock on the keeper's own connection (it ends with that connection, so
  a worker killed by SIGKILL frees its shards at once) and a lease row in
  ``courtier_shard_leases`` with an owner, a fencing token and an expiry, renewed by
  heartbeat every ``ttl / 3`` seconds.
- A session's advisory locks stack (locking twice needs two unlocks), so the keeper locks a
  shard at most once per session (``_locked``): a shard it dropped (a booking's fence
  failed on an expired lease) and took again is still given back whole. A lock kept for a
  shard it no longer holds is let go at the next heartbeat, so another worker takes the shard
  without ending this worker's session as a hung holder's.
- Taking a shard increments its token. Every booking a worker makes for a site carries its
  shard's ``Fence``, checked in the booking's own statement: a worker that lost its shard
  (killed connection, expired lease) cannot book for it any more, whatever it believes. Its
  leases of the site's URLs carry the fence too (``PostgresFrontier.lease_due``).
- A shard whose lease expired while its holder's session still holds the advisory lock (a
  hung worker) is taken by ending that session (``pg_terminate_backend``); only the
  session of the worker the row names, or of one without a fresh heartbeat, since a lock
  under a free or expired row is also another worker's take in progress. Heartbeats and
  renewals go on every ``ttl / 3`` during takes and give-backs, a single give-back included.
- Rebalancing: each worker aims for ``ceil(shards / live workers)`` shards (live: a
  heartbeat within ``ttl``, and a session still holding its shards' locks, or none yet).
  One with fewer takes free ones; one with more gives back its extras gracefully: its
  sites stop starting, their work in flight finishes, their queued URLs go back to the
  store, then the lease is released.
- A clean stop gives back every shard the session locks, held or not (a take cut short by
  the stop, a shard dropped since the last heartbeat: taken whole first), so no site's URLs
  stay leased until the next run takes its shard.
- A lost session (a server restart, failover) drops every shard at once, and a new one is
  asked for with backoff and jitter until the server answers; its shards are taken again
  at once, since every one of their sites waits for them.
- Times of leases and heartbeats are the database's (``clock_timestamp()``), so workers on
  machines whose clocks disagree still agree on who holds what.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import random
import socket
import time
import zlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from courtier.pipeline.cluster.lease_tables import (
    LOCK_SPACE,
    NOW,
    SCHEMA,
    TERMINATE_WAIT_MS,
    WORKERS,
    new_worker_id,
    shard_of,
    try_lock,
    unlock,
)
from courtier.politeness.limiter.base import SHARD_LEASES as LEASES
from courtier.politeness.limiter.base import Fence

__all__ = ["WORKERS", "ShardKeeper", "new_worker_id", "shard_of"]

if TYPE_CHECKING:  # psycopg is the optional ``postgres`` extra: imported when a keeper starts
    import psycopg

log = logging.getLogger(__name__)

Acquired = Callable[[int, int], Awaitable[None]]
"""(shard, token): the shard is ours from now on."""
Lost = Callable[[int, bool], Awaitable[None]]
"""(shard, graceful): the shard is no longer ours (graceful: we give it back; else it was
taken from us and nothing more may be booked for it)."""


class ShardKeeper:
    def __init__(
        self,
        conninfo: str,
        worker_id: str,
        *,
        shards: int,
        ttl: float,
        on_acquired: Acquired,
        on_lost: Lost,
        requests: Callable[[], int] = lambda: 0,
    ) -> None:
        self.conninfo = conninfo
        self.worker_id = worker_id
        self.shards = shards
        self.ttl = ttl
        self.on_acquired = on_acquired
        self.on_lost = on_lost
        self.requests = requests
        self.held: dict[int, int] = {}
        """Shard -> fencing token, for the shards this worker holds."""
        self._locked: set[int] = set()
        """Shards whose advisory lock this keeper's session holds (once each)."""
        self._conn: psycopg.AsyncConnection[Any] | None = None

    def fence(self, shard: int) -> Fence | None:
        token = self.held.get(shard)
        return None if token is None else Fence(shard, self.worker_id, token)

    async def start(self) -> None:
        import psycopg

        self._conn = await psycopg.AsyncConnection.connect(self.conninfo, autocommit=True)
        self._locked.clear()  # a new session holds no lock
        async with self._conn.transaction():
            await self._conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_SPACE,))
            for statement in SCHEMA.split(";"):
                await self._conn.execute(statement.encode())
            await self._conn.execute(
                f"INSERT INTO {LEASES} (shard) SELECT generate_series(0, %s - 1) "
                "ON CONFLICT DO NOTHING",
                (self.shards,),
            )
        await self._conn.execute(
            f"INSERT INTO {WORKERS} (id, host, pid, started_at, heartbeat_at, backend_pid) "
            f"VALUES (%s, %s, %s, {NOW}, {NOW}, pg_backend_pid()) ON CONFLICT (id) DO UPDATE "
            f"SET heartbeat_at = {NOW}, backend_pid = pg_backend_pid()",
            (self.worker_id, socket.gethostname(), os.getpid()),
        )

    async def run(self) -> None:
        """Heartbeat, renew, rebalance: for as long as the crawl runs."""
        import psycopg

        while True:
            try:
                await self.beat()
            except psycopg.Error as exc:
                log.error("shard leases: %s; every shard is dropped until it is back", exc)
                for shard in list(self.held):
                    del self.held[shard]
                    await self.on_lost(shard, False)
                await self._reconnect()
                continue  # take shards again at once: every site waits for them
            await asyncio.sleep(self.ttl / 3)

    async def _reconnect(self) -> None:
        """A new session, asked for with backoff and jitter until the server answers. Not
        at the heartbeat's pace: a server restarted a moment after the first attempt would
        leave every site unowned for beats on end (the crawl stands still meanwhile)."""
        import psycopg

        if self._conn is not None:
            await self._conn.close()
        down_since = time.monotonic()
        delay, said = 0.25, False
        while True:
            try:
                await self.start()
            except psycopg.Error as exc:
                if self._conn is not None:  # connected, then lost again while starting
                    await self._conn.close()
                if not said:
                    log.error("shard leases: cannot reconnect yet: %s", exc)
                    said = True
                await asyncio.sleep(delay * random.uniform(0.5, 1.0))
                delay = min(delay * 2, self.ttl / 3)
                continue
            log.warning(
                "shard leases: the database is back after %.1f s", time.monotonic() - down_since
            )
            return

    async def beat(self) -> None:
        conn = self._conn
        assert conn is not None
        await self._keep_alive(conn)
        for shard in sorted(self._locked - self.held.keys()):
            await unlock(conn, shard)  # dropped since: free for whoever takes it next
            self._locked.discard(shard)
        # Live: a fresh heartbeat, and either no lease yet (a newcomer) or a session still
        # holding a shard's lock. A killed worker's locks went with its session, so its
        # shards are shared out at once, not after its heartbeat ages past the ttl.
        cursor = await conn.execute(
            f"SELECT count(*) FROM {WORKERS} AS w WHERE w.heartbeat_at > {NOW} - %s AND ("
            f"NOT EXISTS (SELECT 1 FROM {LEASES} AS l WHERE l.owner = w.id) OR EXISTS ("
            f"SELECT 1 FROM {LEASES} AS l JOIN pg_locks AS k ON k.locktype = 'advisory' "
            "AND k.classid = %s AND k.objid = l.shard::oid AND k.granted "
            "WHERE l.owner = w.id))",
            (self.ttl, LOCK_SPACE),
        )
        row = await cursor.fetchone()
        live = max(1, int(row[0]) if row else 1)
        target = math.ceil(self.shards / live)
        if len(self.held) < target:
            await self._take(conn, target - len(self.held))
        elif len(self.held) > target:
            renewed = time.monotonic()
            for shard in sorted(self.held, reverse=True)[: len(self.held) - target]:
                await self.give_back(shard)
                renewed = await self._renew_if_due(conn, renewed)

    async def _keep_alive(self, conn: psycopg.AsyncConnection[Any]) -> None:
        """The heartbeat, then the renewals. A taker tells this worker's takes in progress
        from a hung holder's lock by the heartbeat (``_end_hung_holder``): it is kept fresh
        through long takes and give-backs as well as at each beat."""
        await conn.execute(
            f"UPDATE {WORKERS} SET heartbeat_at = {NOW}, shards = %s, requests = %s WHERE id = %s",
            (len(self.held), self.requests(), self.worker_id),
        )
        await self._renew(conn)

    async def _renew(self, conn: psycopg.AsyncConnection[Any]) -> None:
        if not self.held:
            return
        # Rows locked in shard order, as a fenced lease locks them (``PostgresFrontier``): a
        # renewal and a lease of this worker's never wait for each other in a cycle.
        cursor = await conn.execute(
            f"UPDATE {LEASES} AS l SET expires_at = {NOW} + %s FROM ("
            f"SELECT shard FROM {LEASES} WHERE owner = %s AND shard = ANY(%s) "
            "ORDER BY shard FOR UPDATE) AS mine WHERE l.shard = mine.shard "
            "RETURNING l.shard, l.token",
            (self.ttl, self.worker_id, list(self.held)),
        )
        kept = {int(shard): int(token) for shard, token in await cursor.fetchall()}
        for shard, token in list(self.held.items()):
            if kept.get(shard) != token:
                log.warning("shard %d was taken from this worker: its sites stop", shard)
                del self.held[shard]
                await self.on_lost(shard, False)

    async def _take(self, conn: psycopg.AsyncConnection[Any], wanted: int) -> None:
        # Start the search at a place of our own, so workers joining together rarely race
        # for the same shards.
        offset = zlib.crc32(self.worker_id.encode()) % self.shards
        # Shards whose rows still name this worker but which it does not hold (its session
        # was lost: a server restart) are taken again at once, as free ones: its new session
        # can lock them only if no other worker took them meanwhile.
        cursor = await conn.execute(
            f"SELECT shard, owner IS NULL OR expires_at < {NOW} OR owner = %s FROM {LEASES} "
            f"WHERE owner IS NULL OR owner <> %s OR expires_at < {NOW} "
            "OR NOT shard = ANY(%s) ORDER BY (shard - %s + %s) %% %s",
            (self.worker_id, self.worker_id, list(self.held), offset, self.shards, self.shards),
        )
        renewed = time.monotonic()
        for shard, free in await cursor.fetchall():
            if wanted <= 0:
                return
            if shard in self.held:
                continue
            token = await self._try_take(conn, int(shard), bool(free))
            if token is not None:
                self.held[shard] = token
                wanted -= 1
                await self.on_acquired(shard, token)
            renewed = await self._renew_if_due(conn, renewed)

    async def _renew_if_due(self, conn: psycopg.AsyncConnection[Any], renewed: float) -> float:
        """Renew if ``ttl / 3`` passed since ``renewed``; when the leases were last renewed.

        Taking many shards (a first worker takes them all) costs store calls per shard, and
        giving many back waits for each one's fetches in flight: keep renewing meanwhile, or
        the shards still held expire and another worker ends this worker's session as a hung
        holder's (every shard dropped at once)."""
        if time.monotonic() - renewed <= self.ttl / 3:
            return renewed
        await self._keep_alive(conn)
        return time.monotonic()

    async def _try_take(
        self, conn: psycopg.AsyncConnection[Any], shard: int, expired: bool
    ) -> int | None:
        if shard not in self._locked:
            if not await try_lock(conn, shard):
                if not expired:
                    return None
                await self._end_hung_holder(conn, shard)  # waits for its session to be gone
                if not await try_lock(conn, shard):
                    return None
            self._locked.add(shard)
        # The advisory lock is ours: the last holder's session is gone (or never was), so
        # the shard is ours whatever its row says; a new token fences the old holder out.
        cursor = await conn.execute(
            f"UPDATE {LEASES} SET owner = %s, token = token + 1, expires_at = {NOW} + %s "
            "WHERE shard = %s RETURNING token",
            (self.worker_id, self.ttl, shard),
        )
        taken = await cursor.fetchone()
        return None if taken is None else int(taken[0])

    async def _end_hung_holder(self, conn: psycopg.AsyncConnection[Any], shard: int) -> None:
        """The lease expired but its holder's session still holds the lock: a worker that
        stopped renewing. Ending that session frees the shard (and its others) at once."""
        # Only while the lease is still expired, checked in the same statement: another
        # worker may have taken the shard since we looked, and its session is alive. And
        # only the session of the worker the row names, or of no live worker: a lock held
        # under a row that reads free or expired is also another worker's take between its
        # lock and its row update, and ending that session would drop every shard it holds.
        # A session ends some time after it is told to (its locks with it): wait for that
        # (PostgreSQL 14's timeout argument), or the lock is still held when we try again.
        cursor = await conn.execute(
            "SELECT pg_terminate_backend(k.pid, %(wait)s) FROM pg_locks AS k "
            "WHERE k.locktype = 'advisory' AND k.classid = %(space)s AND k.objid = %(shard)s "
            "AND k.granted AND k.pid <> pg_backend_pid() "
            f"AND EXISTS (SELECT 1 FROM {LEASES} WHERE shard = %(shard)s AND expires_at < {NOW}) "
            f"AND (EXISTS (SELECT 1 FROM {LEASES} AS l JOIN {WORKERS} AS w ON w.id = l.owner "
            "WHERE l.shard = %(shard)s AND w.backend_pid = k.pid) "
            f"OR NOT EXISTS (SELECT 1 FROM {WORKERS} AS w WHERE w.backend_pid = k.pid "
            f"AND w.heartbeat_at > {NOW} - %(ttl)s))",
            {"wait": TERMINATE_WAIT_MS, "space": LOCK_SPACE, "shard": shard, "ttl": self.ttl},
        )
        if await cursor.fetchall():  # else another worker took the shard since we looked
            log.warning("shard %d: its holder stopped renewing; its session was ended", shard)

    async def give_back(self, shard: int) -> None:
        """Hand a shard back gracefully (rebalancing, or a clean stop)."""
        if shard not in self.held or self._conn is None:
            return
        del self.held[shard]
        await self._renewing(self._conn, self.on_lost(shard, True))
        # The lock first: a worker taking the shard once the row reads free gets the lock.
        await unlock(self._conn, shard)
        self._locked.discard(shard)
        await self._conn.execute(
            f"UPDATE {LEASES} SET owner = NULL, expires_at = 0 WHERE shard = %s AND owner = %s",
            (shard, self.worker_id),
        )

    async def _renewing(self, conn: psycopg.AsyncConnection[Any], work: Awaitable[None]) -> None:
        """``work`` (a shard given back: its fetches in flight may take up to the fetch
        timeout, longer than the ttl), with the shards still held renewed every ``ttl / 3``
        meanwhile. A renewal that fails (our session was ended) lets ``work`` finish first:
        the shard's URLs go back through the frontier's own connection whatever ours does."""
        task = asyncio.ensure_future(work)
        try:
            while not (await asyncio.wait({task}, timeout=self.ttl / 3))[0]:
                await self._keep_alive(conn)
        except asyncio.CancelledError:
            task.cancel()
            raise
        except Exception:
            await task
            raise
        task.result()

    async def _take_and_give_back(self, shard: int) -> None:
        """At stop, a shard this session locks but does not hold: a take the stopping crawl
        cut short after its row named us, or a shard dropped since the last heartbeat. Nobody
        else can hold it, but what its sites have leased (a dead holder's URLs, ours) would
        wait for the next run's take of the shard: the take is completed (a fresh token, its
        sites' leases released) and the shard given back like any other."""
        assert self._conn is not None
        token = await self._try_take(self._conn, shard, False)
        if token is None:
            return
        self.held[shard] = token
        await self.on_acquired(shard, token)
        await self.give_back(shard)

    async def stop(self) -> None:
        import psycopg

        if self._conn is None:
            return
        try:
            renewed = time.monotonic()
            for shard in sorted(self.held):
                await self.give_back(shard)
                renewed = await self._renew_if_due(self._conn, renewed)
            for shard in sorted(self._locked - self.held.keys()):
                await self._take_and_give_back(shard)
            await self._conn.execute(f"DELETE FROM {WORKERS} WHERE id = %s", (self.worker_id,))
        except psycopg.Error as exc:  # our session was ended: the shard leases end with it
            log.warning("shard leases: %s; leases expire on their own", exc)
            # The URLs leased for the remaining shards' sites still go back (through the
            # frontier's own connection): nobody may be left to release them after us.
            for shard in sorted(self.held):
                del self.held[shard]
                await self.on_lost(shard, True)
        finally:
            await self._conn.close()
            self._conn = None
