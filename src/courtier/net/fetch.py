"""The HTTP fetcher: connect to exactly the address the guard checked, read within limits.

Rules:
- Pinning: the fetcher never resolves a name. It connects only to the addresses the guard
  approved for the request's host (given with the call), and only when the URL's host is
  that host; each address is asked of the address policy again as its socket is made, so
  nothing connects to an address the policy refuses, whatever path led there. A host's
  addresses are raced by Happy Eyeballs, through a CONNECT proxy when one is configured
  (``courtier.net.connect``, ``courtier.net.proxy``).
- ``Host``, TLS SNI and certificate checks stay on the hostname (the URL keeps the name).
  Certificates are always verified (system CAs, plus ``fetch.ca_file``); the one an https
  server presented comes back with the result, as evidence for origin inference.
- The request goes out for exactly the URL given: a crawl URL is already serialised by the
  WHATWG rules (ASCII, percent-encoded), and it is what scope, robots.txt, the trap patterns
  and the dedup judged, so nothing quotes it again. A URL that is not printable ASCII (a
  caller's, not a crawl URL) is quoted by yarl first. The fragment is not sent.
- One request per connection at a time, written in one piece, never sent twice: a server
  that drops the connection is an error for this request (``courtier.net.http1``). Kept-alive
  connections wait in a pool per (scheme, host, port) for at most ``pool.IDLE_TIMEOUT``
  seconds (``courtier.net.pool``).
- Redirects are not followed here: the crawler turns a ``Location`` into new work that goes
  through scope, politeness and the guard again.
- ``Accept-Encoding`` names the codings ``courtier.net.decoding`` decodes (zstd included).
- Limits: connect (TCP and TLS), read (silence) and total timeouts, header field size and
  count, and a body limit counted after decompression, so a compression bomb stops at the
  limit. With a ``Spool``, a body past its threshold is written to a file as it arrives
  (``courtier.net.spool``).
- Every failure comes back as a ``FetchResult`` with ``error`` set, never as an exception;
  its first word names the failure's class (``ConnectTimeout``, ``ReadTimeout``,
  ``ServerDisconnected``, ``ResponseError``, ``ConnectionRefusedError``, ``ProxyRefused``,
  ...).

Why not aiohttp's client: per request it cost 125 us of CPU on loopback where a bare
protocol needs 40 (py-spy over python bench/bench_rebook.py --sites 2000 --page-bytes 6000
--duration 40), and at 2,000 sites the crawl is CPU-bound.

Latency phases (``FetchResult.phases``, seconds, ``time.perf_counter`` durations):
- ``dns``: the guard's resolution of the host for this request, measured by wrapping the
  guard's resolver in ``TimedResolver`` (the fetcher itself never resolves: it is pinned).
  None for an IP literal, or when the resolver is not wrapped.
- ``connect``: TCP connect of a new connection (Happy Eyeballs' wait for the winner and a
  proxy's tunnel included); ``tls``: its TLS handshake. Both None when a kept-alive
  connection was reused (``reused``).
- ``first_byte``: from the request going out to the response's head being read: the
  server's think time plus one round trip.
- ``total``: ``dns`` (when known) plus the fetch from its start to the last body byte.
"""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
import time
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from courtier.net.body import BodySink
from courtier.net.connect import AddressCheck, AddressRefused, Connector, ConnectTimeout
from courtier.net.decoding import ACCEPT_ENCODING
from courtier.net.http1 import Http1Connection
from courtier.net.pool import IDLE_TIMEOUT, MAX_IDLE, ConnectionPool
from courtier.net.proxy import ProxyRoutes, routes_from
from courtier.net.resolve import Resolver
from courtier.net.spool import Body, Spool, SpooledBody

if TYPE_CHECKING:
    from courtier.config import FetchSection

__all__ = [
    "AddressCheck",
    "AddressRefused",
    "ConnectTimeout",
    "FetchResult",
    "Fetcher",
    "NotPinned",
    "Phases",
    "Target",
    "TimedResolver",
    "request_target",
    "type_allowed",
]

