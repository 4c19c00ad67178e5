"""Three workers of a fleet sharing one output directory, each PID 1 of its own host (as in
containers), with bodies big enough to spool: their spool directories, WARC files and stats
never collide; every WARC reads whole with warcio; every response record holds the answer
the server sent (its status and body, sent again by the same server for the same URL); and
every record a document names is where it says.

The workers run compose.yaml's topology as processes (where no container engine is needed):
the worker service's command and environment, with the seeds, store and output directory
that compose mounts given as paths here, and each worker's metrics on a port of its own of
127.0.0.1 (in containers, port 9464 of each container's own address)."""

from __future__ import annotations

import collections
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from warcio.archiveiterator import ArchiveIterator

from courtier.simweb.log import read_log
from courtier.simweb.process import SimWebProcess
from courtier.simweb.world import WorldParams
from courtier.sinks.documents import read_documents
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
WORKERS = ("worker-a", "worker-b", "worker-c")
STAGGER_S = 3.0
"""Each worker starts while the one before it has WARC and spool files open."""
SPOOL_BYTES = 4096
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
    crawl += ["-s", f"fetch.spool_bytes={SPOOL_BYTES}", "-s", "render.mode=never"]
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


def _sent_again(address: str, url: str) -> tuple[int, bytes]:
    """The status and body the server at ``address`` (loopback) sends for ``url`` now."""
    split = urllib.parse.urlsplit(url)
    target = split.path + (f"?{split.query}" if split.query else "")
    conn = http.client.HTTPConnection(address, split.port or 80, timeout=10)
    try:
        conn.request("GET", target or "/", headers={"Host": split.netloc})
        answer = conn.getresponse()
        return answer.status, answer.read()
    finally:
        conn.close()


def _responses(warcs: list[Path]) -> list[tuple[str, str, int, bytes, bool]]:
    """(URL, server address, status, body, content-encoded) of every response record; every
    file read whole."""
    found = []
    for path in warcs:
        with path.open("rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type != "response":
                    continue
                http_headers = record.http_headers
                found.append(
                    (
                        record.rec_headers.get_header("WARC-Target-URI"),
                        record.rec_headers.get_header("WARC-IP-Address"),
                        int(http_headers.get_statuscode()),
                        record.content_stream().read(),
                        http_headers.get_header("Content-Encoding") is not None,
                    )
                )
    return found


def test_workers_that_are_all_pid_1_share_one_output_directory(tmp_path, database) -> None:
    params = WorldParams(
        seed=4, n_standalone=12, n_cname_tenants=2, n_header_tenants=2, n_horizon=2, n_farm=1,
        page_bytes=20_000,
    )  # fmt: skip
    out = tmp_path / "out"
    ports = [_free_port() for _ in WORKERS]
    with SimWebProcess(tmp_path / "web", params) as web:
        workers = []
        for n, (host, port) in enumerate(zip(WORKERS, ports, strict=True)):
            if n:
                time.sleep(STAGGER_S)
            workers.append(_worker(host, web, out, database, port))
        spools: set[str] = set()
        scraped: dict[int, str] = {}
        while any(worker.poll() is None for worker in workers):
            if (out / "spool").is_dir():
                spools |= {entry.name for entry in (out / "spool").iterdir()}
            for port in ports:
                if "courtier_requests_total" not in scraped.get(port, ""):
                    scraped[port] = _scrape(port)
            time.sleep(0.2)
        runs = [worker.communicate() for worker in workers]
        served = list(read_log(web.log_path))
        warcs = sorted((out / "warc").glob("*.warc.gz"))
        responses = _responses(warcs)
        again = {
            url: _sent_again(address, url)
            for url, address, status, _body, _coded in responses
            if status == 200
        }
    assert [w.returncode for w in workers] == [0] * len(WORKERS), [e[-2000:] for _, e in runs]
    for port in ports:  # each worker's metrics were reachable while it crawled
        assert "courtier_requests_total" in scraped.get(port, ""), port
    ids = {f"{host.replace('-', '_')}-1" for host in WORKERS}  # every one PID 1
    assert ids <= spools, spools  # a spool directory each
    assert not (out / "spool").exists() or not any((out / "spool").iterdir())
    assert not list((out / "warc").glob("*.open"))
    assert {w.name.rsplit("-", 2)[1] for w in warcs} == {i.split("-")[0] for i in ids}
    # Every response record is an answer a server sent: its status, and its body's size
    # where it was sent unencoded (the servers log body bytes as sent).
    sent = collections.Counter(
        (r.host.split(":")[0].lower(), r.target, r.status, r.bytes) for r in served
    )
    by_request = collections.Counter(
        (r.host.split(":")[0].lower(), r.target, r.status) for r in served
    )
    archived: collections.Counter[tuple[str, str, int]] = collections.Counter()
    for url, _address, status, body, coded in responses:
        split = urllib.parse.urlsplit(url)
        target = split.path + (f"?{split.query}" if split.query else "")
        archived[(split.hostname or "", target, status)] += 1
        if not coded:
            assert sent[(split.hostname or "", target, status, len(body))], url
    assert not archived - by_request, archived - by_request  # never more than were sent
    # Its body is what the server sends for that URL (a spooled body another worker's
    # spool file overwrote would differ).
    compared = spooled = 0
    for url, _address, status, body, _coded in responses:
        if status != 200 or again[url][0] != 200:
            continue
        assert body == again[url][1], url
        compared += 1
        spooled += len(body) > SPOOL_BYTES
    assert compared > 20 and spooled > 10, (compared, spooled)
    documents = list(read_documents(out))
    named = [d for d in documents if "warc" in d and d["warc"]["type"] == "response"]
    assert len(named) > 20
    assert {d["site"] for d in named} == {d["site"] for d in documents}
    for document in named:  # each record is where its document says, the page it names
        ref = document["warc"]
        with (out / "warc" / ref["file"]).open("rb") as stream:
            stream.seek(ref["offset"])
            record = next(iter(ArchiveIterator(stream)))
        assert record.rec_headers.get_header("WARC-Target-URI") == document["url"]
        assert len(record.content_stream().read()) == document["bytes"]
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
    assert {f"stats-{host}-1.json" for host in WORKERS} <= {
        p.name for p in out.glob("stats-*.json")
    }
