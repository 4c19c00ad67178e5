"""Loopback servers for the fetcher's egress tests: a CONNECT proxy that records what it is
asked (``LoopbackProxy``), a small site naming the Host it was asked for (``site``), and an
address whose connects hang (``blackhole``). Everything listens on 127.0.0.0/8 only."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ipaddress
import socket
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field

import pytest


@dataclass
class LoopbackProxy:
    """A CONNECT proxy on 127.0.0.1 that only ever tunnels to loopback addresses."""

    port: int = 0
    connects: list[str] = field(default_factory=list)
    """The target of every CONNECT, in order."""
    heads: list[bytes] = field(default_factory=list)
    answer: bytes | None = None
    """A fixed answer to every CONNECT (a refusal) instead of a tunnel."""
    credentials: str | None = None
    """Basic credentials every CONNECT must carry ("user:password")."""
    names: dict[str, str] = field(default_factory=dict)
    """How it resolves names, for ``proxy_resolves``."""

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        self.heads.append(head)
        method, target, _version = head.split(b"\r\n", 1)[0].decode().split(" ")
        assert method == "CONNECT"
        self.connects.append(target)
        answer = self.answer
        if answer is None and self.credentials is not None:
            expected = "Basic " + base64.b64encode(self.credentials.encode()).decode()
            if f"Proxy-Authorization: {expected}\r\n".encode() not in head:
                answer = b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n"
        host, _, port = target.rpartition(":")
        host = self.names.get(host.strip("[]"), host.strip("[]"))
        if answer is None and not ipaddress.ip_address(host).is_loopback:
            answer = b"HTTP/1.1 403 Forbidden\r\n\r\n"  # never reached: the test fails first
        if answer is not None:
            writer.write(answer)
            await writer.drain()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(host, int(port))
        except OSError:
            writer.write(b"HTTP/1.1 502 Bad Gateway\r\n\r\n")
            return
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        try:
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            up_writer.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


Handle = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@contextlib.asynccontextmanager
async def serving_raw(
    handle: Handle, host: str = "127.0.0.1", tls: ssl.SSLContext | None = None
) -> AsyncIterator[int]:
    """``handle`` serving each connection on ``host`` (its port); every connection closed
    and every handler done when the block ends."""
    handlers: list[tuple[asyncio.Task[None] | None, asyncio.StreamWriter]] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        handlers.append((asyncio.current_task(), writer))  # type: ignore[arg-type]
        try:
            await handle(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            pass  # the client hung up
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError, ssl.SSLError):
                await writer.wait_closed()

    server = await asyncio.start_server(serve, host, 0, ssl=tls)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        for _task, writer in handlers:
            writer.close()
        await asyncio.gather(*(t for t, _ in handlers if t is not None), return_exceptions=True)


@contextlib.asynccontextmanager
async def proxying(proxy: LoopbackProxy) -> AsyncIterator[LoopbackProxy]:
    async with serving_raw(proxy.handle) as port:
        proxy.port = port
        yield proxy


@dataclass
class Site:
    port: int = 0
    heads: list[bytes] = field(default_factory=list)


@contextlib.asynccontextmanager
async def site(host: str = "127.0.0.1", tls: ssl.SSLContext | None = None) -> AsyncIterator[Site]:
    """A server answering every request with a small page naming its Host."""
    state = Site()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            state.heads.append(head)
            line = next(h for h in head.split(b"\r\n") if h.lower().startswith(b"host:"))
            body = b"<html>" + line + b"</html>"
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: "
                + str(len(body)).encode()
                + b"\r\n\r\n"
                + body
            )
            await writer.drain()

    async with serving_raw(handle, host, tls) as port:
        state.port = port
        yield state


@contextlib.contextmanager
def blackhole(address: str, port: int) -> Iterator[None]:
    """A listener on ``address:port`` that never accepts, its queue full: a connect there
    hangs (the kernel drops the SYN) instead of being refused at once."""
    listener = socket.socket()
    held = [listener]
    try:
        try:
            listener.bind((address, port))
        except OSError as exc:
            pytest.skip(f"cannot listen on {address}:{port}: {exc}")
        listener.listen(0)
        for _ in range(3):
            filler = socket.socket()
            held.append(filler)
            filler.setblocking(False)
            filler.connect_ex((address, port))
            time.sleep(0.02)
        probe = socket.socket()
        held.append(probe)
        probe.settimeout(0.3)
        try:
            probe.connect((address, port))
        except TimeoutError:
            pass
        else:
            pytest.skip("this kernel does not drop connects to a full listen queue")
        yield
    finally:
        for sock in held:
            sock.close()