logger = logging.getLogger("courtier.net.fetch")
DEFAULT_PORTS = {"http": 80, "https": 443}


class NotPinned(PermissionError):
    """The URL's host is not the host whose addresses the guard checked."""


_RESOLVED: ContextVar[tuple[str, float] | None] = ContextVar("courtier_resolved", default=None)
"""(host, seconds) of the last resolution ``TimedResolver`` made in this task."""


class TimedResolver:
    """A guard resolver that notes how long each resolution took, for ``Phases.dns``.

    ``Guard(policy, TimedResolver(DnsResolver(...)))``: the guard awaits the resolver in the
    task that then fetches, so the fetch finds the time of its own host's resolution."""

    def __init__(self, resolver: Resolver) -> None:
        self._resolver = resolver

    async def resolve(self, host: str) -> tuple[str, ...]:
        started = time.perf_counter()
        try:
            return await self._resolver.resolve(host)
        finally:
            _RESOLVED.set((host, time.perf_counter() - started))


@dataclass(frozen=True, slots=True)
class Phases:
    """Where one request's time went, in seconds (see the module's rules)."""

    dns: float | None = None
    connect: float | None = None
    tls: float | None = None
    first_byte: float | None = None
    total: float = 0.0
    reused: bool = False
    """A kept-alive connection carried the request (no connect, no handshake)."""


@lru_cache(maxsize=1024)
def type_allowed(content_type: str, allowed: tuple[str, ...]) -> bool:
    """Is the media type of a Content-Type header value in the allow-list?

    A missing Content-Type is allowed: servers omit it for ordinary pages. Cached: a crawl
    sees a handful of distinct values (4 us a request uncached, on the event loop).
    """
    media_type = content_type.partition(";")[0].strip().lower()
    if not media_type:
        return True
    return any(
        media_type.startswith(entry) if entry.endswith("/") else media_type == entry
        for entry in allowed
    )


@dataclass(frozen=True, slots=True)
class FetchResult:
    url: str
    status: int | None
    content_type: str = ""
    body: bytes = b""
    """The body, unless it was spooled (then empty: see ``spooled``)."""
    spooled: SpooledBody | None = None
    """The body's file when it grew past the spool threshold (``courtier.net.spool``)."""
    location: str | None = None
    retry_after: str | None = None
    started_at: float = 0.0
    sent_at: float | None = None
    """Wall-clock time when the request headers went out: the start a server sees (the crawl
    engine's clock, which limiters and stores share)."""
    latency: float | None = None
    """Seconds from the request's headers going out to the response's headers arriving."""
    elapsed: float = 0.0
    truncated: bool = False
    error: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    """Response headers as received (bounded by ``max_headers``): cache status, evidence."""
    peercert: dict[str, Any] | None = None
    """An https server's certificate as ``ssl`` decodes it (verified), for origin evidence."""
    peercert_der: bytes | None = None
    address: str | None = None
    """The address the request went to: one the guard checked and pinned (``WARC-IP-Address``);
    None through a proxy that resolves names itself (``[fetch] proxy_resolves``)."""
    phases: Phases = Phases()
    """Where the request's time went: DNS, connect, TLS, first byte, total."""

    @property
    def content(self) -> Body:
        """The body as held: its bytes, or its spool file (``body_bytes`` reads either)."""
        return self.body if self.spooled is None else self.spooled

    @property
    def size(self) -> int:
        """The body's length in bytes, spooled or not."""
        return len(self.body) if self.spooled is None else self.spooled.size


def _tls_context(ca_file: str | None) -> ssl.SSLContext:
    """The default client context (system CA certificates), plus ``ca_file``'s if given."""
    context = ssl.create_default_context()
    if ca_file:
        context.load_verify_locations(cafile=ca_file)
    return context


def _dns_time(host: str) -> float | None:
    """The time ``TimedResolver`` took for ``host`` in this task (taken once: a later fetch
    of an IP literal, which the guard does not resolve, must not reuse it)."""
    noted = _RESOLVED.get()
    if noted is None:
        return None
    _RESOLVED.set(None)
    return noted[1] if noted[0] == host else None


