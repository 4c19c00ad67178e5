"""The archive of a crawl of the simulated web, read as archives are read: every WARC file by
warcio and by FastWARC, each record naming its file's warcinfo record and the address it was
fetched from, robots.txt captured, a CDXJ index whose offsets lead to their records, and a
page replayed by pywb from the WARC and the index."""

from __future__ import annotations

import ipaddress
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from courtier.simweb.process import SimWebProcess
from courtier.simweb.world import WorldParams

DURATION_S = 8.0
PYWB_PYTHON = "COURTIER_PYWB_PYTHON"
"""An interpreter that has pywb, in an environment of its own (see ``pywb_python``)."""


@dataclass
class Crawled:
    out: Path
    allow_net: str
    seeds: list[str]


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Crawled]:
    root = tmp_path_factory.mktemp("archive")
    params = WorldParams(
        seed=3, n_standalone=4, n_cname_tenants=1, n_header_tenants=1, n_horizon=1, n_farm=0,
        n_items=10, page_bytes=20_000,
    )  # fmt: skip
    out = root / "out"
    with SimWebProcess(root / "web", params) as web:
        command = [sys.executable, "-m", "courtier", "crawl", "--seeds", str(web.seeds_path)]
        command += ["--dns", web.dns, "--allow-net", web.allow_net, "--out", str(out)]
        command += ["--duration", str(DURATION_S), "--json", "-s", "render.mode=never"]
        command += ["-s", f"warc.max_file_bytes={1 << 20}"]
        run = subprocess.run(command, capture_output=True, text=True, timeout=120)
        seeds = web.seeds_path.read_text().split()
    assert run.returncode == 0, run.stderr[-3000:]
    yield Crawled(out, web.allow_net, seeds)


def _warcs(out: Path) -> list[Path]:
    return sorted((out / "warc").glob("*.warc.gz"))


def _warcio_records(path: Path) -> list[tuple[str, dict[str, str], int]]:
    with path.open("rb") as stream:
        iterator = ArchiveIterator(stream)
        return [
            (record.rec_type, dict(record.rec_headers.headers), iterator.offset)
            for record in iterator
        ]


def test_every_warc_reads_whole_with_warcio_and_fastwarc_alike(crawled: Crawled):
    from fastwarc.warc import ArchiveIterator as FastIterator
    from fastwarc.warc import WarcRecordType

    warcs = _warcs(crawled.out)
    assert warcs and not list((crawled.out / "warc").glob("*.open"))
    total = 0
    for path in warcs:
        ours = _warcio_records(path)
        with path.open("rb") as stream:  # the block digests: over the unparsed blocks
            theirs = [
                (str(r.record_type), r.record_id, r.stream_pos, r.verify_block_digest())
                for r in FastIterator(stream, parse_http=False)
            ]
        assert [r[1] for r in theirs] == [h["WARC-Record-ID"] for _t, h, _o in ours]
        assert [r[2] for r in theirs] == [offset for _t, _h, offset in ours]
        assert [r[0] for r in theirs] == [kind for kind, _h, _o in ours]
        assert all(r[3] for r in theirs), path.name
        with path.open("rb") as stream:  # the payload digests: past the HTTP headers
            payloads = [
                r.verify_payload_digest()
                for r in FastIterator(stream, record_types=WarcRecordType.response)
            ]
        assert payloads and all(payloads), path.name
        total += len(ours)
        check = subprocess.run(
            [sys.executable, "-m", "warcio.cli", "check", str(path)],
            capture_output=True,
            text=True,
        )
        assert check.returncode == 0, check.stdout[-2000:]
    assert total > 20


def test_each_record_names_its_warcinfo_and_the_loopback_address_it_came_from(crawled: Crawled):
    network = ipaddress.ip_network(crawled.allow_net)
    kinds: set[str] = set()
    for path in _warcs(crawled.out):
        (kind, info, _o), *rest = _warcio_records(path)
        assert kind == "warcinfo"
        for kind, headers, _offset in rest:
            kinds.add(kind)
            assert headers["WARC-Warcinfo-ID"] == info["WARC-Record-ID"], kind
            if kind in ("response", "revisit", "request"):
                assert ipaddress.ip_address(headers["WARC-IP-Address"]) in network
    assert {"response", "request"} <= kinds


def test_robots_txt_is_captured_for_each_site_crawled(crawled: Crawled):
    captured: dict[str, str] = {}
    for path in _warcs(crawled.out):
        with path.open("rb") as stream:
            for record in ArchiveIterator(stream):
                uri = record.rec_headers.get_header("WARC-Target-URI")
                if record.rec_type == "response" and uri.endswith("/robots.txt"):
                    captured[uri] = record.content_stream().read().decode("utf-8", "replace")
    documents = (crawled.out / "documents.jsonl").read_text().splitlines()
    sites = {json.loads(line)["url"].split("/")[2] for line in documents}
    assert sites and all(f"http://{site}/robots.txt" in captured for site in sites), sites
    assert any("User-agent" in text or "user-agent" in text for text in captured.values())
    assert not any(json.loads(line)["url"].endswith("/robots.txt") for line in documents)


