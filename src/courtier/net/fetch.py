"""The HTTP fetcher: connect to exactly the address the guard checked, read within limits.

Rules:
- Pinning: aiohttp resolves names only through ``PinnedResolver``, which answers from the
  addresses the guard approved for this host and refuses any host it was not told about.
  aiohttp's own DNS cache is off. IP-literal hosts skip resolvers in aiohttp, so every socket
  is also checked at creation (``socket_factory``) against the address policy: nothing
  connects to an address the policy refuses, whatever path led there.
- ``Host``, TLS SNI and certificate checks stay on the hostname (the URL keeps the name).
  Certificates are always verified (system CAs, plus ``fetch.ca_file``); the one an https
  server presented comes back with the result, as evidence for origin inference.
- The request goes out for exactly the URL given: a crawl URL is already serialised by the
  WHATWG rules (ASCII, percent-encoded), and it is what scope, robots.txt, the trap patterns
  and the dedup judged, so aiohttp's URL library must not quote it again (it decoded
  ``%41`` to ``A`` and ``%2e.`` to ``..``, and made ``%`` ``%25``: another URL on the wire).
  A URL that is not printable ASCII (a caller's, not a crawl URL) is still quoted by yarl;
  an empty query (a bare ``?``) is dropped, as yarl cannot hold one.
- Redirects are not followed here: the crawler turns a ``Location`` into new work that goes
  through scope, politeness and the guard again.
- Limits: connect/read/total timeouts, header line size and count, and a body limit counted
  after decompression, so a compression bomb stops at the limit. With a ``Spool``, a body
  past its threshold is written to a file as it arrives (``courtier.net.spool``).
- Every failure comes back as a ``FetchResult`` with ``error`` set, never as an exception.

Latency phases (``FetchResult.phases``, seconds, ``time.perf_counter`` durations):
- ``dns``: the guard's resolution of the host for this request, measured by wrapping the
  guard's resolver in ``TimedResolver`` (the fetcher itself never resolves: it is pinned).
  None for an IP literal, or when the resolver is not wrapped.
- ``connect``: TCP connect of a new connection (timed around the connector's connect), TLS
  excluded; ``tls``: the TLS handshake, timed from the handshake's first step to its end by
  the SSL object (aiohttp has no TLS hook). Both None when a kept-alive connection was
  reused (``reused``). Should the handshake not be seen, ``tls`` is None and ``connect``
  holds TCP and TLS together.
- ``first_byte``: from the request's headers going out to the response's headers being
  read: the server's think time plus one round trip.
- ``total``: ``dns`` (when known) plus the fetch from its start to the last body byte.
"""

from __future__ import annotations

import asyncio
import errno
import socket
import ssl
import time
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from yarl import URL

from courtier.config import FetchSection
from courtier.fast_init import fast_init
from courtier.net.resolve import Resolver
from courtier.net.spool import Body, Spool, SpooledBody, SpoolWriter

AddressCheck = Callable[[str], bool]


class PinnedResolver(AbstractResolver):
    """Answers only with addresses pinned for a host by the guard."""

    def __init__(self) -> None:
        self._pins: dict[str, tuple[str, ...]] = {}

    def pin(self, host: str, addresses: tuple[str, ...]) -> None:
        self._pins[host] = addresses

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_UNSPEC
    ) -> list[ResolveResult]:
        addresses = self._pins.get(host)
        if not addresses:
            raise OSError(f"no checked address is pinned for {host!r}")
        results: list[ResolveResult] = []
        for address in addresses:
            af = socket.AF_INET6 if ":" in address else socket.AF_INET
            if family not in (socket.AF_UNSPEC, af):
                continue
            results.append(
                ResolveResult(
                    hostname=host,
                    host=address,
                    port=port,
                    family=af,
                    proto=0,
                    flags=socket.AI_NUMERICHOST,
                )
            )
        if not results:
            raise OSError(f"no pinned address of the requested family for {host!r}")
        return results

    async def close(self) -> None:
        self._pins.clear()


def _guarded_socket_factory(allowed: AddressCheck) -> Callable[..., socket.socket]:
    def factory(addr_info: tuple[int, int, int, str, tuple[object, ...]]) -> socket.socket:
        family, kind, proto, _canon, sockaddr = addr_info
        address = str(sockaddr[0])
        if not allowed(address):
            raise OSError(errno.EACCES, f"connection to {address} refused by the address policy")
        sock = socket.socket(family, kind, proto)
        sock.setblocking(False)
        return sock

    return factory


_TIMING: ContextVar[dict[str, float] | None] = ContextVar("courtier_fetch_timing", default=None)
"""The timing record of the request this task is fetching: the SSL object writes the
handshake's times into it (protocol callbacks run in copies of the task's context, which
hold the same dict)."""
_ON_SENT: ContextVar[Callable[[float], None] | None] = ContextVar(
    "courtier_fetch_on_sent", default=None
)
"""Told the wall time the request's headers went out (the caller spaces shared keys by it)."""
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