@dataclass(frozen=True, slots=True)
class Target:
    """Where a URL's request goes and what it asks for."""

    scheme: str
    host: str
    """As the guard names it: lower case, an IPv6 address without brackets."""
    port: int
    authority: str
    """The ``Host`` header: the URL's host and port, without credentials."""
    target: str
    """The request target: path and query, as the URL has them."""


def request_target(url: str) -> Target:
    """The ``Target`` of an http(s) URL; raises ValueError for one that has none."""
    if not (url.isascii() and url.isprintable() and " " not in url):
        from yarl import URL  # a caller's URL, not a crawl URL: quote it as browsers would

        url = str(URL(url))
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in DEFAULT_PORTS:
        raise ValueError(f"not an http or https URL: {url[:100]!r}")
    end = len(rest)
    for mark in "/?#":
        found = rest.find(mark)
        if 0 <= found < end:
            end = found
    authority, target = rest[:end], rest[end:].partition("#")[0]
    if not target.startswith("/"):
        target = "/" + target
    authority = authority.rpartition("@")[2]
    if authority.startswith("["):
        close = authority.find("]")
        host, port_text = authority[1:close], authority[close + 1 :]
        if close < 0 or (port_text and not port_text.startswith(":")):
            raise ValueError(f"a malformed IPv6 host: {authority[:100]!r}")
        port_text = port_text[1:]
    else:
        host, _, port_text = authority.partition(":")
    if not host:
        raise ValueError(f"no host in {url[:100]!r}")
    if port_text:
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise ValueError(f"a bad port: {port_text[:20]!r}")
        port = int(port_text)
    else:
        port = DEFAULT_PORTS[scheme]
    return Target(scheme, host.lower(), port, authority, target)


