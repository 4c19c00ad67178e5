"""The hostile web itself: every response ends (deadline, byte limit), and its bombs are
what they claim to be. A crawl test that passes because the server never sent the hostile
thing would prove nothing."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
import zlib

import brotli
import pytest
from hostile_web import (
    GIB,
    MIB,
    HostileWeb,
    brotli_bomb,
    deflate_bomb,
    gzip_bomb,
    mixed_hosts,
    normal_site,
    sitemap_entry_bomb,
    sitemap_space_bomb,
    zstd_bomb,
)

pytestmark = pytest.mark.timeout(60)


async def _get(port: int, host: str, target: str, address: str = "127.0.0.1") -> bytes:
    reader, writer = await asyncio.open_connection(address, port)
    try:
        writer.write(f"GET {target} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        await writer.drain()
        return await reader.read()  # to EOF: the server must close
    finally:
        writer.close()
        await writer.wait_closed()


async def test_every_hostile_answer_ends_within_the_deadline_and_byte_limit():
    deadline, limit = 1.5, 4 * MIB
    web = HostileWeb.standard(deadline=deadline, response_limit=limit)
    web.hosts.update(mixed_hosts(web))
    web.hosts["normal.test"] = normal_site()
    with web.start():
        port = web.ports["hostile"]
        targets = [(host, path) for host in web.hosts for path in ("/", "/robots.txt")]
        started = time.monotonic()
        async with asyncio.timeout(deadline + 10):
            bodies = await asyncio.gather(*(_get(port, h, p) for h, p in targets))
        took = time.monotonic() - started
        assert took < deadline + 5
        assert all(len(body) <= limit for body in bodies)
        ends = {(hit.host, hit.target): hit.end for hit in web.hits}
        assert len(ends) == len(targets)
        assert set(ends.values()) <= {"done", "deadline", "budget"}, ends
        # The slow and endless ones were really cut by the server's bounds.
        assert ends[("stall.test", "/")] == "deadline"
        assert ends[("slowloris-body.test", "/")] == "deadline"
        assert ends[("chunk-endless.test", "/")] == "budget"
        assert ends[("bomb-gzip.test", "/")] == "done"
        # Bodies are what they say: 10,000 headers, a 1 MiB header line.
        header_10000 = bodies[targets.index(("header-10000.test", "/"))]
        assert header_10000.count(b"\r\nX-Header-") == 10_000
        assert len(bodies[targets.index(("header-huge.test", "/"))]) > MIB
        # Both canaries listen, and count connections that never send a request.
        for name, address in (("canary", "127.0.0.1"), ("canary-blocked", "127.0.0.2")):
            answer = await _get(web.ports[name], "anything.test", "/", address)
            assert answer.startswith(b"HTTP/1.1 404")
        assert web.connections["canary"] == web.connections["canary-blocked"] == 1
        assert web.ports["canary-blocked"] == port


def test_gzip_and_deflate_bombs_hold_a_gibibyte_of_zeros():
    for body, wbits in ((gzip_bomb(), 31), (deflate_bomb(), 15)):
        assert len(body) < 1.1 * MIB
        inflater = zlib.decompressobj(wbits)
        head = inflater.decompress(body, 64 * MIB)
        assert head == bytes(64 * MIB)
    assert int.from_bytes(gzip_bomb()[-4:], "little") == GIB % 2**32  # gzip's ISIZE


def test_brotli_bomb_holds_zeros():
    body = brotli_bomb()
    assert len(body) < 300_000
    head = brotli.Decompressor().process(body, output_buffer_limit=64 * MIB)
    assert len(head) >= 64 * MIB and not any(head)


@pytest.mark.skipif(shutil.which("zstd") is None, reason="no zstd command to check the frame")
def test_zstd_bomb_is_a_valid_frame_of_a_gibibyte():
    body = zstd_bomb()
    assert len(body) < 40_000
    out = subprocess.run(
        "zstd -dc --no-progress | wc -c", shell=True, input=body, capture_output=True, check=True
    )
    assert int(out.stdout) == GIB


def test_sitemap_bombs_decompress_past_the_sitemap_limit():
    for body in (sitemap_space_bomb(), sitemap_entry_bomb("http://x.test/listed")):
        assert len(body) < 4 * MIB
        inflater = zlib.decompressobj(31)
        head = inflater.decompress(body, 60 * MIB)
        assert len(head) == 60 * MIB  # the sitemap protocol's limit is 50 MiB
        assert head.startswith(b"<?xml")
