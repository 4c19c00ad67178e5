"""The fetcher against a loopback server: pinning, the connect-time check and body limits."""

from __future__ import annotations

import gzip
from collections.abc import AsyncIterator
from dataclasses import replace

import brotli
import pytest
from aiohttp import web

from courtier.config import FetchSection
from courtier.net.fetch import Fetcher, type_allowed

BOMB_SIZE = 64 * 1024 * 1024
LIMIT = 1024 * 1024


@pytest.fixture(scope="module")
def bombs() -> dict[str, bytes]:
    zeros = b"\0" * BOMB_SIZE
    return {"gzip": gzip.compress(zeros, compresslevel=9), "br": brotli.compress(zeros)}


@pytest.fixture
async def server(bombs: dict[str, bytes]) -> AsyncIterator[tuple[int, list[str]]]:
    seen: list[str] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        seen.append(f"{request.host} {request.path}")
        if request.path == "/redirect":
            raise web.HTTPFound("http://elsewhere.test/")
        if request.path.startswith("/bomb/"):
            encoding = request.path.rsplit("/", 1)[1]
            return web.Response(
                body=bombs[encoding],
                headers={"Content-Encoding": encoding, "Content-Type": "text/html"},
            )
        if request.path == "/long-header":
            return web.Response(text="x", headers={"X-Long": "a" * 40000})
        return web.Response(text="<html>ok</html>", content_type="text/html")

    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    yield port, seen
    await runner.cleanup()


def settings() -> FetchSection:
    return replace(FetchSection(), max_body_bytes=LIMIT, total_timeout=10.0)


async def test_named_host_connects_to_the_pinned_address_and_keeps_its_name(server):
    port, seen = server
    async with Fetcher(settings(), lambda address: True) as fetcher:
        result = await fetcher.fetch(
            f"http://pinned.test:{port}/page", "pinned.test", ("127.0.0.1",)
        )
    assert result.status == 200 and result.body == b"<html>ok</html>"
    assert seen == [f"pinned.test:{port} /page"]


async def test_a_host_without_a_pinned_address_is_never_resolved(server):
    port, seen = server
    async with Fetcher(settings(), lambda address: True) as fetcher:
        result = await fetcher.fetch(f"http://unpinned.test:{port}/", "other.test", ("127.0.0.1",))
    assert result.status is None and "pinned" in (result.error or "")
    assert seen == []


async def test_connect_time_check_refuses_an_ip_literal_the_policy_blocks(server):
    port, seen = server
    async with Fetcher(settings(), lambda address: address != "127.0.0.1") as fetcher:
        result = await fetcher.fetch(f"http://127.0.0.1:{port}/", "127.0.0.1", ("127.0.0.1",))
    assert result.status is None and "refused by the address policy" in (result.error or "")
    assert seen == []


@pytest.mark.parametrize("encoding", ["gzip", "br"])
async def test_compression_bomb_stops_at_the_decompressed_limit(server, bombs, encoding):
    port, _seen = server
    assert len(bombs[encoding]) < LIMIT < BOMB_SIZE
    async with Fetcher(settings(), lambda address: True) as fetcher:
        result = await fetcher.fetch(
            f"http://b.test:{port}/bomb/{encoding}", "b.test", ("127.0.0.1",)
        )
    assert result.status == 200
    assert result.truncated
    assert len(result.body) == LIMIT


async def test_redirects_are_returned_not_followed(server):
    port, seen = server
    async with Fetcher(settings(), lambda address: True) as fetcher:
        result = await fetcher.fetch(f"http://r.test:{port}/redirect", "r.test", ("127.0.0.1",))
    assert result.status == 302
    assert result.location == "http://elsewhere.test/"
    assert len(seen) == 1


async def test_oversized_header_is_an_error_not_a_crash(server):
    port, _seen = server
    async with Fetcher(settings(), lambda address: True) as fetcher:
        result = await fetcher.fetch(f"http://h.test:{port}/long-header", "h.test", ("127.0.0.1",))
    assert result.status is None and result.error


async def test_disallowed_content_type_is_not_downloaded(server):
    port, seen = server
    limited = replace(settings(), allowed_types=("image/",))
    async with Fetcher(limited, lambda address: True) as fetcher:
        result = await fetcher.fetch(f"http://t.test:{port}/page", "t.test", ("127.0.0.1",))
    assert result.status == 200
    assert result.body == b""
    assert "content type not allowed" in (result.error or "")
    assert len(seen) == 1


def test_content_type_allow_list_matches_media_types_and_prefixes():
    allowed = ("text/", "application/xhtml+xml")
    assert type_allowed("text/html; charset=utf-8", allowed)
    assert type_allowed("Application/XHTML+XML", allowed)
    assert type_allowed("", allowed)
    assert not type_allowed("application/octet-stream", allowed)
    assert not type_allowed("application/xhtml+xml-evil", allowed)
