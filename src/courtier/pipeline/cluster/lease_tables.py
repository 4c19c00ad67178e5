"""The tables and locks of shard leases in PostgreSQL (``shards.py`` holds the rules).

``courtier_shard_leases`` (a row per shard: owner, fencing token, expiry), ``courtier_workers``
(a row per live worker: heartbeat, shards held, requests sent, its session's backend) and a
session advisory lock per held shard, in the lock class ``LOCK_SPACE``.
"""

from __future__ import annotations

import os
import socket
import zlib
from typing import TYPE_CHECKING, Any, Final

from courtier.politeness.limiter.base import SHARD_LEASES as LEASES

if TYPE_CHECKING:  # psycopg is the optional ``postgres`` extra: imported when a keeper starts
    import psycopg

WORKERS: Final = "courtier_workers"
LOCK_SPACE: Final = 0x636F7572  # advisory lock class id ("cour"); objid = the shard
NOW: Final = "extract(epoch FROM clock_timestamp())"
TERMINATE_WAIT_MS: Final = 2000
"""How long ending a hung holder's session may wait for it to be gone (its locks freed)."""

SCHEMA: Final = f"""
CREATE TABLE IF NOT EXISTS {LEASES} (
    shard integer PRIMARY KEY,
    owner text,
    token bigint NOT NULL DEFAULT 0,
    expires_at double precision NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS {WORKERS} (
    id text PRIMARY KEY,
    host text NOT NULL,
    pid integer NOT NULL,
    started_at double precision NOT NULL,
    heartbeat_at double precision NOT NULL,
    shards integer NOT NULL DEFAULT 0,
    requests bigint NOT NULL DEFAULT 0
);
ALTER TABLE {WORKERS} ADD COLUMN IF NOT EXISTS backend_pid integer
"""


def shard_of(site: str, shards: int) -> int:
    return zlib.crc32(site.encode()) % shards


def new_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{os.urandom(3).hex()}"


async def try_lock(conn: psycopg.AsyncConnection[Any], shard: int) -> bool:
    """Take the shard's advisory lock for this session, if no other session holds it."""
    cursor = await conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (LOCK_SPACE, shard))
    row = await cursor.fetchone()
    return bool(row and row[0])


async def unlock(conn: psycopg.AsyncConnection[Any], shard: int) -> None:
    await conn.execute("SELECT pg_advisory_unlock(%s, %s)", (LOCK_SPACE, shard))
