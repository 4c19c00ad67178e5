"""Loaded by a `courtier crawl` process when this directory is on PYTHONPATH and
``COURTIER_LEAN_PROBE=1``: a measurement of what a lean HTTP/1.1 client would give the crawl,
not part of the product.

    PYTHONPATH=bench/lean_fetch_probe COURTIER_LEAN_PROBE=1 \\
        python bench/bench_rebook.py --runs 1 --sites 2000 --page-bytes 6000 --duration 30

``Fetcher.fetch`` is replaced, for ``http://`` URLs, by a bare client on ``asyncio.Protocol``:
one write per request, kept-alive connections pooled per (host:port, address), the address
policy asked before each new connection, a response framed by its Content-Length. What it
leaves out, and a real client must have (docs/benchmarks.md, session 16): TLS and the
certificate evidence, chunked bodies, compressed bodies and the decompressed limit, a spool,
the connect and read timeouts (only the total here), header limits, the latency phases. A
response it cannot frame is an error, never sent twice. https URLs go to aiohttp as before.
"""

from __future__ import annotations

import os
import sys

if "crawl" in sys.argv and os.environ.get("COURTIER_LEAN_PROBE") == "1":
    import asyncio
    import time
    from collections.abc import Callable, Mapping
    from typing import Any

    import courtier.net.fetch as fetch_module
    from courtier.net.fetch import Fetcher, FetchResult, Phases, type_allowed

    class _Connection(asyncio.Protocol):
        def __init__(self) -> None:
            self.transport: asyncio.Transport | None = None
            self.buffer = bytearray()
            self.waiter: asyncio.Future[tuple[Any, bytes]] | None = None
            self.closed = False
            self.head: tuple[int, list[tuple[str, str]], bool] | None = None
            self.length = -1

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self.transport = transport  # type: ignore[assignment]  # uvloop's is no subclass

        def connection_lost(self, exc: Exception | None) -> None:
            self.closed = True
            if self.waiter is not None and not self.waiter.done():
                self.waiter.set_exception(ConnectionResetError("the server closed the connection"))

        def data_received(self, data: bytes) -> None:
            self.buffer += data
            waiter = self.waiter
            if waiter is None or waiter.done():
                return
            if self.head is None:
                end = self.buffer.find(b"\r\n\r\n")
                if end < 0:
                    if len(self.buffer) > 65536:
                        waiter.set_exception(ValueError("response header too long"))
                    return
                lines = bytes(self.buffer[:end]).decode("latin-1").split("\r\n")
                del self.buffer[: end + 4]
                headers: list[tuple[str, str]] = []
                length: int | None = None
                close = False
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    value = value.strip()
                    headers.append((name, value))
                    lower = name.lower()
                    if lower == "content-length":
                        length = int(value)
                    elif lower == "connection" and value.lower() == "close":
                        close = True
                    elif lower in ("transfer-encoding", "content-encoding"):
                        waiter.set_exception(ValueError(f"the probe cannot read {lower}"))
                        return
                if length is None:
                    waiter.set_exception(ValueError("the probe needs a Content-Length"))
                    return
                self.head, self.length = (int(lines[0].split(" ", 2)[1]), headers, close), length
            if len(self.buffer) >= self.length:
                body = bytes(self.buffer[: self.length])
                del self.buffer[: self.length]
                waiter.set_result((self.head, body))
                self.head, self.length = None, -1

    _pools: dict[tuple[str, str], list[_Connection]] = {}
    _aiohttp_fetch = Fetcher.fetch

    async def _lean_fetch(
        self: Fetcher,
        url: str,
        host: str,
        addresses: tuple[str, ...],
        *,
        clock: Callable[[], float] = time.time,
        headers: Mapping[str, str] | None = None,
        on_sent: Callable[[float], None] | None = None,
        spool: bool = False,
    ) -> FetchResult:
        if not url.startswith("http://") or not addresses:
            return await _aiohttp_fetch(
                self, url, host, addresses, clock=clock, headers=headers, on_sent=on_sent,
                spool=spool,
            )  # fmt: skip
        rest = url[7:]
        slash = rest.find("/")
        authority, target = (rest, "/") if slash < 0 else (rest[:slash], rest[slash:])
        has_port = authority[-1:] != "]" and ":" in authority
        port = int(authority.rpartition(":")[2]) if has_port else 80
        address = addresses[0]
        started, started_pc = clock(), time.perf_counter()
        pool = _pools.setdefault((authority, address), [])
        connection: _Connection | None = None
        while pool and connection is None:
            candidate = pool.pop()
            connection = None if candidate.closed else candidate
        reused = connection is not None
        sent: float | None = None
        try:
            async with asyncio.timeout(self.settings.total_timeout):
                if connection is None:
                    if not self._address_allowed(address):
                        raise OSError(f"connection to {address} refused by the address policy")
                    loop = asyncio.get_running_loop()
                    _, connection = await loop.create_connection(_Connection, address, port)
                assert connection.transport is not None
                extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
                connection.waiter = asyncio.get_running_loop().create_future()
                connection.transport.write(
                    f"GET {target} HTTP/1.1\r\nHost: {authority}\r\n"
                    f"User-Agent: {self.settings.user_agent}\r\n"
                    f"Accept-Encoding: gzip, deflate, br\r\n{extra}\r\n".encode("latin-1")
                )
                sent = time.time()
                if on_sent is not None:
                    on_sent(sent)
                (status, answer_headers, close), body = await connection.waiter
            connection.waiter = None
            if close:
                connection.transport.close()
            else:
                pool.append(connection)
            named = {name.lower(): value for name, value in answer_headers}
            content_type = named.get("content-type", "")
            error = None
            if not type_allowed(content_type, self.settings.allowed_types):
                body, error = b"", f"content type not allowed: {content_type[:100]}"
            limit = self.settings.max_body_bytes
            return FetchResult(
                url=url,
                status=status,
                content_type=content_type,
                body=body[:limit],
                location=named.get("location"),
                retry_after=named.get("retry-after"),
                started_at=started,
                sent_at=sent,
                latency=time.time() - sent,
                elapsed=clock() - started,
                truncated=len(body) > limit,
                error=error,
                headers=tuple(answer_headers),
                phases=Phases(total=time.perf_counter() - started_pc, reused=reused),
            )
        except (TimeoutError, OSError, ValueError) as exc:
            if connection is not None and connection.transport is not None:
                connection.transport.close()
            return FetchResult(
                url=url,
                status=None,
                started_at=started,
                sent_at=sent,
                elapsed=clock() - started,
                error=f"{type(exc).__name__}: {exc}"[:300],
            )

    fetch_module.Fetcher.fetch = _lean_fetch  # type: ignore[method-assign]
