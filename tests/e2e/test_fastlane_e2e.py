"""End to end: an upstream system asks a running 3-worker PostgreSQL crawl to recrawl a page
through the fastlane endpoint of one worker (``[control] http_port``); the worker holding the
page's site fetches it as soon as its booking allows: within 5 s for a site that is idle."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from courtier.simweb.log import read_log
from courtier.simweb.process import SimWebProcess
from courtier.simweb.world import WorldParams
from pg import fresh_database

pytestmark = [pytest.mark.slow, pytest.mark.long]

TOKEN = "fastlane-token-for-the-test"
PARAMS = WorldParams(
    seed=7, n_standalone=12, n_cname_tenants=0, n_header_tenants=0, n_horizon=1, n_farm=0,
    n_items=3, n_lists=1, slow_fraction=0.0,
)  # fmt: skip


@pytest.fixture(scope="module")
def database(postgres_dsn: str) -> Iterator[str]:
    with fresh_database(postgres_dsn, "fastlane") as url:
        yield url


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _host(record: object) -> str:
    return str(record.host).split(":")[0].rstrip(".").lower()  # type: ignore[attr-defined]


def test_a_recrawl_through_the_endpoint_reaches_the_worker_holding_the_site(
    tmp_path: Path, database: str
) -> None:
    ports = [_free_port() for _ in range(3)]
    with SimWebProcess(tmp_path / "web", PARAMS) as web:
        plain = {
            s.host
            for s in web.world.sites.values()
            if s.is_seed and not s.behaviours and s.crawl_delay is None and not s.latency
        }
        env = dict(os.environ, COURTIER_CONTROL__HTTP_TOKEN=TOKEN)
        workers = []
        for port in ports:
            command = [sys.executable, "-m", "courtier", "crawl", "--seeds", str(web.seeds_path)]
            command += ["--dns", web.dns, "--allow-net", web.allow_net]
            command += ["--out", str(tmp_path / "out"), "--store", database, "--duration", "40"]
            command += ["-s", f"control.http_port={port}", "-s", "media.fetch=false"]
            command += ["-s", "frontier.sitemap_fallback=false"]
            workers.append(
                subprocess.Popen(
                    command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
                )
            )
        try:
            # Wait until one of the plain sites has been crawled and is idle (3 s quiet).
            deadline, site = time.monotonic() + 40, ""
            while not site and time.monotonic() < deadline:
                starts: dict[str, list[float]] = {}
                for r in read_log(web.log_path):
                    if _host(r) in plain:
                        starts.setdefault(_host(r), []).append(r.start)
                idle = [h for h, t in starts.items() if len(t) >= 3 and time.time() - max(t) > 3]
                site = min(idle, default="")
                time.sleep(0.5)
            if not site:
                pytest.fail(f"no plain site was idle in time: {starts}")
            asked = time.time()
            request = urllib.request.Request(
                f"http://127.0.0.1:{ports[0]}/recrawl",
                data=json.dumps({"urls": [f"http://{site}/"]}).encode(),
                headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
                method="POST",
            )
            with urllib.request.urlopen(request, timeout=10) as answer:
                assert json.loads(answer.read()) == {"urls": 1, "scheduled": 1}
            errors = [worker.communicate(timeout=90)[1] for worker in workers]
        finally:
            for worker in workers:
                if worker.poll() is None:
                    worker.kill()
                    worker.communicate()
        assert [w.returncode for w in workers] == [0, 0, 0], [e[-1500:] for e in errors]
        again = [
            r.start
            for r in read_log(web.log_path)
            if _host(r) == site and r.target == "/" and r.start >= asked
        ]
    assert again and again[0] - asked <= 5.0, (again, asked)
