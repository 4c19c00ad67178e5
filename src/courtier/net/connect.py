"""A new connection for a request: to a checked address, staggered, maybe through a proxy.

Rules:
- Only addresses the guard approved for the host (given with the call) that the address
  policy still allows as the socket is made are tried; none left is ``AddressRefused``.
- A host with several addresses is connected to by Happy Eyeballs (``courtier.net.stagger``):
  families interleaved, the next attempt ``[fetch] happy_eyeballs_delay`` after the last
  unless it connected or failed first; the first to connect wins, the others are cancelled.
  Each attempt has ``connect_timeout`` seconds (within the fetch's total timeout).
- Through a proxy (``courtier.net.proxy``) an attempt is a connection to the proxy and a
  ``CONNECT`` to the pinned address, so the race is the same over the proxy's tunnels; with
  ``proxy_resolves`` there is one attempt, ``CONNECT host:port``, and the address the proxy
  chose is not known (``Http1Connection.address_known`` is False). The proxy's own addresses
  come from the system's resolver (``getaddrinfo``, kept a minute) and are not judged.
- TLS (https) runs over the winning socket, end to end with the target: SNI and the
  certificate check on the host name, whatever address or proxy carried it.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from courtier.net.http1 import Http1Connection
from courtier.net.proxy import (
    Proxy,
    ProxyError,
    ProxyRoutes,
    ProxyUnreachable,
    authority,
    tunnel,
)
from courtier.net.stagger import first_to_connect, interleave

if TYPE_CHECKING:
    from courtier.config import FetchSection

AddressCheck = Callable[[str], bool]
PROXY_ADDRESSES_TTL = 60.0
"""Seconds the proxy's own addresses (the system resolver's answer) are kept."""


class AddressRefused(PermissionError):
    """The address policy refuses every address the request could go to."""


class ConnectTimeout(TimeoutError):
    """No connection (TCP and TLS) within the connect timeout."""


SockAddr = tuple[int, tuple[str, int]]
"""(address family, (address, port)) of one of the proxy's addresses."""


async def _tcp(family: int, address: str, port: int) -> socket.socket:
    loop = asyncio.get_running_loop()
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        await loop.sock_connect(sock, (address, port))
    except BaseException:
        sock.close()
        raise
    return sock


def _family(address: str) -> int:
    return socket.AF_INET6 if ":" in address else socket.AF_INET


def _stops(failure: BaseException) -> bool:
    return isinstance(failure, ProxyError) and failure.for_every_address


class Connector:
    """Opens the fetcher's new connections (see the module rules)."""

    def __init__(
        self, settings: FetchSection, address_allowed: AddressCheck, routes: ProxyRoutes
    ) -> None:
        self.settings = settings
        self.routes = routes
        self.tls: ssl.SSLContext | None = None
        """The fetcher's TLS context, set when it starts (loading it takes a while)."""
        self._address_allowed = address_allowed
        self._proxy_addresses: dict[Proxy, tuple[float, list[SockAddr]]] = {}

    async def connect(
        self, scheme: str, host: str, port: int, addresses: tuple[str, ...], deadline: float
    ) -> tuple[Http1Connection, float, float | None]:
        """A new connection to ``host:port`` at one of ``addresses``: (it, the seconds its
        connection (TCP, and the proxy's tunnel) took, the TLS handshake's or None)."""
        allowed = [address for address in addresses if self._address_allowed(address)]
        if not allowed:
            refused = ", ".join(addresses[:4]) or "no address"
            raise AddressRefused(f"connection to {refused} refused by the address policy")
        proxy = self.routes.choose(scheme, host, port, allowed)
        began = time.perf_counter()
        if proxy is not None and self.routes.resolves:
            sock, address = await self._attempt(proxy, host, port, deadline)
            address, known = allowed[0], False  # the pool's key; the proxy chose the address
        else:
            starts = [partial(self._attempt, proxy, a, port, deadline) for a in interleave(allowed)]
            sock, address = await first_to_connect(
                starts, self.settings.happy_eyeballs_delay, lambda won: won[0].close(), _stops
            )
            known = True
        connected = time.perf_counter()
        settings = self.settings
        connection = Http1Connection(address, settings.max_header_bytes, settings.max_headers)
        connection.address_known = known
        connection.proxy = None if proxy is None else proxy.name
        loop = asyncio.get_running_loop()
        secure = scheme == "https"
        try:
            if secure:
                transport, _ = await loop.create_connection(
                    lambda: connection,
                    sock=sock,
                    ssl=self.tls,
                    server_hostname=host,
                    ssl_handshake_timeout=settings.connect_timeout,
                )
            else:
                transport, _ = await loop.create_connection(lambda: connection, sock=sock)
        except BaseException:
            sock.close()
            raise
        if not secure:
            return connection, connected - began, None
        ssl_object = transport.get_extra_info("ssl_object")
        if ssl_object is not None:
            connection.peercert = ssl_object.getpeercert() or None
            connection.peercert_der = ssl_object.getpeercert(True)
        return connection, connected - began, time.perf_counter() - connected

    async def _attempt(
        self, proxy: Proxy | None, address: str, port: int, deadline: float
    ) -> tuple[socket.socket, str]:
        """A socket carrying bytes to ``address:port`` (a host name only through a proxy
        that resolves), directly or through ``proxy``'s tunnel, within the connect timeout."""
        loop = asyncio.get_running_loop()
        budget = min(self.settings.connect_timeout, deadline - loop.time())
        if budget <= 0:
            raise ConnectTimeout("no time left to connect")
        via = "" if proxy is None else f" through the proxy {proxy.name}"
        try:
            async with asyncio.timeout(budget):
                if proxy is None:
                    return await _tcp(_family(address), address, port), address
                sock = await self._to_proxy(proxy)
                try:
                    await tunnel(sock, proxy, authority(address, port), self.settings.user_agent)
                except BaseException:
                    sock.close()
                    raise
                return sock, address
        except TimeoutError:
            raise ConnectTimeout(
                f"no connection to {address} port {port}{via} within {budget:g} s"
            ) from None

    async def _to_proxy(self, proxy: Proxy) -> socket.socket:
        """A TCP connection to the proxy (its addresses in the resolver's order)."""
        failure: OSError | None = None
        for family, (address, port) in await self._addresses_of(proxy):
            try:
                return await _tcp(family, address, port)
            except OSError as exc:
                failure = exc
        raise ProxyUnreachable(f"cannot reach the proxy {proxy.name}: {failure or 'no address'}")

    async def _addresses_of(self, proxy: Proxy) -> list[SockAddr]:
        if ":" in proxy.host or proxy.host.replace(".", "").isdigit():
            return [(_family(proxy.host), (proxy.host, proxy.port))]
        loop = asyncio.get_running_loop()
        kept = self._proxy_addresses.get(proxy)
        if kept is not None and kept[0] > loop.time():
            return kept[1]
        try:
            answers = await loop.getaddrinfo(proxy.host, proxy.port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise ProxyUnreachable(f"cannot resolve the proxy {proxy.name}: {exc}") from None
        found: list[SockAddr] = [
            (family, (str(sockaddr[0]), proxy.port))
            for family, _type, _proto, _name, sockaddr in answers
            if family in (socket.AF_INET, socket.AF_INET6)
        ]
        self._proxy_addresses[proxy] = (loop.time() + PROXY_ADDRESSES_TTL, found)
        return found