def _index(out: Path) -> tuple[bytes, dict]:
    run = subprocess.run(
        [sys.executable, "-m", "courtier", "index", "--out", str(out), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    report = json.loads(run.stdout)
    return Path(report["index"]).read_bytes(), report


def test_the_index_names_every_response_at_its_offset_and_is_the_same_twice(crawled: Crawled):
    first, report = _index(crawled.out)
    second, _ = _index(crawled.out)
    assert first == second and report["lines"] > 10 and not report["damaged"]
    lines = first.decode().splitlines()
    assert lines == sorted(lines)
    responses = 0
    for line in lines:
        _key, _stamp, text = line.split(" ", 2)
        fields = json.loads(text)
        with (crawled.out / "warc" / fields["filename"]).open("rb") as stream:
            stream.seek(int(fields["offset"]))
            record = next(iter(ArchiveIterator(stream)))
            assert record.rec_headers.get_header("WARC-Target-URI") == fields["url"]
            responses += record.rec_type == "response"
    documents = (crawled.out / "documents.jsonl").read_text().splitlines()
    named = {json.loads(d)["url"] for d in documents if '"warc"' in d}
    indexed = {json.loads(line.split(" ", 2)[2])["url"] for line in lines}
    assert named <= indexed  # and robots.txt besides
    assert responses == len(lines) - sum('"warc/revisit"' in line for line in lines)


def pywb_python() -> str | None:
    """An interpreter with pywb: ``$COURTIER_PYWB_PYTHON``, else this one. pywb cannot be a
    dependency of ours (not even a test one): it requires ``brotlipy``, whose ``brotli``
    module replaces the one of the ``Brotli`` package that our fetcher's bounded br decoding
    uses (``Decompressor.process(output_buffer_limit=...)``, which brotlipy lacks). It runs
    from an environment of its own (``python -m venv V && V/bin/pip install pywb``)."""
    for candidate in (os.environ.get(PYWB_PYTHON), sys.executable):
        if not candidate:
            continue
        found = subprocess.run(
            [candidate, "-c", "import pywb.apps.cli"], capture_output=True, timeout=60
        )
        if found.returncode == 0:
            return candidate
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _get(url: str, deadline: float) -> tuple[int, bytes]:
    while True:
        try:
            with urllib.request.urlopen(url, timeout=10) as answer:  # loopback only
                return answer.status, answer.read()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_a_crawled_page_replays_in_pywb_from_the_warc_and_the_index(
    crawled: Crawled, tmp_path: Path
):
    python = pywb_python()
    if python is None:
        pytest.skip(
            f"pywb is not installed: set {PYWB_PYTHON} to a Python with pywb in an "
            "environment of its own (pywb's brotlipy replaces the brotli module courtier needs)"
        )
    index, _ = _index(crawled.out)
    pages = []
    for line in index.decode().splitlines():
        _key, stamp, text = line.split(" ", 2)
        fields = json.loads(text)
        if fields["mime"] == "text/html" and fields["status"] == "200":
            pages.append((stamp, fields))
    assert pages
    stamp, page = pages[0]
    with (crawled.out / "warc" / page["filename"]).open("rb") as stream:
        stream.seek(int(page["offset"]))
        archived = next(iter(ArchiveIterator(stream))).content_stream().read()
    (tmp_path / "config.yaml").write_text(
        "collections:\n"
        "  crawl:\n"
        f"    index_paths: {crawled.out / 'warc' / 'index.cdxj'}\n"
        f"    archive_paths: {crawled.out / 'warc'}/\n"
    )
    port = _free_port()
    serve = ["--port", str(port), "--bind", "127.0.0.1"]
    server = subprocess.Popen(
        [python, "-c", "from pywb.apps.cli import wayback; wayback()", *serve],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        base = f"http://127.0.0.1:{port}/crawl"
        status, replayed = _get(f"{base}/{stamp}id_/{page['url']}", deadline)
        assert status == 200 and replayed == archived  # the payload, byte for byte
        status, rewritten = _get(f"{base}/{stamp}mp_/{page['url']}", deadline)
        title = archived.split(b"<title>", 1)[1].split(b"</title>", 1)[0]
        assert status == 200 and title in rewritten and b"wombat" in rewritten
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        if server.stderr is not None:
            server.stderr.close()
