"""Spooled bodies: a body past the threshold goes to a file as it arrives, is read there by
whoever parses it, and its file goes when the fetch's result does (issue 12, case 7)."""

from __future__ import annotations

import gc
import gzip
import hashlib
import io
import os
import pickle
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest
from aiohttp import web

from courtier.config import FetchSection
from courtier.content.reading import ReadContext, read_and_capture, read_page
from courtier.net.fetch import Fetcher
from courtier.net.spool import (
    Spool,
    SpooledBody,
    SpoolWriter,
    body_bytes,
    file_md5,
)
from courtier.pipeline.keeping.keeper import Kept
from courtier.pipeline.workers.jobs import LARGE_BYTES, is_large
from courtier.sinks.warc import Capture, encode_capture
from loopback import serving

BIG = (b"<html><body>" + b"<p><a href='/x'>spooled</a></p>" * 40_000)[: 900 * 1024]
THRESHOLD = 256 * 1024
LIMIT = 1024 * 1024


@pytest.fixture
async def server() -> AsyncIterator[int]:
    async def handler(request: web.Request) -> web.StreamResponse:
        if request.path == "/big":
            return web.Response(body=BIG, content_type="text/html")
        if request.path == "/bomb":
            zeros = gzip.compress(b"\0" * (8 * LIMIT), compresslevel=9)
            headers = {"Content-Encoding": "gzip", "Content-Type": "text/html"}
            return web.Response(body=zeros, headers=headers)
        return web.Response(text="<html>small</html>", content_type="text/html")

    async with serving(handler) as port:
        yield port


def settings() -> FetchSection:
    return replace(FetchSection(), max_body_bytes=LIMIT, total_timeout=10.0)


def _exists(path: str) -> bool:
    return os.path.exists(path)


def _size(path: str) -> int:
    return os.path.getsize(path)


async def _fetch(tmp_path: Path, port: int, path: str, *, spool: bool = True):
    pool = Spool(tmp_path, THRESHOLD)
    async with Fetcher(settings(), lambda address: True, pool) as fetcher:
        result = await fetcher.fetch(
            f"http://s.test:{port}{path}", "s.test", ("127.0.0.1",), spool=spool
        )
    return pool, result


async def test_a_body_past_the_threshold_is_in_a_file_not_in_memory(tmp_path, server):
    pool, result = await _fetch(tmp_path, server, "/big")
    assert result.status == 200 and result.body == b""
    spooled = result.spooled
    assert spooled is not None and spooled.size == len(BIG) == result.size
    assert Path(spooled.path).parent == pool.directory
    assert spooled.read() == BIG and body_bytes(result.content) == BIG
    assert file_md5(spooled) == hashlib.md5(BIG).hexdigest()


async def test_a_small_body_and_a_body_not_to_spool_stay_in_memory(tmp_path, server):
    _pool, small = await _fetch(tmp_path, server, "/small")
    assert small.spooled is None and small.body == b"<html>small</html>"
    _pool, robots_like = await _fetch(tmp_path, server, "/big", spool=False)
    assert robots_like.spooled is None and robots_like.body == BIG


async def test_a_spooled_body_is_cut_at_the_body_limit(tmp_path, server):
    _pool, result = await _fetch(tmp_path, server, "/bomb")
    assert result.truncated and result.spooled is not None
    assert result.size == LIMIT and _size(result.spooled.path) == LIMIT


async def test_the_file_goes_with_the_result_and_the_directory_with_the_spool(tmp_path, server):
    pool, result = await _fetch(tmp_path, server, "/big")
    assert result.spooled is not None
    path = result.spooled.path
    copy = pickle.loads(pickle.dumps(result.spooled))  # what a parse worker gets: a name
    assert copy.path == path and copy.size == len(BIG)
    del copy
    gc.collect()
    assert _exists(path)  # a copy's end removes nothing
    del result
    gc.collect()
    assert not _exists(path)
    assert pool.directory.is_dir()
    pool.close()
    assert not pool.root.exists()


def test_a_dead_process_spool_is_removed_and_a_live_one_kept(tmp_path):
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    root = tmp_path / "spool"
    (root / dead.stdout.strip()).mkdir(parents=True)
    (root / dead.stdout.strip() / "1.body").write_bytes(b"left by kill -9")
    (root / str(os.getppid())).mkdir()  # a running process: not ours to remove
    Spool(tmp_path, 1).remove_orphans()
    assert sorted(p.name for p in root.iterdir()) == [str(os.getppid())]


def test_a_parse_job_of_a_spooled_body_counts_its_size_and_reads_its_file(tmp_path):
    pool = Spool(tmp_path, 1)
    writer = pool.open()
    writer.write(BIG)
    body = writer.close()
    assert is_large((body, "http://s.test/", ReadContext("text/html")))
    assert len(BIG) > LARGE_BYTES
    assert (
        read_page(body, "http://s.test/", ReadContext("text/html")).links
        == read_page(BIG, "http://s.test/", ReadContext("text/html")).links
    )


