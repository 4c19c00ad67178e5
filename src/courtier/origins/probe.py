"""Header probes: two ordinary GET requests per site, ``/`` and a path that does not exist.

Rules:
- A probe connects only to the addresses the caller checked (pinning through
  ``PinnedResolver``), and every socket is checked again against the address
  policy when it is created: a refused address is never connected to.
- Politeness applies: probes are ordinary booked requests when a ``book`` function is given
  (the command line books each on the site's and the shared address set's keys, like the
  crawl); without one, the two requests to one site start at least ``spacing`` seconds apart.
  Either way at most ``per_address`` probes are in flight to any one server address, so
  probing the hundred tenants of one platform does not hammer its one server.
- Bodies are read up to ``max_body_bytes`` (enough to hash a not-found page). A failed request
  is an absent response; a probe with no response at all returns None. Nothing raises.
- Redirects are not followed: a probe looks at what the site's own server answers.
- ``may_fetch(host, path)``, when given, is asked before each request (robots.txt rules): a
  path it refuses is not requested, and the fingerprint is made from what remains.
"""

from __future__ import annotations

import asyncio
import errno
import secrets
import socket
from collections.abc import Awaitable, Callable
from types import TracebackType

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

from courtier.origins.header_evidence import (
    HeaderFingerprint,
    ProbeResponse,
    header_fingerprint,
    probe_response,
)

Probe = Callable[[str, tuple[str, ...]], Awaitable[HeaderFingerprint | None]]
"""A header probe: (host, its checked addresses) -> fingerprint, or None when nothing answered."""

AddressCheck = Callable[[str], bool]
Sleep = Callable[[float], Awaitable[None]]
MayFetch = Callable[[str, str], Awaitable[bool]]
"""(host, path) -> may this path be fetched? The crawl passes its robots.txt rules here."""
BookRequest = Callable[[str, tuple[str, ...], str], Awaitable[None]]
"""(host, its addresses, path) -> returns when the request may start (a booked slot)."""


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


def random_missing_path() -> str:
    return f"/courtier-origin-probe-{secrets.token_hex(8)}"


class HttpHeaderProbe:
    """The aiohttp implementation of ``Probe`` (see the module rules). Use as ``async with``."""

    def __init__(
        self,
        address_allowed: AddressCheck,
        *,
        port: int = 80,
        user_agent: str = "courtier-origin-probe",
        spacing: float = 1.0,
        per_address: int = 4,
        timeout: float = 10.0,
        max_body_bytes: int = 256 * 1024,
        missing_path: Callable[[], str] = random_missing_path,
        sleep: Sleep = asyncio.sleep,
        may_fetch: MayFetch | None = None,
        book: BookRequest | None = None,
    ) -> None:
        if not 0 < port < 65536 or per_address < 1 or spacing < 0:
            raise ValueError("need a port in 1..65535, per_address >= 1 and spacing >= 0")
        self._allowed = address_allowed
        self._port = port
        self._user_agent = user_agent
        self._spacing = spacing
        self._per_address = per_address
        self._timeout = timeout
        self._max_body = max_body_bytes
        self._missing_path = missing_path
        self._sleep = sleep
        self._may_fetch = may_fetch
        self._book = book
        self._resolver = PinnedResolver()
        self._gates: dict[str, asyncio.Semaphore] = {}
        self._session: aiohttp.ClientSession | None = None
        self.requests_sent = 0

    async def __aenter__(self) -> HttpHeaderProbe:
        connector = aiohttp.TCPConnector(
            resolver=self._resolver,
            use_dns_cache=False,
            limit=0,
            socket_factory=self._socket,
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            headers={"User-Agent": self._user_agent},
            timeout=aiohttp.ClientTimeout(total=self._timeout),
            cookie_jar=aiohttp.DummyCookieJar(),
            trust_env=False,
        )
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _socket(self, addr_info: tuple[int, int, int, str, tuple[object, ...]]) -> socket.socket:
        family, kind, proto, _canon, sockaddr = addr_info
        address = str(sockaddr[0])
        if not self._allowed(address):
            raise OSError(errno.EACCES, f"connection to {address} refused by the address policy")
        sock = socket.socket(family, kind, proto)
        sock.setblocking(False)
        return sock

    async def __call__(self, host: str, addresses: tuple[str, ...]) -> HeaderFingerprint | None:
        if not addresses or not all(self._allowed(a) for a in addresses):
            return None
        self._resolver.pin(host, addresses)
        gate = self._gates.setdefault(addresses[0], asyncio.Semaphore(self._per_address))
        async with gate:
            home = await self._get(host, addresses, "/")
            if self._book is None:
                await self._sleep(self._spacing)
            missing = await self._get(host, addresses, self._missing_path())
        return header_fingerprint(home, missing)

    async def _get(self, host: str, addresses: tuple[str, ...], path: str) -> ProbeResponse | None:
        if self._session is None:
            raise RuntimeError("HttpHeaderProbe used outside 'async with'")
        if self._may_fetch is not None and not await self._may_fetch(host, path):
            return None
        if self._book is not None:
            await self._book(host, addresses, path)
        suffix = "" if self._port == 80 else f":{self._port}"
        self.requests_sent += 1
        try:
            async with self._session.get(
                f"http://{host}{suffix}{path}", allow_redirects=False
            ) as response:
                body = await response.content.read(self._max_body)
                headers = [
                    (name.decode("latin-1"), value.decode("latin-1"))
                    for name, value in response.raw_headers
                ]
                return probe_response(response.status, headers, body, host)
        except (TimeoutError, aiohttp.ClientError, OSError, ValueError):
            return None
