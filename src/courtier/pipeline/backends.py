"""Where a crawl keeps its state: the frontier store and the limiter, a setting not a code path.

- Embedded (a SQLite store file): one crawl per store (``StoreLock``); the key clocks in
  ``[crawl] limiter``: ``memory`` (the default, this process; floors saved through the
  store) or ``sqlite`` (the ``limiter_tat`` table of the store file, written before every
  request it books).
- Scale-out (``ClusterSpec``: a PostgreSQL database shared by many workers): the frontier,
  the origin map, robots.txt answers and every limit key live in PostgreSQL; bookings are
  one atomic statement each, fenced by the worker's shard lease.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from courtier.config import Config
from courtier.frontier.base import FrontierStore
from courtier.frontier.sqlite_store import SqliteFrontier
from courtier.pipeline.cluster.membership import ClusterSpec
from courtier.pipeline.scheduling.concurrency import IDLE_SHARE
from courtier.pipeline.store_lock import StoreLock
from courtier.politeness.limiter import MemoryLimiter, SqliteLimiter
from courtier.politeness.limiter.base import Limiter
from courtier.runtime import open_files

BACKENDS = ("memory", "sqlite")


@dataclass(slots=True)
class Backends:
    store: FrontierStore
    limiter: Limiter
    lock: StoreLock | None
    """Held for the run (embedded stores only)."""


def open_limiter(config: Config, store_path: Path, clock: Callable[[], float]) -> Limiter:
    backend = config.crawl.limiter
    if backend == "sqlite":
        return SqliteLimiter(store_path, clock=clock)
    if backend == "memory":
        return MemoryLimiter(clock=clock)
    raise ValueError(f"crawl.limiter must be one of {', '.join(BACKENDS)}, got {backend!r}")


async def open_backends(
    config: Config,
    store_path: Path,
    clock: Callable[[], float],
    *,
    cluster: ClusterSpec | None,
    store: FrontierStore | None,
    limiter: Limiter | None,
) -> Backends:
    if cluster is not None:
        from courtier.frontier.postgres_store import PostgresFrontier
        from courtier.politeness.limiter.postgres import PostgresLimiter

        shared = store or PostgresFrontier(cluster.conninfo)
        booker = limiter or await PostgresLimiter.connect(cluster.conninfo, clock=clock)
        return Backends(shared, booker, None)
    lock = None
    if store is None or isinstance(store, SqliteFrontier):
        lock = StoreLock(store_path)
        lock.acquire()  # one crawl per embedded store: StoreBusy names the holder
    try:
        own = store or SqliteFrontier(store_path)
        return Backends(own, limiter or open_limiter(config, store_path, clock), lock)
    except BaseException:
        if lock is not None:
            lock.release(clean=False)
        raise


def idle_connections(config: Config) -> int:
    """Kept-alive connections the crawl may hold, from its open-file limit (raised to the
    hard limit here) and what its settings hold at once (``runtime.open_files``; with the
    in-flight bounds chosen from the work, ``concurrency.IDLE_SHARE`` of what is left)."""
    crawl = config.crawl
    workers = crawl.parse_workers or os.cpu_count() or 1
    render = config.render
    browsers = render.browsers if render.mode != "never" or render.sites or render.rules else 0
    limit = open_files.raise_limit()
    held = open_files.reserved(in_flight=0, workers=workers, browsers=browsers)
    operator = (crawl.max_in_flight, config.media.max_in_flight)
    # Requests: the operator's caps, else what the in-flight bounds may take of the limit.
    requests = sum(operator) if all(operator) else int((limit - held) * (1 - IDLE_SHARE))
    return open_files.idle_budget(limit, held + requests, config.fetch.max_idle)
