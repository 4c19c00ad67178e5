"""End to end: two workers on one PostgreSQL, the server restarted mid-crawl (a fast stop,
seconds down, started again). Both workers wait for it, take their shards again and finish
the run; the servers' side sees every limit held, and the crawl keeps its pace."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from courtier.simweb.audit import audit
from courtier.simweb.log import read_log
from courtier.simweb.process import SimWebProcess
from courtier.simweb.world import WorldParams
from pg import PostgresCluster, fresh_database

pytestmark = [pytest.mark.slow, pytest.mark.long]

DURATION_S = 28.0
RESTART_AT_S = 8.0
DOWN_S = 3.0


def test_a_fleet_outlives_its_database_restarting(tmp_path: Path) -> None:
    # A cluster of its own: restarting the session's would cut other tests' connections.
    cluster = PostgresCluster().start()
    try:
        with (
            fresh_database(cluster.dsn, "restart") as store,
            SimWebProcess(tmp_path / "web", WorldParams(seed=4)) as web,
        ):
            command = [sys.executable, "-m", "courtier", "crawl", "--seeds", str(web.seeds_path)]
            command += ["--dns", web.dns, "--allow-net", web.allow_net]
            command += ["--out", str(tmp_path / "out"), "--store", store]
            command += ["--duration", str(DURATION_S)]
            logs = [(tmp_path / f"worker-{n}.log").open("w") for n in range(2)]
            workers = [
                subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log) for log in logs
            ]
            began = time.time()
            time.sleep(RESTART_AT_S)
            cluster.restart(down=DOWN_S)
            exits = [worker.wait(timeout=DURATION_S + 60) for worker in workers]
            for log in logs:
                log.close()
            records = list(read_log(web.log_path))
            report = audit(web.log_path, web.world, allow_media=True)
    finally:
        cluster.stop()
    said = [(tmp_path / f"worker-{n}.log").read_text() for n in range(2)]
    assert exits == [0, 0], [text[-2000:] for text in said]
    for text in said:  # each worker saw the outage, and the store and limiter come back
        assert "the frontier store is back" in text and "limiter is back" in text
    assert report.ok, [c for c in report.criteria if c.required and not c.ok]
    half = began + DURATION_S / 2
    first = sum(1 for r in records if r.start < half)
    second = sum(1 for r in records if r.start >= half)
    assert second >= 0.7 * first, (first, second)
