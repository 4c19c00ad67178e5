"""End to end, from the servers' side: a crawl killed with SIGKILL and restarted at once keeps
every promise, and a second crawl on the same store is refused while the first runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from courtier.simweb.audit import AuditReport, audit
from courtier.simweb.log import RequestRecord, read_log
from courtier.simweb.process import SimWebProcess
from courtier.simweb.world import World, WorldParams

pytestmark = pytest.mark.slow

FIRST_S = 7.0  # the first crawl is killed after this long
SECOND_S = 9.0


def _crawl_command(web: SimWebProcess, out: Path, duration: float) -> list[str]:
    return [
        sys.executable,
        "-m",
        "courtier",
        "crawl",
        "--seeds",
        str(web.seeds_path),
        "--dns",
        web.dns,
        "--allow-net",
        web.allow_net,
        "--out",
        str(out),
        "--duration",
        str(duration),
        "--json",
    ]


@dataclass
class CrashRun:
    world: World
    records: list[RequestRecord]
    killed_at: float
    log_path: Path
    second_exit: int
    refused: subprocess.CompletedProcess[str]
    second_stderr: str


@pytest.fixture(scope="module")
def crash(tmp_path_factory: pytest.TempPathFactory) -> CrashRun:
    work = tmp_path_factory.mktemp("crash")
    out = work / "crawl"
    with SimWebProcess(work / "web", WorldParams(seed=7)) as web:
        first = subprocess.Popen(
            _crawl_command(web, out, 60.0),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            time.sleep(FIRST_S)
            # The same command again while the first runs (an overlapping cron job).
            refused = subprocess.run(
                _crawl_command(web, out, 5.0), capture_output=True, text=True, timeout=60
            )
        finally:
            os.kill(first.pid, signal.SIGKILL)
            killed_at = time.time()
            first.wait()
            assert first.stderr is not None
            first.stderr.close()
        second = subprocess.run(
            _crawl_command(web, out, SECOND_S), capture_output=True, text=True, timeout=120
        )
        world, log_path = web.world, web.log_path
    return CrashRun(
        world,
        list(read_log(log_path)),
        killed_at,
        log_path,
        second.returncode,
        refused,
        second.stderr,
    )


def test_a_second_crawl_on_the_same_store_is_refused_naming_the_first(crash: CrashRun) -> None:
    assert crash.refused.returncode == 2
    message = crash.refused.stderr.strip().splitlines()[-1]
    assert "in use by another crawl" in message and "pid " in message, message
    assert "Traceback" not in crash.refused.stderr


def test_a_restart_after_sigkill_keeps_every_limit(crash: CrashRun) -> None:
    assert crash.second_exit == 0, crash.second_stderr[-2000:]
    assert "did not stop cleanly" in crash.second_stderr
    after = [r for r in crash.records if r.start > crash.killed_at]
    assert len(after) > 50, "the second crawl did not get going"
    report: AuditReport = audit(crash.log_path, crash.world, allow_media=True)
    for criterion in report.criteria:
        if criterion.name != "duplicates":
            assert criterion.ok, (criterion.name, criterion.detail)


def test_no_robots_txt_is_fetched_again_within_its_lifetime(crash: CrashRun) -> None:
    robots = [r for r in crash.records if r.target == "/robots.txt"]
    answered = {r.host for r in robots if r.start < crash.killed_at and 200 <= r.status < 500}
    answered -= {r.host for r in robots if r.start < crash.killed_at and r.status == 429}
    again = [r.host for r in robots if r.start > crash.killed_at and r.host in answered]
    assert again == []


def test_only_urls_in_flight_at_the_kill_are_fetched_twice(crash: CrashRun) -> None:
    # Frontier URLs (seed sites'); media requisites are remembered per run only (a page
    # fetched in the second run asks again for an image the first run already fetched).
    seed = set(crash.world.seed_hosts)
    final = [
        r
        for r in crash.records
        if r.status != 429 and r.status < 500 and r.host.split(":")[0] in seed
    ]
    counts = Counter((r.host, r.target) for r in final if r.target != "/robots.txt")
    twice = {key for key, n in counts.items() if n > 1}
    assert all(n <= 2 for n in counts.values())
    for host, target in twice:
        first = min(r.start for r in final if (r.host, r.target) == (host, target))
        # Outcomes are written every flush interval (0.5 s): only what was answered in the
        # last moments before the kill can be asked again, and only once.
        assert crash.killed_at - first < 2.0, (host, target)
