"""End to end on PostgreSQL: three workers crawl the simulated web, one is SIGKILLed mid-crawl;
the servers' side sees every per-site and per-origin limit held, and nothing is lost."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from courtier.simweb.audit import audit
from courtier.simweb.log import RequestRecord, read_log
from courtier.simweb.process import SimWebProcess
from courtier.simweb.world import World, WorldParams
from pg import fresh_database

pytestmark = [pytest.mark.slow, pytest.mark.long]

DURATION_S = 24.0
KILL_AFTER_S = 8.0
HOLD_WITHIN_S = 20.0
"""How long the victim, started first, may take to hold its first shard."""


@pytest.fixture(scope="module")
def database(postgres_dsn: str) -> Iterator[str]:
    with fresh_database(postgres_dsn, "scaleout") as url:
        yield url


@dataclass
class ScaleOut:
    world: World
    records: list[RequestRecord]
    log_path: Path
    killed_at: float
    victim: str
    """The SIGKILLed worker's id (``host:pid:random``, as `new_worker_id` makes it)."""
    victim_held: int
    """Shards the victim held when it was killed."""
    victim_left: int
    """Shard leases still naming the victim after the crawl."""
    exits: list[int | None]
    summaries: list[dict[str, object]]
    leased_left: int
    leased_sites: list[tuple[str, int, float | None]]
    """Sites with URLs still leased after the crawl: how many, and the oldest lease."""
    status: dict[str, object]
    errors: list[str]


def _worker(web: SimWebProcess, out: Path, store: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "courtier", "crawl", "--seeds", str(web.seeds_path)]
    command += ["--dns", web.dns, "--allow-net", web.allow_net, "--out", str(out)]
    command += ["--store", store, "--duration", str(DURATION_S), "--json"]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _held_by(database: str, pid: int) -> tuple[str, int]:
    """The worker of process ``pid``: its id and how many shards it holds now."""
    with psycopg.connect(database) as conn:
        try:
            rows = conn.execute(
                "SELECT owner, count(*) FROM courtier_shard_leases WHERE owner LIKE %s "
                "GROUP BY owner",
                (f"%:{pid}:%",),
            ).fetchall()
        except psycopg.errors.UndefinedTable:  # no worker has started yet
            return "", 0
    return (str(rows[0][0]), int(rows[0][1])) if rows else ("", 0)


def _summary(out: str) -> dict[str, object]:
    lines = [line for line in out.splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else {}


@pytest.fixture(scope="module")
def scale_out(tmp_path_factory: pytest.TempPathFactory, database: str) -> ScaleOut:
    work = tmp_path_factory.mktemp("scaleout")
    with SimWebProcess(work / "web", WorldParams(seed=11)) as web:
        # The victim starts first and holds shards before the others join: started all
        # at once, the other two can take all 64 and the victim get its share only after
        # they give some back, which can outlast KILL_AFTER_S. Joining later, the others
        # take shards from it by rebalancing; it keeps its share (a third) till the kill.
        workers = [_worker(web, work / "w0", database)]
        deadline = time.monotonic() + HOLD_WITHIN_S
        while not _held_by(database, workers[0].pid)[1] and time.monotonic() < deadline:
            time.sleep(0.2)
        workers += [_worker(web, work / f"w{n}", database) for n in (1, 2)]
        time.sleep(KILL_AFTER_S)
        victim, victim_held = _held_by(database, workers[0].pid)
        os.kill(workers[0].pid, signal.SIGKILL)
        killed_at = time.time()
        outputs = [w.communicate(timeout=DURATION_S + 60) for w in workers]
        world, log_path = web.world, web.log_path
    status = subprocess.run(
        [sys.executable, "-m", "courtier", "status", "--store", database, "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    with psycopg.connect(database) as conn:
        row = conn.execute("SELECT count(*) FROM urls WHERE status = 1").fetchone()
        leased_sites = conn.execute(
            "SELECT site, count(*), min(leased_at) FROM urls WHERE status = 1 GROUP BY site"
        ).fetchall()
        left = conn.execute(
            "SELECT count(*) FROM courtier_shard_leases WHERE owner = %s", (victim,)
        ).fetchone()
    return ScaleOut(
        world=world,
        records=list(read_log(log_path)),
        log_path=log_path,
        killed_at=killed_at,
        victim=victim,
        victim_held=victim_held,
        victim_left=int(left[0]) if left else -1,
        exits=[w.returncode for w in workers],
        summaries=[_summary(out) for out, _ in outputs[1:]],
        leased_left=int(row[0]) if row else -1,
        leased_sites=[(str(site), int(n), at) for site, n, at in leased_sites],
        status=json.loads(status.stdout) if status.returncode == 0 else {"error": status.stderr},
        errors=[err[-3000:] for _out, err in outputs],
    )


def test_the_survivors_finish_cleanly_and_take_over_the_dead_workers_shards(
    scale_out: ScaleOut,
) -> None:
    assert scale_out.exits[0] == -signal.SIGKILL
    assert scale_out.exits[1:] == [0, 0], scale_out.errors
    assert all(scale_out.summaries), scale_out.errors
    # The victim held shards when it died, and none is still its own: the survivors took
    # every one over (and gave it back as they stopped). Counting the survivors' takes
    # cannot show this: when all three start together, the survivors' own shards and the
    # victim's add up to 64 takes, the same as if the victim had never held any.
    assert scale_out.victim_held > 0, scale_out.victim
    assert scale_out.victim_left == 0, (scale_out.victim, scale_out.victim_left)
    taken = sum(int(str(s["shards_taken"])) for s in scale_out.summaries)
    assert taken >= 64
    assert all(int(str(s["internal_errors"])) == 0 for s in scale_out.summaries)
    after = [r for r in scale_out.records if r.start > scale_out.killed_at + 1]
    assert len(after) > 100


def test_every_per_site_and_per_origin_limit_holds_across_workers(scale_out: ScaleOut) -> None:
    report = audit(scale_out.log_path, scale_out.world, allow_media=True)
    for criterion in report.criteria:
        if criterion.name != "duplicates":
            assert criterion.ok, (criterion.name, criterion.detail)


def test_no_discovered_url_is_lost(scale_out: ScaleOut) -> None:
    # Every URL is done, refused, failed or due again: none is left leased by anyone.
    assert scale_out.leased_left == 0, (scale_out.killed_at, scale_out.leased_sites)


def test_no_url_is_fetched_twice_except_those_in_flight_at_the_kill(scale_out: ScaleOut) -> None:
    seed = set(scale_out.world.seed_hosts)
    final = [
        r
        for r in scale_out.records
        if r.status != 429 and r.status < 500 and r.host.split(":")[0] in seed
    ]
    counts = Counter((r.host, r.target) for r in final if r.target != "/robots.txt")
    for (host, target), n in counts.items():
        if n > 1:
            first = min(r.start for r in final if (r.host, r.target) == (host, target))
            assert n == 2 and abs(scale_out.killed_at - first) < 2.0, (host, target, n)


def test_status_shows_the_workers_leases_and_frontier(scale_out: ScaleOut) -> None:
    status = scale_out.status
    assert status.get("store") == "postgresql", status
    shards = status["shards"]
    assert isinstance(shards, dict) and shards["total"] == 64
    frontier = status["frontier"]
    assert isinstance(frontier, dict) and frontier.get("done", 0) > 0