def test_a_spooled_capture_is_encoded_like_the_bytes_and_the_page_comes_back_light(tmp_path):
    pool = Spool(tmp_path, 1)
    writer = pool.open()
    secret = b"<p>key AKIAIOSFODNN7EXAMPLE</p>"
    writer.write(BIG + secret)
    body = writer.close()
    capture = Capture("http://s.test/", 0.0, 200, (("Content-Type", "text/html"),), body)
    from_file = encode_capture(capture)
    from_bytes = encode_capture(replace(capture, payload=BIG + secret))
    assert from_file.digest == from_bytes.digest
    page, encoded = read_and_capture(body, "http://s.test/", ReadContext("text/html"), capture, 3)
    assert page.redactions and page.payload is None  # the redacted body is in the records
    assert encoded.digest != from_file.digest  # and they hold the redacted one
    assert isinstance(pickle.loads(pickle.dumps(body)), SpooledBody)


async def test_a_threshold_of_0_never_spools_not_even_a_truncated_body(tmp_path, server):
    pool = Spool(tmp_path, 0)
    async with Fetcher(settings(), lambda address: True, pool) as fetcher:
        url = f"http://s.test:{server}/bomb"
        result = await fetcher.fetch(url, "s.test", ("127.0.0.1",), spool=True)
    assert result.truncated and result.spooled is None and len(result.body) == LIMIT


async def test_an_unparsed_spooled_body_is_fingerprinted_like_its_bytes(tmp_path, server):
    _pool, result = await _fetch(tmp_path, server, "/big")
    assert result.spooled is not None
    expected = hashlib.md5(BIG).hexdigest()
    assert await Kept(result.content).fingerprint(result) == expected
    assert await Kept(BIG).fingerprint(result) == expected


class _FailingFile(io.RawIOBase):
    """A spool file on a disk that fills up after ``room`` bytes (part of a write fits)."""

    def __init__(self, path: str, room: int) -> None:
        self._real = open(path, "wb", buffering=0)  # noqa: SIM115 - closed in close()
        self._room = room

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:  # type: ignore[override]
        if self._room <= 0:
            raise OSError(28, "No space left on device")
        part = bytes(data[: self._room])
        self._real.write(part)
        self._room -= len(part)
        return len(part)

    def close(self) -> None:
        self._real.close()
        super().close()


async def test_a_full_disk_keeps_the_body_in_memory_whole(tmp_path, server, monkeypatch):
    pool = Spool(tmp_path, THRESHOLD)
    made: list[str] = []

    def opener(self):  # the spool's own open, on a disk with 300 KiB free
        self.directory.mkdir(parents=True, exist_ok=True)
        path = str(self.directory / f"{len(made)}.body")
        made.append(path)
        return SpoolWriter(_FailingFile(path, 300 * 1024), path)

    monkeypatch.setattr(Spool, "open", opener)
    async with Fetcher(settings(), lambda address: True, pool) as fetcher:
        url = f"http://s.test:{server}/big"
        result = await fetcher.fetch(url, "s.test", ("127.0.0.1",), spool=True)
    assert result.status == 200 and result.spooled is None
    assert result.body == BIG  # nothing lost, nothing doubled
    assert pool.failures == 1 and len(made) == 1  # one try, then memory
    assert not any(_exists(path) for path in made)


async def test_a_spool_that_cannot_be_made_keeps_bodies_in_memory(tmp_path, server):
    (tmp_path / "spool").write_text("a file where the spool directory should be")
    pool = Spool(tmp_path, THRESHOLD)
    async with Fetcher(settings(), lambda address: True, pool) as fetcher:
        url = f"http://s.test:{server}/big"
        result = await fetcher.fetch(url, "s.test", ("127.0.0.1",), spool=True)
    assert result.body == BIG and result.spooled is None and pool.failures == 1


def test_spools_are_named_by_host_and_pid_and_only_this_hosts_dead_ones_removed(tmp_path):
    """Workers of a fleet share one output directory, each as PID 1 of its own container."""
    from courtier.runtime.processes import host_tag

    spool = Spool(tmp_path, 1)
    assert spool.directory.name == f"{host_tag()}-{os.getpid()}"
    root = tmp_path / "spool"
    (root / f"otherhost-{os.getpid()}").mkdir(parents=True)  # another container's PID 1
    (root / f"{host_tag()}-{os.getpid()}").mkdir()  # an earlier process of ours
    (root / f"{host_tag()}-{os.getppid()}").mkdir()  # a live process of this host
    spool.remove_orphans()
    assert sorted(p.name for p in root.iterdir()) == sorted(
        [f"otherhost-{os.getpid()}", f"{host_tag()}-{os.getppid()}"]
    )