class Fetcher:
    """Fetches over its own HTTP/1.1 connections (see the module rules); ``fetch`` never
    raises. Use as ``async with``."""

    def __init__(
        self,
        settings: FetchSection,
        address_allowed: AddressCheck,
        spool: Spool | None = None,
        *,
        max_idle: int = MAX_IDLE,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        """``max_idle``: kept-alive connections waiting, in all (each an open file).
        ``environ``: where HTTPS_PROXY, HTTP_PROXY and NO_PROXY are read (``os.environ``);
        a proxy that cannot be used is a ValueError here."""
        self.settings = settings
        self.spool = spool
        """Where bodies past its threshold go (None: every body is held in memory)."""
        self.routes: ProxyRoutes = routes_from(
            settings.proxy,
            settings.no_proxy,
            settings.proxy_resolves,
            os.environ if environ is None else environ,
        )
        self._connector = Connector(settings, address_allowed, self.routes)
        self.pool: ConnectionPool[Http1Connection] = ConnectionPool(max_idle=max_idle)
        self._sweeper: asyncio.TimerHandle | None = None
        self._open: set[Http1Connection] = set()
        """Connections carrying a request now (closed when the fetcher closes)."""
        self._allowed = lambda content_type: type_allowed(content_type, settings.allowed_types)
        self._common = (
            f"User-Agent: {settings.user_agent}\r\nAccept: */*\r\n"
            f"Accept-Encoding: {ACCEPT_ENCODING}\r\n"
        )

    async def __aenter__(self) -> Fetcher:
        # Loading the system's CA certificates takes 100-300 ms: not on the event loop, where
        # origin inference is already asking DNS (a stall seen at 2,000 sites:
        # `python bench/bench_rebook.py --sites 2000 --page-bytes 6000 --duration 40`).
        self._connector.tls = await asyncio.to_thread(_tls_context, self.settings.ca_file)
        routes = self.routes
        for proxy in dict.fromkeys(p for p in (routes.https, routes.http) if p is not None):
            logger.info(
                "requests go through the CONNECT proxy %s (%s)%s",
                proxy.name,
                proxy.source,
                ", which resolves names" if routes.resolves else "",
            )
        self._sweep()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        self.pool.close()
        for connection in list(self._open):
            connection.close()

    def _sweep(self) -> None:
        self.pool.sweep()
        loop = asyncio.get_running_loop()
        self._sweeper = loop.call_later(IDLE_TIMEOUT / 3, self._sweep)

    def _request(self, target: Target, headers: Mapping[str, str] | None) -> bytes:
        extra = ""
        if headers:
            for name, value in headers.items():
                if (
                    not name
                    or any(c in name for c in ":\r\n\0 ")
                    or any(c in value for c in "\r\n\0")
                ):
                    raise ValueError(f"a header that cannot be sent: {name[:40]!r}")
                extra += f"{name}: {value}\r\n"
        text = (
            f"GET {target.target} HTTP/1.1\r\nHost: {target.authority}\r\n{self._common}{extra}\r\n"
        )
        return text.encode("utf-8", "surrogateescape")

    async def fetch(
        self,
        url: str,
        host: str,
        addresses: tuple[str, ...],
        *,
        clock: Callable[[], float] = time.time,
        headers: Mapping[str, str] | None = None,
        on_sent: Callable[[float], None] | None = None,
        spool: bool = False,
    ) -> FetchResult:
        """GET ``url`` from one of ``addresses`` (already approved for ``host``); ``headers``
        are sent besides the fetcher's own (a refresh's If-None-Match, If-Modified-Since).
        ``on_sent`` is called with the wall time the request went out. ``spool``: a body
        past the spool's threshold goes to a file (``FetchResult.spooled``)."""
        settings = self.settings
        dns = _dns_time(host)
        started = clock()
        started_pc = time.perf_counter()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + settings.total_timeout
        connection: Http1Connection | None = None
        sink = BodySink(settings.max_body_bytes, self.spool if spool else None)
        sent: float | None = None
        sent_pc = connect = tls = None
        try:
            target = request_target(url)
            if target.host != host:
                raise NotPinned(f"no checked address is pinned for {target.host!r}")
            request = self._request(target, headers)
            key = (target.scheme, host, target.port)
            connection = self.pool.take(key, addresses)
            if connection is None:
                connection, connect, tls = await self._connector.connect(
                    target.scheme, host, target.port, addresses, deadline
                )
            self._open.add(connection)
            waiting = connection.send(request, sink, self._allowed, deadline, settings.read_timeout)
            sent = time.time()
            sent_pc = time.perf_counter()
            if on_sent is not None:
                on_sent(sent)
            response = await waiting
            self._open.discard(connection)
            if connection.reusable:
                self.pool.give(key, connection)
            else:
                connection.close()
            error = None
            if response.allowed:
                body, spooled = sink.finish()
            else:
                body, spooled = b"", None
                error = f"content type not allowed: {response.content_type[:100]}"
            ended_pc = time.perf_counter()
            first_byte = max(0.0, response.headers_at - sent_pc)
            return FetchResult(
                url=url,
                status=response.status,
                content_type=response.content_type,
                body=body,
                spooled=spooled,
                location=response.location,
                retry_after=response.retry_after,
                started_at=started,
                sent_at=sent,
                latency=first_byte,
                elapsed=clock() - started,
                truncated=sink.truncated,
                error=error,
                headers=response.headers,
                peercert=connection.peercert,
                peercert_der=connection.peercert_der,
                address=connection.address if connection.address_known else None,
                phases=Phases(
                    dns,
                    connect,
                    tls,
                    first_byte,
                    ended_pc - started_pc + (dns or 0.0),
                    reused=connect is None,
                ),
            )
        except (OSError, ValueError, asyncio.CancelledError) as exc:
            # TimeoutError, ssl.SSLError are OSErrors; cancelled mid-request, the answer is
            # no longer wanted: either way the body so far and the connection go.
            sink.abort()
            if connection is not None:
                self._open.discard(connection)
                connection.close()
            if isinstance(exc, asyncio.CancelledError):
                raise
            return FetchResult(
                url=url,
                status=None,
                started_at=started,
                sent_at=sent,
                elapsed=clock() - started,
                error=f"{type(exc).__name__}: {exc}"[:300],
                phases=Phases(
                    dns, connect, tls, None, time.perf_counter() - started_pc + (dns or 0.0)
                ),
            )
