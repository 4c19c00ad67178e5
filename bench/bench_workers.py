"""Scale-out throughput: N worker processes on one PostgreSQL crawl the same simulated web.

    python bench/bench_workers.py --sites 2000 --duration 30 --workers 1 2 4

Starts a throwaway PostgreSQL cluster (tests/pg.py: the installed server binaries), and for
each N a fresh database and a fresh simulated web; runs `courtier crawl --store URL --workers
N`, then prints requests/s seen by the servers, the audit's violations and the bookings per
second PostgreSQL performed (transactions on the limiter table). Loopback only.
"""

from __future__ import annotations

import argparse
import dataclasses
import subprocess
import sys
import time
import uuid
from pathlib import Path
from tempfile import TemporaryDirectory

import psycopg

sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))
from courtier.simweb.audit import audit
from courtier.simweb.process import SimWebProcess
from courtier.simweb.world import SIZE_PRESETS, params_for_total
from pg import PostgresCluster


def bookings(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT n_tup_upd FROM pg_stat_user_tables WHERE relname = 'courtier_limiter_tat'"
        ).fetchone()
    return int(row[0]) if row else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sites", type=int, default=2000)
    parser.add_argument("--duration", type=float, default=30.0)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    args = parser.parse_args()
    cluster = PostgresCluster().start()
    try:
        for workers in args.workers:
            name = f"bench_{uuid.uuid4().hex[:8]}"
            with psycopg.connect(cluster.dsn, autocommit=True) as conn:
                conn.execute(f"CREATE DATABASE {name}")
            dsn = cluster.dsn.replace("dbname=postgres", f"dbname={name}")
            url = f"postgresql://postgres@127.0.0.1:{cluster.port}/{name}"
            params = params_for_total(dataclasses.replace(SIZE_PRESETS["small"]), args.sites)
            with TemporaryDirectory() as work:
                with SimWebProcess(Path(work) / "web", params) as web:
                    command = [sys.executable, "-m", "courtier", "crawl", "--seeds",
                           str(web.seeds_path), "--dns", web.dns, "--allow-net", web.allow_net,
                           "--out", str(Path(work) / "out"), "--store", url,
                           "--duration", str(args.duration), "--workers", str(workers),
                           "--json", "--no-live"]  # fmt: skip
                    started = time.time()
                    done = subprocess.run(command, capture_output=True, text=True, check=False)
                    elapsed = time.time() - started
                    log_path, world = web.log_path, web.world
                report = audit(log_path, world, allow_media=True)
            failed = [c.name for c in report.criteria if not c.ok]
            booked = bookings(dsn)
            print(
                f"workers={workers} exit={done.returncode} requests={report.requests} "
                f"({report.requests / args.duration:.1f}/s) bookings={booked} "
                f"({booked / elapsed:.0f}/s over {elapsed:.0f} s) violations={failed or '-'}"
            )
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
