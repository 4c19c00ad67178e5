"""The archive of a crawl of the simulated web, read as archives are read: every WARC file by
warcio and by FastWARC, each record naming its file's warcinfo record and the address it was
fetched from, robots.txt captured, a CDXJ index whose offsets lead to their records, and a
page replayed by pywb from the WARC and the index."""

from __future__ import annotations

import gzip
import hashlib
import ipaddress
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from courtier.simweb.process import SimWebProcess
from courtier.simweb.world import WorldParams
from courtier.sinks.documents import read_documents

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
    documents = list(read_documents(crawled.out))
    sites = {document["url"].split("/")[2] for document in documents}
    assert sites and all(f"http://{site}/robots.txt" in captured for site in sites), sites
    assert any("User-agent" in text or "user-agent" in text for text in captured.values())
    assert not any(document["url"].endswith("/robots.txt") for document in documents)


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
    named = {d["url"] for d in read_documents(crawled.out) if "warc" in d}
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


def _pywb() -> str:
    python = pywb_python()
    if python is None:
        pytest.skip(
            f"pywb is not installed: set {PYWB_PYTHON} to a Python with pywb in an "
            "environment of its own (pywb's brotlipy replaces the brotli module courtier needs)"
        )
    return python


def _replays_in_pywb(python: str, index: Path, archive: Path, tmp_path: Path) -> None:
    """The first 200 HTML page of ``index`` (CDXJ), replayed by pywb from the WARC files in
    ``archive``: its payload byte for byte, and rewritten for a browser."""
    pages = []
    for line in index.read_text().splitlines():
        _key, stamp, text = line.split(" ", 2)
        fields = json.loads(text)
        if fields["mime"] == "text/html" and fields["status"] == "200":
            pages.append((stamp, fields))
    assert pages
    stamp, page = pages[0]
    with (archive / page["filename"]).open("rb") as stream:
        stream.seek(int(page["offset"]))
        archived = next(iter(ArchiveIterator(stream))).content_stream().read()
    (tmp_path / "config.yaml").write_text(
        f"collections:\n  crawl:\n    index_paths: {index}\n    archive_paths: {archive}/\n"
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


def test_a_crawled_page_replays_in_pywb_from_the_warc_and_the_index(
    crawled: Crawled, tmp_path: Path
):
    python = _pywb()
    _index(crawled.out)
    _replays_in_pywb(python, crawled.out / "warc" / "index.cdxj", crawled.out / "warc", tmp_path)


# -- the same archive as one WACZ file ----------------------------------------------------------


@pytest.fixture(scope="module")
def wacz(crawled: Crawled) -> tuple[Path, dict]:
    target = crawled.out / "export" / "crawl.wacz"
    command = [sys.executable, "-m", "courtier", "wacz", "--out", str(crawled.out), "--json"]
    run = subprocess.run(
        [*command, "-o", str(target), "--title", "archive e2e"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return target, json.loads(run.stdout)


def test_the_wacz_holds_every_warc_its_index_and_pages_with_their_hashes(
    crawled: Crawled, wacz: tuple[Path, dict]
):
    target, report = wacz
    warcs = [path.name for path in _warcs(crawled.out)]
    assert report["warcs"] == warcs and report["pages"] > 0 and not report["damaged"]
    with zipfile.ZipFile(target) as archive:
        names = set(archive.namelist())
        expected = {f"archive/{name}" for name in warcs} | {
            "indexes/index.cdx.gz", "indexes/index.idx", "pages/pages.jsonl",
            "datapackage.json", "datapackage-digest.json",
        }  # fmt: skip
        assert names == expected
        package = json.loads(archive.read("datapackage.json"))
        assert package["wacz_version"] == "1.1.1" and package["title"] == "archive e2e"
        for resource in package["resources"]:
            data = archive.read(resource["path"])
            assert resource["hash"] == "sha256:" + hashlib.sha256(data).hexdigest()
            assert resource["bytes"] == len(data)
        assert {r["path"] for r in package["resources"]} == expected - {
            "datapackage.json", "datapackage-digest.json"
        }  # fmt: skip
        digest = json.loads(archive.read("datapackage-digest.json"))["hash"]
        assert digest == "sha256:" + hashlib.sha256(archive.read("datapackage.json")).hexdigest()
        for name in warcs:  # the very files, stored
            assert archive.getinfo(f"archive/{name}").compress_type == zipfile.ZIP_STORED
            assert archive.read(f"archive/{name}") == (crawled.out / "warc" / name).read_bytes()
        pages = [json.loads(line) for line in archive.read("pages/pages.jsonl").splitlines()[1:]]
    titled = {d["url"]: d["title"] for d in read_documents(crawled.out) if d.get("title")}
    assert all(page["title"] == titled[page["url"]] for page in pages if page["url"] in titled)


def wacz_python() -> str | None:
    """An interpreter with py-wacz (``wacz validate``): pywb's environment, else this one."""
    for candidate in (os.environ.get(PYWB_PYTHON), sys.executable):
        if not candidate:
            continue
        found = subprocess.run([candidate, "-c", "import wacz.main"], capture_output=True)
        if found.returncode == 0:
            return candidate
    return None


def test_py_wacz_validates_the_wacz(wacz: tuple[Path, dict]):
    python = wacz_python()
    if python is None:
        pytest.skip(f"py-wacz is not installed: pip install wacz beside pywb ({PYWB_PYTHON})")
    run = subprocess.run(
        [python, "-m", "wacz", "validate", "-f", str(wacz[0])],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0 and "is valid" in run.stdout, run.stdout[-3000:] + run.stderr[-2000:]


def test_a_page_replays_in_pywb_from_the_wacz(wacz: tuple[Path, dict], tmp_path: Path):
    python = _pywb()
    inside = tmp_path / "unpacked"
    with zipfile.ZipFile(wacz[0]) as archive:
        archive.extractall(inside)
    # pywb reads its own ZipNum layout, not the cdxj-gzip one of WACZ (ReplayWeb.page's): the
    # index's blocks, unpacked, are the CDXJ it reads.
    index = tmp_path / "index.cdxj"
    index.write_bytes(gzip.decompress((inside / "indexes" / "index.cdx.gz").read_bytes()))
    _replays_in_pywb(python, index, inside / "archive", tmp_path)


def test_every_document_naming_its_record_matches_the_published_schema(crawled: Crawled):
    from document_schema import schema_errors

    documents = list(read_documents(crawled.out))
    assert sum("warc" in d for d in documents) > 3
    assert schema_errors(documents) == []
