"""The fetcher against a loopback server: pinning, the connect-time check, body limits and
the latency phases of each request."""

from __future__ import annotations

import asyncio
import gzip
import ssl
from collections.abc import AsyncIterator
from dataclasses import replace

import brotli
import pytest
import trustme
from aiohttp import web

from courtier.config import FetchSection
from courtier.net.decoding import zstd  # the standard library's or its backport
from courtier.net.fetch import Fetcher, TimedResolver, request_target, type_allowed
from courtier.net.guard import Guard
from courtier.net.policy import AddressPolicy
from courtier.url import parse_url
from loopback import serving

BOMB_SIZE = 64 * 1024 * 1024
LIMIT = 1024 * 1024


@pytest.fixture(scope="module")
def bombs() -> dict[str, bytes]:
    zeros = b"\0" * BOMB_SIZE
    return {
        "gzip": gzip.compress(zeros, compresslevel=9),
        "br": brotli.compress(zeros),
        "zstd": zstd.compress(zeros),
    }


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

    async with serving(handler) as port:
        yield port, seen


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


@pytest.mark.parametrize("encoding", ["gzip", "br", "zstd"])
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


@pytest.mark.parametrize(
    "reference",
    ["/foo%41%7a", "/%2e.bar", "/foo%2zbar", "/a%2fc", "/[61:27]/:foo", "/p?q=%zz&r=%C3%A9", "/q?"],
)
async def test_the_request_target_is_the_crawl_urls_own_not_requoted(reference: str) -> None:
    # What scope, robots.txt and the dedup judged is what the server is asked for: yarl's
    # quoting would have sent /fooAz, /..bar, /foo%252zbar, /a%2Fc, /%5B61:27%5D/:foo.
    url = parse_url(reference, "http://exact.test/").fetch_url
    targets: list[str] = []

    async def handler(request: web.Request) -> web.Response:
        targets.append(request.raw_path)
        return web.Response(text="<html>ok</html>", content_type="text/html")

    async with serving(handler) as port, Fetcher(settings(), lambda address: True) as fetcher:
        on_port = url.replace("http://exact.test/", f"http://exact.test:{port}/", 1)
        result = await fetcher.fetch(on_port, "exact.test", ("127.0.0.1",))
    assert result.status == 200, result.error
    assert targets == [url.removeprefix("http://exact.test")]


def test_a_url_that_is_not_printable_ascii_is_quoted_by_yarl() -> None:
    assert request_target("http://a.test/x%41").target == "/x%41"
    assert request_target("http://a.test/caf\u00e9").target == "/caf%C3%A9"
    assert request_target("http://a.test/a b").target == "/a%20b"


@pytest.mark.parametrize(
    ("url", "host", "port", "authority", "target"),
    [
        ("http://a.test", "a.test", 80, "a.test", "/"),
        ("https://A.test:8443?q", "a.test", 8443, "A.test:8443", "/?q"),
        ("http://u:p@a.test/p?", "a.test", 80, "a.test", "/p?"),
        ("http://[::1]:81/x#frag", "::1", 81, "[::1]:81", "/x"),
        ("http://[::1]/", "::1", 80, "[::1]", "/"),
    ],
)
def test_the_request_target_of_a_url(url, host, port, authority, target) -> None:
    parsed = request_target(url)
    assert (parsed.host, parsed.port, parsed.authority, parsed.target) == (
        host,
        port,
        authority,
        target,
    )


@pytest.mark.parametrize(
    "url", ["ftp://a.test/", "http:///x", "http://a.test:0/", "http://a.test:99999/", "a.test/"]
)
def test_a_url_with_no_request_target_is_a_value_error(url: str) -> None:
    with pytest.raises(ValueError):
        request_target(url)


def test_content_type_allow_list_matches_media_types_and_prefixes():
    allowed = ("text/", "application/xhtml+xml")
    assert type_allowed("text/html; charset=utf-8", allowed)
    assert type_allowed("Application/XHTML+XML", allowed)
    assert type_allowed("", allowed)
    assert not type_allowed("application/octet-stream", allowed)
    assert not type_allowed("application/xhtml+xml-evil", allowed)


# -- latency phases ---------------------------------------------------------------------------