class _TimedRequest(aiohttp.ClientRequest):
    """Notes when the request's headers went out, and whether a kept-alive connection
    carried it. (aiohttp's trace signals would do it too, but with any trace config
    aiohttp builds a parameter object and awaits a signal at a dozen points of every
    request: 3-5% of a loopback fetch's CPU, docs/benchmarks.md, session 7.)"""

    async def send(self, conn: Any) -> aiohttp.ClientResponse:
        response = await super().send(conn)
        # A GET has no body: ``send`` has written the headers to the transport by now.
        timing = _TIMING.get()
        if timing is not None:
            timing["sent"] = time.time()
            timing["sent_pc"] = time.perf_counter()
            if "connect_start" not in timing:
                timing["reused"] = 1.0
            on_sent = _ON_SENT.get()
            if on_sent is not None:
                on_sent(timing["sent"])
        return response


class _TimedConnector(aiohttp.TCPConnector):
    """Times the TCP (and TLS) connect of each new connection into the fetch's record."""

    async def _create_connection(self, *args: Any, **kwargs: Any) -> Any:
        timing = _TIMING.get()
        if timing is not None:
            timing["connect_start"] = time.perf_counter()
        try:
            return await super()._create_connection(*args, **kwargs)
        finally:
            if timing is not None:
                timing["connect_end"] = time.perf_counter()


@fast_init
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


def phases_of(timing: dict[str, float], started: float, ended: float, dns: float | None) -> Phases:
    """``Phases`` from the perf_counter marks one fetch collected."""
    connect = tls = None
    connect_start, connect_end = timing.get("connect_start"), timing.get("connect_end")
    if connect_start is not None and connect_end is not None:
        connect = max(0.0, connect_end - connect_start)
        tls_start, tls_end = timing.get("tls_start"), timing.get("tls_end")
        if tls_start is not None and tls_end is not None and tls_start >= connect_start:
            tls = max(0.0, tls_end - tls_start)
            connect = max(0.0, connect - tls)
    sent, headers = timing.get("sent_pc"), timing.get("headers")
    first_byte = max(0.0, headers - sent) if sent is not None and headers is not None else None
    total = max(0.0, ended - started) + (dns or 0.0)
    return Phases(dns, connect, tls, first_byte, total, reused="reused" in timing)


def as_sent(url: str) -> URL | str:
    """``url`` for aiohttp: as it is, unquoted again, when it is printable ASCII without
    spaces (see the module rules); otherwise for yarl to quote."""
    if url.isascii() and url.isprintable() and " " not in url:
        return URL(url, encoded=True)
    return url


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


@fast_init
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


PeerCertificate = tuple[dict[str, Any], bytes | None]
CERTIFICATES_KEPT = 4096
"""Server names whose last certificate is kept: far more than the connections open at once
(``crawl.max_in_flight``), so every live connection's certificate is there, while a long
crawl over millions of hosts does not keep them all."""


def _tls_context(ca_file: str | None) -> ssl.SSLContext:
    """The default client context (system CA certificates), plus ``ca_file``'s if given."""
    context = ssl.create_default_context()
    if ca_file:
        context.load_verify_locations(cafile=ca_file)
    return context


def _recording_context(
    context: ssl.SSLContext, certificates: dict[str, PeerCertificate]
) -> ssl.SSLContext:
    """``context``, made to note each verified handshake's certificate by server name.

    A small response is read and its connection released before the caller sees it, so the
    certificate is taken where it is sure to exist: when the handshake completes."""

    class RecordingSSLObject(ssl.SSLObject):
        def do_handshake(self) -> None:
            timing = _TIMING.get()
            if timing is not None and "tls_start" not in timing:
                timing["tls_start"] = time.perf_counter()
            super().do_handshake()  # raises until the handshake is done
            if timing is not None:
                timing["tls_end"] = time.perf_counter()
            if self.server_hostname:
                peercert = self.getpeercert() or {}
                certificates.pop(self.server_hostname, None)  # newest last
                certificates[self.server_hostname] = (peercert, self.getpeercert(True))
                while len(certificates) > CERTIFICATES_KEPT:
                    del certificates[next(iter(certificates))]

    context.sslobject_class = RecordingSSLObject
    return context


def _dns_time(host: str) -> float | None:
    """The time ``TimedResolver`` took for ``host`` in this task (taken once: a later fetch
    of an IP literal, which the guard does not resolve, must not reuse it)."""
    noted = _RESOLVED.get()
    if noted is None:
        return None
    _RESOLVED.set(None)
    return noted[1] if noted[0] == host else None


