"""Workers of a fleet sharing one output directory, each PID 1 of its own host (as in
containers): their spool directories, WARC files and stats never collide, and every record a
document names is where it says, holding the answer the server sent.

The workers run compose.yaml's topology as processes (where no container engine is needed):
the worker service's command and environment, with the seeds, store and output directory
that compose mounts given as paths here, and each worker's metrics on a port of its own of
127.0.0.1 (in containers, port 9464 of each container's own address)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from warcio.archiveiterator import ArchiveIterator

from courtier.simweb.process import SimWebProcess
from courtier.simweb.world import WorldParams
from pg import fresh_database

pytestmark = [
    pytest.mark.long,
    pytest.mark.skipif(
        os.geteuid() != 0 or shutil.which("unshare") is None,
        reason="each worker needs a PID and UTS namespace of its own (unshare, as root): "
        "PID 1 on a host of its own, as in a container",
    ),
]

DURATION_S = 12.0
ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.fixture(scope="module")
def database(postgres_dsn: str) -> Iterator[str]:
    with fresh_database(postgres_dsn, "sharedout") as url:
        yield url


def _compose_worker() -> tuple[list[str], dict[str, str]]:
    """compose.yaml's worker service: its command and environment (``${VAR:?...}`` and
    ``${VAR:-default}`` left for the caller)."""
    service = yaml.safe_load((ROOT / "compose.yaml").read_text())["services"]["worker"]
    return list(service["command"]), dict(service["environment"])


def _worker(
    host: str, web: SimWebProcess, out: Path, store: str, metrics_port: int
) -> subprocess.Popen[str]:
    command, environment = _compose_worker()
    mounted = {
        "--seeds=/seeds.txt": f"--seeds={web.seeds_path}",
        "--store=postgresql://courtier:courtier@postgres/crawl": f"--store={store}",
        "--out=/data/out": f"--out={out}",
    }
    crawl = [sys.executable, "-m", "courtier", *(mounted.get(word, word) for word in command)]
    crawl += ["--dns", web.dns, "--allow-net", web.allow_net]
    crawl += ["--duration", str(DURATION_S), "--json"]
    crawl += ["-s", "fetch.spool_bytes=4096", "-s", "render.mode=never"]
    env = dict(os.environ)
    for name, value in environment.items():
        env[name] = str(value)
    assert env["COURTIER_FETCH__CONTACT_URL"].startswith("${CONTACT_URL:?")  # required
    env["COURTIER_FETCH__CONTACT_URL"] = "https://crawler.example/contact"
    assert env["COURTIER_OBSERVE__METRICS_PORT"] == "9464"
    env["COURTIER_OBSERVE__METRICS_HOST"] = "127.0.0.1"  # one network here, not one each
    env["COURTIER_OBSERVE__METRICS_PORT"] = str(metrics_port)
    script = f'hostname {host} && exec "$@"'
    isolate = ["unshare", "--pid", "--fork", "--uts", "--mount-proc", "sh", "-c", script, "sh"]
    return subprocess.Popen(
        [*isolate, *crawl], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _scrape(port: int) -> str:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as answer:
            return str(answer.read().decode())
    except OSError:
        return ""


def test_workers_that_are_all_pid_1_share_one_output_directory(tmp_path, database) -> None:
    params = WorldParams(
        seed=4, n_standalone=12, n_cname_tenants=2, n_header_tenants=2, n_horizon=2, n_farm=1,
        page_bytes=20_000,
    )  # fmt: skip
    out = tmp_path / "out"
    ports = [_free_port(), _free_port()]
    with SimWebProcess(tmp_path / "web", params) as web:
        first = _worker("worker-a", web, out, database, ports[0])
        time.sleep(4.0)  # the first has WARC and spool files open when the next starts
        second = _worker("worker-b", web, out, database, ports[1])
        spools: set[str] = set()
        scraped: dict[int, str] = {}
        while first.poll() is None or second.poll() is None:
            if (out / "spool").is_dir():
                spools |= {entry.name for entry in (out / "spool").iterdir()}
            for port in ports:
                if "courtier_requests_total" not in scraped.get(port, ""):
                    scraped[port] = _scrape(port)
            time.sleep(0.2)
        runs = [process.communicate() for process in (first, second)]
        served = web.log_path.read_text().splitlines()
    assert [p.returncode for p in (first, second)] == [0, 0], [err[-2000:] for _, err in runs]
    for port in ports:  # each worker's metrics were reachable while it crawled
        assert "courtier_requests_total" in scraped.get(port, ""), port
    assert {"worker_a-1", "worker_b-1"} <= spools, spools  # both PID 1, two directories
    assert not (out / "spool").exists() or not any((out / "spool").iterdir())
    warcs = sorted((out / "warc").glob("*.warc.gz"))
    assert not list((out / "warc").glob("*.open"))
    assert {w.name.rsplit("-", 2)[1] for w in warcs} == {"worker_a", "worker_b"}
    bodies: dict[str, int] = {}
    for path in warcs:  # every file reads whole
        with path.open("rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type == "response":
                    uri = record.rec_headers.get_header("WARC-Target-URI")
                    bodies[uri] = len(record.content_stream().read())
    documents = [json.loads(line) for line in (out / "documents.jsonl").read_text().splitlines()]
    named = [d for d in documents if "warc" in d and d["warc"]["type"] == "response"]
    assert len(named) > 20
    for document in named:  # each record is where its document says, the page it names
        ref = document["warc"]
        with (out / "warc" / ref["file"]).open("rb") as stream:
            stream.seek(ref["offset"])
            record = next(iter(ArchiveIterator(stream)))
        assert record.rec_headers.get_header("WARC-Target-URI") == document["url"]
        assert len(record.content_stream().read()) == document["bytes"]
    spooled = [d for d in named if d["bytes"] > 4096]
    assert spooled, "no body was big enough to spool"
    assert len(served) >= len(bodies)
    site = named[0]["site"]  # one site as the shared store knows it, after the crawl
    status = subprocess.run(
        [sys.executable, "-m", "courtier", "status", "--store", database, "--site", site, "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    one = json.loads(status.stdout)
    assert one["site"] == site and one["urls"].get("done", 0) >= 1
    assert one["robots"] is not None and "held_by" in one
    assert {"stats-worker-a-1.json", "stats-worker-b-1.json"} <= {
        p.name for p in out.glob("stats-*.json")
    }
