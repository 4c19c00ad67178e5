"""The fetcher's HTTP/1.1 client against a scripted server: framing, keep-alive, limits,
timeouts and hang-ups, each answered with the exact bytes a server might send."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import socket
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field, replace

import brotli
import pytest

from courtier.config import FetchSection
from courtier.net.decoding import zstd  # the standard library's or its backport
from courtier.net.fetch import Fetcher, FetchResult

Script = Callable[[int, bytes], bytes | None]
"""(request number on this connection, the request's head) -> bytes to send, then keep
reading; None: close the connection without a word."""


@dataclass
class Scripted:
    port: int
    connections: int = 0
    requests: list[bytes] = field(default_factory=list)


Handle = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@contextlib.asynccontextmanager
async def raw_server(handle: Handle, host: str = "127.0.0.1") -> AsyncIterator[int]:
    """``handle`` serving each connection on ``host`` (its port); every connection is
    closed, and every handler done, when the block ends."""
    handlers: list[tuple[asyncio.Task[None] | None, asyncio.StreamWriter]] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        handlers.append((asyncio.current_task(), writer))  # type: ignore[arg-type]
        try:
            await handle(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client hung up
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    server = await asyncio.start_server(serve, host, 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        for _task, writer in handlers:
            writer.close()  # a handler still reading ends: the loop must not cancel it
        await asyncio.gather(*(t for t, _ in handlers if t is not None), return_exceptions=True)


@contextlib.asynccontextmanager
async def scripted(script: Script, *, close_after: bool = False) -> AsyncIterator[Scripted]:
    """A server answering each request head it reads with ``script``'s bytes
    (``close_after``: and closing the connection after each answer)."""
    state = Scripted(0)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        state.connections += 1
        number = 0
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            state.requests.append(head)
            answer = script(number, head)
            number += 1
            if answer is None:
                return
            writer.write(answer)
            await writer.drain()
            if close_after:
                return

    async with raw_server(handle) as port:
        state.port = port
        yield state


def ok(body: bytes = b"<html>ok</html>", *extra: bytes, version: bytes = b"1.1") -> bytes:
    head = b"HTTP/" + version + b" 200 OK\r\nContent-Type: text/html\r\n"
    head += b"".join(line + b"\r\n" for line in extra)
    return head + b"Content-Length: %d\r\n\r\n" % len(body) + body


def chunked(*pieces: bytes) -> bytes:
    body = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"
    return (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n" + body
    )


def settings(**changes: float) -> FetchSection:
    return replace(FetchSection(), **{"max_body_bytes": 64 * 1024, "total_timeout": 5.0, **changes})


async def get(
    server: Scripted, *paths: str, fetch_settings: FetchSection | None = None
) -> list[FetchResult]:
    async with Fetcher(fetch_settings or settings(), lambda address: True) as fetcher:
        return [
            await fetcher.fetch(f"http://s.test:{server.port}{path}", "s.test", ("127.0.0.1",))
            for path in paths
        ]


async def test_a_chunked_body_is_read_whole_and_its_connection_kept():
    async with scripted(lambda n, head: chunked(b"<html>", b"x" * 5000, b"</html>")) as server:
        first, second = await get(server, "/a", "/b")
    assert first.status == second.status == 200
    assert first.body == b"<html>" + b"x" * 5000 + b"</html>"
    assert second.phases.reused and server.connections == 1


async def test_an_interim_100_continue_is_skipped():
    async with scripted(lambda n, head: b"HTTP/1.1 100 Continue\r\n\r\n" + ok(b"final")) as server:
        (result,) = await get(server, "/")
    assert result.status == 200 and result.body == b"final"


async def test_a_body_framed_by_the_connections_end_is_read_to_it():
    answer = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n" + b"y" * 3000
    async with scripted(lambda n, head: answer, close_after=True) as server:
        first, second = await get(server, "/a", "/b")
    assert first.body == second.body == b"y" * 3000
    assert server.connections == 2 and not second.phases.reused


@pytest.mark.parametrize("status", [204, 304])
async def test_no_body_answers_keep_the_connection(status: int):
    def script(number: int, head: bytes) -> bytes:
        if number == 0:
            return b'HTTP/1.1 %d Nothing\r\nETag: "e"\r\n\r\n' % status
        return ok(b"next")

    async with scripted(script) as server:
        first, second = await get(server, "/a", "/b")
    assert first.status == status and first.body == b"" and first.error is None
    assert second.body == b"next" and second.phases.reused and server.connections == 1


@pytest.mark.parametrize(
    ("answer", "kept"),
    [
        (ok(b"x", b"Connection: close"), False),
        (ok(b"x", version=b"1.0"), False),
        (ok(b"x", b"Connection: keep-alive", version=b"1.0"), True),
        (ok(b"x"), True),
    ],
)
async def test_a_connection_is_kept_only_when_the_answer_says_so(answer: bytes, kept: bool):
    async with scripted(lambda n, head: answer) as server:
        first, second = await get(server, "/a", "/b")
    assert first.body == second.body == b"x"
    assert server.connections == (1 if kept else 2)


async def test_bytes_after_a_whole_answer_spoil_the_connection_not_the_answer():
    async with scripted(lambda n, head: ok(b"x") + b"junk that is no response\r\n\r\n") as server:
        first, second = await get(server, "/a", "/b")
    assert first.status == 200 and first.body == b"x"
    assert second.status == 200 and server.connections == 2


async def test_a_hang_up_mid_body_is_an_error_and_the_request_is_not_sent_again():
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b"
    async with scripted(lambda n, head: answer, close_after=True) as server:
        (result,) = await get(server, "/")
    assert result.status is None and (result.error or "").startswith("ServerDisconnected")
    assert len(server.requests) == 1


async def test_a_hang_up_without_an_answer_is_asked_once():
    async with scripted(lambda n, head: None) as server:
        (result,) = await get(server, "/")
    assert result.status is None and (result.error or "").startswith("ServerDisconnected")
    assert len(server.requests) == 1 and result.sent_at is not None


async def test_a_server_closing_a_kept_connection_while_it_waits_costs_no_request():
    async with (
        scripted(lambda n, head: ok(b"x"), close_after=True) as server,
        Fetcher(settings(), lambda address: True) as fetcher,
    ):
        url = f"http://s.test:{server.port}/"
        first = await fetcher.fetch(url, "s.test", ("127.0.0.1",))
        await asyncio.sleep(0.1)  # the server's FIN arrives: the idle connection is lost
        second = await fetcher.fetch(url, "s.test", ("127.0.0.1",))
    assert first.status == second.status == 200
    assert not second.phases.reused and server.connections == 2


async def test_silence_is_a_read_timeout():
    loop = asyncio.get_running_loop()
    async with scripted(lambda n, head: b"HTTP/1.1 200 OK\r\n") as server:
        began = loop.time()
        (result,) = await get(server, "/", fetch_settings=settings(read_timeout=0.3))
    assert result.status is None and (result.error or "").startswith("ReadTimeout")
    assert 0.25 <= loop.time() - began < 3.0


async def test_a_drip_that_never_ends_is_cut_by_the_total_timeout():
    async def drip(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n")
        while not writer.is_closing():
            writer.write(b"x")
            await writer.drain()
            await asyncio.sleep(0.02)

    async with (
        raw_server(drip) as port,
        Fetcher(settings(total_timeout=0.5, read_timeout=0.3), lambda a: True) as f,
    ):
        result = await f.fetch(f"http://d.test:{port}/", "d.test", ("127.0.0.1",))
    assert result.status is None and (result.error or "").startswith("TotalTimeout")
    assert 0.45 <= result.elapsed < 3.0


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        (ok(b"x", *[b"X-%d: v" % i for i in range(200)]), "header fields"),
        (ok(b"x", b"X-Long: " + b"a" * 20000), "longer than"),
        (b"HTTP/1.1 2000 What\r\nContent-Length: 0\r\n\r\n", "malformed"),
        (b"SMTP ready\r\n\r\n", "malformed"),
        (b"HTTP/1.1 099 Low\r\nContent-Length: 0\r\n\r\n", "status"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nx", "malformed"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "malformed"),
        (
            b"HTTP/1.1 101 Switching\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n",
            "switched",
        ),
    ],
    ids=[
        "many-fields",
        "long-field",
        "status-2000",
        "no-http",
        "status-99",
        "two-lengths",
        "bad-chunk",
        "upgrade",
    ],
)
async def test_an_answer_that_breaks_http_or_a_limit_is_an_error(answer: bytes, words: str):
    async with scripted(lambda n, head: answer) as server:
        (result,) = await get(server, "/", fetch_settings=settings(max_header_bytes=16384))
    assert result.status is None and (result.error or "").startswith("ResponseError")
    assert words in (result.error or "")


async def test_an_endless_head_is_cut_at_its_limit():
    async def endless(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nX-Endless: ")
        for _ in range(1000):
            writer.write(b"a" * 4096)
            await writer.drain()

    async with raw_server(endless) as port, Fetcher(settings(), lambda a: True) as fetcher:
        result = await fetcher.fetch(f"http://e.test:{port}/", "e.test", ("127.0.0.1",))
    assert result.status is None and "head longer than" in (result.error or "")


async def test_bare_line_feeds_are_read_as_browsers_read_them():
    answer = b"HTTP/1.1 200 OK\nContent-Type: text/html\nContent-Length: 2\n\nok"
    async with scripted(lambda n, head: answer) as server:
        (result,) = await get(server, "/")
    assert result.status == 200 and result.body == b"ok"


@pytest.mark.parametrize(
    ("coding", "encode"),
    [
        ("gzip", gzip.compress),
        ("x-gzip", gzip.compress),
        ("deflate", zlib.compress),
        ("deflate", lambda data: zlib.compress(data)[2:-4]),  # raw, as some servers send it
        ("br", brotli.compress),
        ("identity", lambda data: data),
        ("gzip, br", lambda data: brotli.compress(gzip.compress(data))),  # stacked
    ],
)
async def test_each_content_coding_is_decoded(coding: str, encode: Callable[[bytes], bytes]):
    page = b"<html>" + b"words and more words " * 500 + b"</html>"
    answer = ok(encode(page), b"Content-Encoding: " + coding.encode())
    async with scripted(lambda n, head: answer) as server:
        first, second = await get(server, "/a", "/b")
    assert first.body == second.body == page and not first.truncated
    assert server.connections == 1


async def test_a_chunked_gzip_bomb_stops_at_the_limit_and_closes():
    bomb = gzip.compress(b"\0" * (16 * 1024 * 1024))
    pieces = [bomb[i : i + 1000] for i in range(0, len(bomb), 1000)]
    answer = chunked(*pieces).replace(b"\r\n\r\n", b"\r\nContent-Encoding: gzip\r\n\r\n", 1)
    async with scripted(lambda n, head: answer) as server:
        first, _second = await get(server, "/a", "/b")
    assert first.status == 200 and first.truncated and len(first.body) == 64 * 1024
    assert server.connections == 2  # the rest was never read: that connection is gone


async def test_a_coding_we_never_asked_for_is_an_error_not_the_page():
    answer = ok(b"\x1f\x9d" + b"\0" * 100, b"Content-Encoding: compress")
    async with scripted(lambda n, head: answer) as server:
        (result,) = await get(server, "/")
    assert result.status is None and result.body == b""
    assert "'compress' coding" in (result.error or "")


async def test_a_zstd_body_is_decoded_and_a_corrupt_one_is_an_error():
    page = b"<html>" + b"zstd, frame by frame " * 500 + b"</html>"
    answers = [
        ok(zstd.compress(page[:4000]) + zstd.compress(page[4000:]), b"Content-Encoding: zstd"),
        ok(b"(\xb5/\xfd" + b"\xff" * 100, b"Content-Encoding: zstd"),
    ]
    async with scripted(lambda n, head: answers[n]) as server:
        good, corrupt = await get(server, "/good", "/corrupt")
    assert good.status == 200 and good.body == page and good.error is None
    assert corrupt.status is None and "zstd body is corrupt" in (corrupt.error or "")


async def test_a_corrupt_body_is_an_error():
    answer = ok(b"this is not gzip at all", b"Content-Encoding: gzip")
    async with scripted(lambda n, head: answer) as server:
        (result,) = await get(server, "/")
    assert result.status is None and "gzip body is corrupt" in (result.error or "")


@pytest.mark.parametrize(("size", "connections"), [(1000, 1), (200_000, 2)])
async def test_a_refused_type_is_read_past_when_small_and_hung_up_on_when_big(
    size: int, connections: int
):
    answer = ok(b"%" * size).replace(b"text/html", b"application/zip")
    async with scripted(lambda n, head: answer) as server:
        first, _second = await get(server, "/a.zip", "/b.zip")
    assert first.status == 200 and first.body == b"" and "not allowed" in (first.error or "")
    assert server.connections == connections


async def test_the_request_is_one_get_with_our_headers_and_the_callers():
    async with (
        scripted(lambda n, head: ok()) as server,
        Fetcher(settings(), lambda address: True) as fetcher,
    ):
        result = await fetcher.fetch(
            f"http://s.test:{server.port}/p?q=1#frag",
            "s.test",
            ("127.0.0.1",),
            headers={"If-None-Match": '"abc"'},
        )
    assert result.status == 200
    lines = server.requests[0].decode().split("\r\n")
    assert lines[0] == "GET /p?q=1 HTTP/1.1"
    assert f"Host: s.test:{server.port}" in lines
    assert 'If-None-Match: "abc"' in lines
    assert any(line.startswith("User-Agent: Mozilla/5.0 (compatible; courtier/") for line in lines)
    assert "Accept-Encoding: gzip, deflate, br, zstd" in lines


async def test_a_header_value_with_a_line_break_is_never_sent():
    async with (
        scripted(lambda n, head: ok()) as server,
        Fetcher(settings(), lambda address: True) as fetcher,
    ):
        result = await fetcher.fetch(
            f"http://s.test:{server.port}/",
            "s.test",
            ("127.0.0.1",),
            headers={"If-None-Match": '"a"\r\nX-Injected: 1'},
        )
    assert result.status is None and "cannot be sent" in (result.error or "")
    assert server.requests == [] and server.connections == 0


async def test_an_address_the_policy_refuses_is_skipped_for_the_next():
    async with (
        scripted(lambda n, head: ok()) as server,
        Fetcher(settings(), lambda address: address == "127.0.0.1") as fetcher,
    ):
        result = await fetcher.fetch(
            f"http://s.test:{server.port}/", "s.test", ("10.0.0.1", "127.0.0.1")
        )
        refused = await fetcher.fetch(f"http://s.test:{server.port}/", "s.test", ("10.0.0.1",))
    assert result.status == 200
    assert refused.status is None and "refused by the address policy" in (refused.error or "")


async def test_a_kept_connection_is_not_used_for_an_address_no_longer_approved():
    async with (
        scripted(lambda n, head: ok()) as server,
        Fetcher(settings(), lambda address: True) as fetcher,
    ):
        url = f"http://s.test:{server.port}/"
        await fetcher.fetch(url, "s.test", ("127.0.0.1",))
        moved = await fetcher.fetch(url, "s.test", ("127.0.0.2",))  # a new DNS answer
    assert not moved.phases.reused
    assert server.connections == 1  # nothing listens on 127.0.0.2:port: never reached here
    assert moved.status is None


async def test_connections_in_use_are_closed_with_the_fetcher():
    async with scripted(lambda n, head: b"HTTP/1.1 200 OK\r\n") as server:
        fetcher = Fetcher(settings(read_timeout=30.0), lambda address: True)
        async with fetcher:
            task = asyncio.create_task(
                fetcher.fetch(f"http://s.test:{server.port}/", "s.test", ("127.0.0.1",))
            )
            await asyncio.sleep(0.2)
        result = await asyncio.wait_for(task, 2.0)
    assert result.status is None and result.error


async def test_a_cancelled_fetch_hangs_up_at_once():
    hung_up = asyncio.Event()

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        await reader.read()  # b"" once the client closes
        hung_up.set()

    async with (
        raw_server(silent) as port,
        Fetcher(settings(read_timeout=30.0), lambda a: True) as f,
    ):
        task = asyncio.create_task(f.fetch(f"http://c.test:{port}/", "c.test", ("127.0.0.1",)))
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.wait_for(hung_up.wait(), 2.0)  # not left open until the fetcher closes


async def test_an_ipv6_address_is_connected_to_as_given():
    try:
        probe = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        probe.bind(("::1", 0))
        probe.close()
    except OSError:
        pytest.skip("no IPv6 loopback here")

    async def echo_host(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        writer.write(ok(head.split(b"\r\n")[1]))  # the Host line as the body
        await writer.drain()

    async with (
        raw_server(echo_host, "::1") as port,
        Fetcher(settings(), lambda address: address == "::1") as fetcher,
    ):
        result = await fetcher.fetch(f"http://[::1]:{port}/", "::1", ("::1",))
    assert result.status == 200, result.error
    assert result.body == f"Host: [::1]:{port}".encode()