class Fetcher:
    """One aiohttp session for the whole crawl; ``fetch`` never raises."""

    def __init__(
        self, settings: FetchSection, address_allowed: AddressCheck, spool: Spool | None = None
    ) -> None:
        self.settings = settings
        self.spool = spool
        """Where bodies past its threshold go (None: every body is held in memory)."""
        self.resolver = PinnedResolver()
        self._address_allowed = address_allowed
        self._session: aiohttp.ClientSession | None = None
        self._certificates: dict[str, PeerCertificate] = {}
        """Server name -> the certificate its last TLS handshake presented (verified)."""

    async def __aenter__(self) -> Fetcher:
        s = self.settings
        # Loading the system's CA certificates takes 100-300 ms: not on the event loop, where
        # origin inference is already asking DNS (a stall seen at 2,000 sites, session 12).
        tls = _recording_context(
            await asyncio.to_thread(_tls_context, s.ca_file), self._certificates
        )
        connector = _TimedConnector(
            resolver=self.resolver,
            use_dns_cache=False,
            limit=0,
            limit_per_host=0,
            socket_factory=_guarded_socket_factory(self._address_allowed),
            ssl=tls,
        )
        self._session = aiohttp.ClientSession(
            request_class=_TimedRequest,
            connector=connector,
            headers={"User-Agent": s.user_agent, "Accept-Encoding": "gzip, deflate, br"},
            timeout=aiohttp.ClientTimeout(
                total=s.total_timeout, sock_connect=s.connect_timeout, sock_read=s.read_timeout
            ),
            cookie_jar=aiohttp.DummyCookieJar(),
            max_line_size=s.max_header_bytes,
            max_field_size=s.max_header_bytes,
            max_headers=s.max_headers,
            trust_env=False,
        )
        # aiohttp sends an idempotent request again, at once, when the server drops the
        # connection: a second request the scheduler never booked. Off: one per slot.
        self._session._retry_connection = False
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()

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
        are sent besides the session's (a refresh's If-None-Match, If-Modified-Since).
        ``on_sent`` is called with the wall time the request's headers went out. ``spool``:
        a body past the spool's threshold goes to a file (``FetchResult.spooled``)."""
        assert self._session is not None, "Fetcher used outside 'async with'"
        self.resolver.pin(host, addresses)
        dns = _dns_time(host)
        started = clock()
        started_pc = time.perf_counter()
        timing: dict[str, float] = {}
        token = _TIMING.set(timing)
        sent_token = _ON_SENT.set(on_sent)
        try:
            async with self._session.get(
                as_sent(url), allow_redirects=False, headers=headers
            ) as response:
                timing["headers"] = time.perf_counter()
                sent = timing.get("sent")
                latency = time.time() - sent if sent is not None else None
                peercert, der = self._certificate_of(url, host)
                content_type = response.headers.get("Content-Type", "")
                error = None
                spooled = None
                if type_allowed(content_type, self.settings.allowed_types):
                    body, spooled, truncated = await self._read_body(
                        response, self.spool if spool else None
                    )
                else:
                    response.close()  # not a type we keep: do not download it
                    body, truncated = b"", False
                    error = f"content type not allowed: {content_type[:100]}"
                return FetchResult(
                    url=url,
                    status=response.status,
                    content_type=content_type,
                    body=body,
                    spooled=spooled,
                    location=response.headers.get("Location"),
                    retry_after=response.headers.get("Retry-After"),
                    started_at=started,
                    sent_at=sent,
                    latency=latency,
                    elapsed=clock() - started,
                    truncated=truncated,
                    error=error,
                    headers=tuple(response.headers.items()),
                    peercert=peercert,
                    peercert_der=der,
                    phases=phases_of(timing, started_pc, time.perf_counter(), dns),
                )
        except (TimeoutError, aiohttp.ClientError, OSError, ValueError) as exc:
            return FetchResult(
                url=url,
                status=None,
                started_at=started,
                sent_at=timing.get("sent"),
                elapsed=clock() - started,
                error=f"{type(exc).__name__}: {exc}"[:300],
                phases=phases_of(timing, started_pc, time.perf_counter(), dns),
            )
        finally:
            _TIMING.reset(token)
            _ON_SENT.reset(sent_token)

    def _certificate_of(self, url: str, host: str) -> tuple[dict[str, Any] | None, bytes | None]:
        if not url.startswith("https:"):
            return None, None
        found = self._certificates.get(host)
        return (found[0] or None, found[1]) if found is not None else (None, None)

    async def _read_body(
        self, response: aiohttp.ClientResponse, spool: Spool | None
    ) -> tuple[bytes, SpooledBody | None, bool]:
        """(the body, its spool file if it grew past the spool's threshold, truncated)."""
        limit = self.settings.max_body_bytes
        if spool is not None and spool.threshold <= 0:
            spool = None  # 0: never spool
        chunks: list[bytes] = []
        writer: SpoolWriter | None = None
        size = 0
        truncated = False
        try:
            async for chunk in response.content.iter_chunked(64 * 1024):
                size += len(chunk)
                if size > limit:
                    chunk = chunk[: limit - (size - len(chunk))]
                    truncated = True
                if writer is None and spool is not None and size > spool.threshold:
                    writer = spool.start(chunks)
                    spool = None if writer is None else spool  # it failed: keep in memory
                if writer is not None and not writer.write(chunk):
                    assert spool is not None
                    spool.failures += 1  # the disk failed us, not the server: go on in memory
                    chunks, writer, spool = writer.take_back(), None, None
                if writer is None:
                    chunks.append(chunk)
                if truncated:
                    response.close()  # stop reading: the rest is never decompressed
                    break
        except BaseException:
            if writer is not None:
                writer.abort()
            raise
        if writer is not None:
            return b"", writer.close(), truncated
        return b"".join(chunks), None, truncated