async def test_a_new_connection_has_a_connect_phase_and_a_reused_one_has_none(server):
    port, _seen = server
    async with Fetcher(settings(), lambda address: True) as fetcher:
        first = await fetcher.fetch(f"http://p.test:{port}/a", "p.test", ("127.0.0.1",))
        second = await fetcher.fetch(f"http://p.test:{port}/b", "p.test", ("127.0.0.1",))
    assert first.status == second.status == 200
    assert not first.phases.reused and first.phases.connect is not None
    assert first.phases.tls is None  # plain http
    assert first.phases.dns is None  # nobody timed a resolution
    assert second.phases.reused and second.phases.connect is None
    for result in (first, second):
        phases = result.phases
        assert phases.first_byte is not None and 0 <= phases.first_byte <= phases.total
        assert phases.first_byte == pytest.approx(result.latency, abs=0.005)
        assert phases.total == pytest.approx(result.elapsed, abs=0.01)


async def test_first_byte_is_the_servers_think_time():
    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(0.15)
        return web.Response(text="late", content_type="text/html")

    app = web.Application()
    app.router.add_get("/", slow)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        async with Fetcher(settings(), lambda address: True) as fetcher:
            result = await fetcher.fetch(f"http://s.test:{port}/", "s.test", ("127.0.0.1",))
    finally:
        await runner.cleanup()
    phases = result.phases
    assert phases.first_byte is not None and 0.15 <= phases.first_byte < 1.0
    assert phases.connect is not None and phases.connect < 0.15
    assert phases.total >= phases.first_byte


class SlowResolver:
    async def resolve(self, host: str) -> tuple[str, ...]:
        await asyncio.sleep(0.05)
        return ("127.0.0.1",)


async def test_the_guards_resolution_is_the_dns_phase_of_the_fetch_that_follows(server):
    port, _seen = server
    guard = Guard(AddressPolicy(allow=["127.0.0.1/32"]), TimedResolver(SlowResolver()))
    async with Fetcher(settings(), lambda address: True) as fetcher:
        resolution = await guard.resolve("named.test")
        assert resolution.allowed
        named = await fetcher.fetch(
            f"http://named.test:{port}/", "named.test", resolution.addresses
        )
        literal_resolution = await guard.resolve("127.0.0.1")  # an IP literal: no DNS
        literal = await fetcher.fetch(
            f"http://127.0.0.1:{port}/", "127.0.0.1", literal_resolution.addresses
        )
    assert named.phases.dns is not None and named.phases.dns >= 0.05
    assert named.phases.total >= named.phases.dns + (named.phases.first_byte or 0.0)
    assert literal.phases.dns is None  # the earlier resolution is not reused


async def test_https_has_a_tls_phase_apart_from_connect(tmp_path):
    ca = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("tls.test").configure_cert(context)
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))

    async def handler(request: web.Request) -> web.Response:
        return web.Response(text="<html>secure</html>", content_type="text/html")

    app = web.Application()
    app.router.add_get("/", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    port = runner.addresses[0][1]
    try:
        tls_settings = replace(settings(), ca_file=str(ca_file))
        async with Fetcher(tls_settings, lambda address: True) as fetcher:
            result = await fetcher.fetch(f"https://tls.test:{port}/", "tls.test", ("127.0.0.1",))
    finally:
        await runner.cleanup()
    assert result.status == 200, result.error
    phases = result.phases
    assert phases.tls is not None and phases.tls > 0
    assert phases.connect is not None and phases.connect >= 0
    assert phases.total >= phases.tls + phases.connect


async def test_a_failed_fetch_still_has_its_total():
    async with Fetcher(settings(), lambda address: True) as fetcher:
        # nothing listens on port 9 of loopback (discard): the connection is refused
        result = await fetcher.fetch("http://closed.test:9/", "closed.test", ("127.0.0.1",))
    assert result.status is None and result.error
    assert result.phases.total > 0 and result.phases.first_byte is None


async def test_the_result_names_the_address_the_request_went_to(server):
    # 127.0.0.2 refuses (the server listens on 127.0.0.1 only): the next address answers,
    # and that one is the address of the result (the WARC's WARC-IP-Address), kept-alive too.
    port, _seen = server
    url = f"http://pinned.test:{port}/page"
    async with Fetcher(settings(), lambda address: True) as fetcher:
        first = await fetcher.fetch(url, "pinned.test", ("127.0.0.2", "127.0.0.1"))
        again = await fetcher.fetch(url, "pinned.test", ("127.0.0.1",))
    assert first.status == 200 and first.address == "127.0.0.1"
    assert again.phases.reused and again.address == "127.0.0.1"
