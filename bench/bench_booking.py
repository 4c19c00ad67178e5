"""Bookings per second of each limiter backend, two keys (site + origin) per booking.

Every worker process runs ``--tasks`` asyncio tasks that book back to back for ``--seconds``
through the real limiter classes (``MemoryLimiter``, ``SqliteLimiter``, ``PostgresLimiter``);
the rate is all bookings of all processes divided by the measured wall time.

Keys: ``spread`` books ``site:<i mod 2000>`` with ``origin:<i mod 200>`` (a crawl of many
sites over many origins); ``hot`` puts every booking on one origin key, so all bookers queue
on one row (the worst case for the shared backends).

PostgreSQL: without ``--dsn`` a throwaway cluster is started from the server binaries
(tests/pg.py) with the server's default durability settings; the limiter's sessions use
``synchronous_commit = off`` as in production.

    PYTHONPATH=src python bench/bench_booking.py                       # every backend
    PYTHONPATH=src python bench/bench_booking.py --backend postgres --processes 4
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from courtier.politeness.gcra import KeyParams, Limit
from courtier.politeness.limiter import Limiter, MemoryLimiter, SqliteLimiter
from courtier.politeness.limiter.postgres import PostgresLimiter
from pg import PostgresCluster

SITES = 2000
ORIGINS = 200
SITE = KeyParams(1.0, 0.0, 0.25, weighted=False)
ORIGIN = KeyParams(0.5, 0.0, 0.25)


@dataclass(frozen=True)
class Run:
    backend: str
    keys: str
    processes: int
    tasks: int
    connections: int
    seconds: float


@dataclass(frozen=True)
class Result:
    run: Run
    bookings: int
    wall: float

    @property
    def per_second(self) -> float:
        return self.bookings / self.wall


def limits_for(i: int, keys: str) -> list[Limit]:
    origin = "origin:hot" if keys == "hot" else f"origin:{i % ORIGINS}"
    return [Limit(f"site:{i % SITES}.test", SITE), Limit(origin, ORIGIN)]


async def open_limiter(run: Run, target: str) -> Limiter:
    if run.backend == "memory":
        return MemoryLimiter()
    if run.backend == "sqlite":
        return SqliteLimiter(target)
    return await PostgresLimiter.connect(target, connections=run.connections)


async def book_for(run: Run, target: str, seed: int, start: Barrier | None) -> tuple[int, float]:
    limiter = await open_limiter(run, target)
    counter = [0]

    async def task(offset: int, until: float) -> None:
        i = offset
        while time.perf_counter() < until:
            await limiter.book(limits_for(i, run.keys), 2.0)
            i += 7919  # a prime stride: tasks walk different keys
            counter[0] += 1

    for warm in range(50):  # prepared statements, caches
        await limiter.book(limits_for(seed + warm, run.keys), 1.0)
    if seed == 0:  # every key once: a key's first booking also creates its row
        for i in range(SITES):
            await limiter.book(limits_for(i, run.keys), 1.0)
    if start is not None:
        start.wait()
    began = time.perf_counter()
    until = began + run.seconds
    await asyncio.gather(*(task(seed * 1_000_003 + t * 104_729, until) for t in range(run.tasks)))
    wall = time.perf_counter() - began
    await limiter.close()
    return counter[0], wall


def _worker(
    run: Run, target: str, seed: int, start: Barrier, results: Queue[tuple[int, float]]
) -> None:
    results.put(asyncio.run(book_for(run, target, seed, start)))


def measure(run: Run, target: str) -> Result:
    if run.processes == 1:
        bookings, wall = asyncio.run(book_for(run, target, 0, None))
        return Result(run, bookings, wall)
    context = multiprocessing.get_context("fork")
    start = context.Barrier(run.processes)
    results: Queue[tuple[int, float]] = context.Queue()
    workers = [
        context.Process(target=_worker, args=(run, target, seed, start, results))
        for seed in range(run.processes)
    ]
    for worker in workers:
        worker.start()
    outcomes = [results.get(timeout=run.seconds + 120) for _ in workers]
    for worker in workers:
        worker.join()
    return Result(run, sum(n for n, _ in outcomes), max(w for _, w in outcomes))


def report(result: Result, as_json: bool) -> None:
    if as_json:
        print(
            json.dumps(
                {
                    **asdict(result.run),
                    "bookings": result.bookings,
                    "per_second": round(result.per_second),
                }
            ),
            flush=True,
        )
        return
    run = result.run
    print(
        f"{run.backend:9} keys={run.keys:6} processes={run.processes} tasks={run.tasks} "
        f"connections={run.connections}: {result.per_second:9,.0f} two-key bookings/s "
        f"({result.bookings:,} in {result.wall:.1f} s)",
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["memory", "sqlite", "postgres", "all"], default="all")
    parser.add_argument("--keys", choices=["spread", "hot", "both"], default="both")
    parser.add_argument("--processes", type=int, default=0, help="0: 1 and 4 (shared backends)")
    parser.add_argument("--tasks", type=int, default=4, help="asyncio tasks per process")
    parser.add_argument(
        "--connections", type=int, default=2, help="PostgreSQL sessions per process"
    )
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--dsn", help="an existing PostgreSQL database (default: a throwaway one)")
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    args = parser.parse_args()

    backends = ["memory", "sqlite", "postgres"] if args.backend == "all" else [args.backend]
    key_modes = ["spread", "hot"] if args.keys == "both" else [args.keys]
    print(f"# {os.cpu_count()} CPUs, Python {sys.version.split()[0]}", file=sys.stderr)
    cluster: PostgresCluster | None = None
    workdir = Path(tempfile.mkdtemp(prefix="courtier-bench-"))
    try:
        for backend in backends:
            target = str(workdir / "limiter.sqlite")
            if backend == "postgres":
                if args.dsn is None:
                    cluster = PostgresCluster(settings=(), max_connections=200).start()
                target = args.dsn or cluster.dsn  # type: ignore[union-attr]
            counts = (
                [1] if backend == "memory" else ([args.processes] if args.processes else [1, 4])
            )
            for keys in key_modes:
                for processes in counts:
                    run = Run(backend, keys, processes, args.tasks, args.connections, args.seconds)
                    report(measure(run, target), args.json)
    finally:
        if cluster is not None:
            cluster.stop()
        for leftover in workdir.iterdir():
            leftover.unlink()
        workdir.rmdir()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
