"""Egress through an HTTP CONNECT proxy, the target still judged and pinned by the guard.

Rules:
- Which proxy: ``[fetch] proxy`` when set ("none": never one; an ``http://`` URL: that proxy
  for every target), else the environment's, as curl reads it: ``https_proxy`` or
  ``HTTPS_PROXY`` for https targets, ``http_proxy`` or ``HTTP_PROXY`` for http ones (the lower
  case name first). A proxy URL is ``http://[user:password@]host[:port]`` (port 80 by
  default, the scheme may be left out); any other scheme (``https://``, ``socks5://``) is an
  error when the fetcher starts, never a silent direct connection.
- Who goes direct: ``no_proxy`` / ``NO_PROXY`` and ``[fetch] no_proxy`` together; an entry is
  ``*`` (everything), a host name matching itself and its subdomains (a leading ``.`` or
  ``*.`` is dropped), optionally with ``:port``, or an address or CIDR block matching a
  target any of whose checked addresses lies in it. A proxy taken from the environment is
  never used for a loopback target (as Go's ``ProxyFromEnvironment``): a proxy elsewhere would
  reach its own loopback, not ours.
- Every target, http or https, is tunnelled with ``CONNECT``: the proxy never reads the
  request, and an absolute-form ``GET`` to a pinned address would make the proxy send the
  address as the ``Host``. The tunnel names the pinned address the guard checked
  (``CONNECT 93.184.216.34:443``); ``Host`` and TLS SNI inside it keep the name. With
  ``[fetch] proxy_resolves`` the tunnel names the host (``CONNECT example.org:443``) and
  pinning becomes the proxy's job (docs/ssrf.md).
- The proxy's own address is the operator's and is not judged by the address policy: only
  the socket the connector opens to it skips the check. A target URL naming the proxy's
  host and port is judged like any other.
- Credentials: the URL's user and password become a Basic ``Proxy-Authorization`` sent in
  the ``CONNECT`` only (never inside the tunnel, so never in a WARC record). The proxy is
  named by ``host:port`` in every message; its ``repr`` hides the header.
- An answer other than 2xx to ``CONNECT`` is a ``ProxyRefused`` (an ``OSError``: the fetch's
  error, never a crash) naming the status; a malformed or oversized answer a ``ProxyError``.
"""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import re
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

__all__ = [
    "NoProxy",
    "Proxy",
    "ProxyError",
    "ProxyRefused",
    "ProxyRoutes",
    "ProxyUnreachable",
    "authority",
    "connect_request",
    "no_proxy_problem",
    "parse_proxy",
    "proxy_problem",
    "read_answer",
    "redact",
    "routes_from",
    "tunnel",
]

MAX_ANSWER_BYTES = 16 * 1024
"""A proxy's answer to CONNECT, head and all, is at most this long."""
_STATUS_LINE = re.compile(rb"HTTP/1\.[01] ([1-5][0-9][0-9])(?:[ \t]([^\r\n]*))?\r?\n")


class ProxyError(OSError):
    """No tunnel from the proxy: its answer to CONNECT is not HTTP, too long, or followed by
    bytes nobody asked for (and the base of the other proxy failures)."""

    for_every_address = False
    """Would asking the proxy for another of the target's addresses fail the same way?"""


class ProxyUnreachable(ProxyError):
    """No connection to the proxy itself."""

    for_every_address = True


class ProxyRefused(ProxyError):
    """The proxy answered CONNECT with a status other than 2xx."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status

        self.for_every_address = status == 407  # the credentials, not the address


@dataclass(frozen=True, slots=True)
class Proxy:
    host: str
    """Lower case; an IPv6 address without brackets."""
    port: int
    authorization: str | None = field(default=None, repr=False)
    """The ``Proxy-Authorization`` value (Basic), when the URL had a user."""
    source: str = "[fetch] proxy"
    """Where it was configured: ``[fetch] proxy`` or the environment variable's name."""

    @property
    def name(self) -> str:
        """``host:port``: how every message names the proxy (no credentials)."""
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    @property
    def from_environment(self) -> bool:
        return not self.source.startswith("[")


def redact(url: str) -> str:
    """``url`` with its password (if any) as ``***``: for messages and ``config show``."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    authority_end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority = rest[:authority_end]
    userinfo, at, hostport = authority.rpartition("@")
    if not at:
        return url
    user = userinfo.partition(":")[0]
    shown = f"{user}:***@{hostport}" if ":" in userinfo else f"{user}@{hostport}"
    return f"{scheme}{sep}{shown}{rest[authority_end:]}"


def _parse(url: str, source: str) -> Proxy | str:
    """The ``Proxy`` of ``url``, or why it is none (without the URL)."""
    text = url.strip()
    if "://" not in text:
        text = "http://" + text
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        return f"not a proxy URL ({exc})"
    if parts.scheme.lower() != "http":
        return f"only http:// CONNECT proxies are supported, not {parts.scheme}://"
    host = (parts.hostname or "").lower()
    if not host or parts.path not in ("", "/") or parts.query or parts.fragment:
        return "not http://[user:password@]host[:port]"
    authorization = None
    if parts.username is not None:
        credentials = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        token = base64.b64encode(credentials.encode("utf-8")).decode("ascii")
        authorization = f"Basic {token}"
    return Proxy(host, port or 80, authorization, source)


def proxy_problem(url: str) -> str | None:
    """Why ``url`` cannot be a proxy URL (never quoting it), or None."""
    parsed = _parse(url, "")
    return parsed if isinstance(parsed, str) else None


def parse_proxy(url: str, source: str = "[fetch] proxy") -> Proxy:
    """The ``Proxy`` of ``http://[user:password@]host[:port]``; ValueError (naming ``source``
    and the URL without its password) for anything else."""
    parsed = _parse(url, source)
    if isinstance(parsed, str):
        raise ValueError(f"{source}: {parsed}: {redact(url)!r}")
    return parsed


_NAME = re.compile(r"(?:\*\.|\.)?[a-z0-9_-]+(?:\.[a-z0-9_-]+)*\.?(?::[0-9]{1,5})?")


def no_proxy_problem(entry: str) -> str | None:
    """Why ``entry`` cannot be a ``no_proxy`` entry, or None."""
    entry = entry.strip().lower()
    if entry == "*" or _network(entry) is not None or _NAME.fullmatch(entry):
        return None
    return "not a host name, address, CIDR block or *"


def _network(entry: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        return ipaddress.ip_network(entry.strip("[]"), strict=False)
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class NoProxy:
    """Targets that go direct (see the module rules)."""

    everything: bool = False
    names: tuple[tuple[str, int | None], ...] = ()
    networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = ()

    @classmethod
    def of(cls, entries: Iterable[str]) -> NoProxy:
        everything = False
        names: list[tuple[str, int | None]] = []
        networks = []
        for raw in entries:
            entry = raw.strip().lower()
            if not entry:
                continue
            if entry == "*":
                everything = True
                continue
            network = _network(entry)
            if network is not None:
                networks.append(network)
                continue
            name, colon, port = entry.rpartition(":")
            if not (colon and port.isdigit()):
                name, port = entry, ""
            name = name.removeprefix("*").lstrip(".").rstrip(".")
            if name:
                names.append((name, int(port) if port else None))
        return cls(everything, tuple(names), tuple(networks))

    def matches(self, host: str, port: int, addresses: Iterable[str]) -> bool:
        if self.everything:
            return True
        for name, only_port in self.names:
            if (host == name or host.endswith("." + name)) and only_port in (None, port):
                return True
        if self.networks:
            for address in addresses:
                ip = ipaddress.ip_address(address)
                if any(ip in network for network in self.networks):
                    return True
        return False


def _loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


@dataclass(frozen=True, slots=True)
class ProxyRoutes:
    """The proxy (or none) for each target."""

    https: Proxy | None = None
    http: Proxy | None = None
    bypass: NoProxy = NoProxy()
    resolves: bool = False
    """CONNECT names the host, not the pinned address (``[fetch] proxy_resolves``)."""

    def choose(self, scheme: str, host: str, port: int, addresses: Iterable[str]) -> Proxy | None:
        """The proxy for a request to ``host:port`` (checked ``addresses``), or None."""
        proxy = self.https if scheme == "https" else self.http
        if proxy is None:
            return None
        addresses = tuple(addresses)
        if self.bypass.matches(host, port, addresses):
            return None
        if proxy.from_environment and (host == "localhost" or any(map(_loopback, addresses))):
            return None
        return proxy


def _environment(environ: Mapping[str, str], name: str) -> tuple[str, str] | None:
    for key in (name.lower(), name.upper()):
        value = environ.get(key, "").strip()
        if value:
            return key, value
    return None


def routes_from(
    proxy: str, no_proxy: Iterable[str], resolves: bool, environ: Mapping[str, str]
) -> ProxyRoutes:
    """The routes of ``[fetch] proxy``, ``no_proxy`` and ``proxy_resolves`` and the
    environment (see the module rules); ValueError for a proxy URL that cannot be used."""
    setting = proxy.strip()
    bypass_entries = list(no_proxy)
    found = _environment(environ, "no_proxy")
    if found is not None:
        bypass_entries += found[1].split(",")
    bypass = NoProxy.of(bypass_entries)
    if setting.lower() == "none":
        return ProxyRoutes(bypass=bypass, resolves=resolves)
    if setting:
        both = parse_proxy(setting)
        return ProxyRoutes(both, both, bypass, resolves)
    chosen: dict[str, Proxy | None] = {}
    for scheme in ("https", "http"):
        found = _environment(environ, f"{scheme}_proxy")
        chosen[scheme] = None if found is None else parse_proxy(found[1], found[0])
    return ProxyRoutes(chosen["https"], chosen["http"], bypass, resolves)


def authority(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def connect_request(proxy: Proxy, target: str, user_agent: str) -> bytes:
    """The CONNECT request for ``target`` (``host:port``) through ``proxy``."""
    lines = [f"CONNECT {target} HTTP/1.1", f"Host: {target}", f"User-Agent: {user_agent}"]
    if proxy.authorization is not None:
        lines.append(f"Proxy-Authorization: {proxy.authorization}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8")


def read_answer(head: bytes, proxy: Proxy, target: str) -> None:
    """Judge the proxy's whole answer head: return for 2xx, raise otherwise."""
    match = _STATUS_LINE.match(head)
    if match is None:
        raise ProxyError(f"the proxy {proxy.name} answered CONNECT {target} with no HTTP status")
    status = int(match.group(1))
    if 200 <= status < 300:
        return
    reason = (match.group(2) or b"").decode("ascii", "replace")
    reason = "".join(c for c in reason if c.isprintable())[:80]
    hint = " (check the proxy's user and password)" if status == 407 else ""
    raise ProxyRefused(
        f"the proxy {proxy.name} answered CONNECT {target} with {status} {reason}".rstrip() + hint,
        status,
    )


async def tunnel(sock: socket.socket, proxy: Proxy, target: str, user_agent: str) -> None:
    """Ask ``proxy`` (``sock`` is connected to it) for a tunnel to ``target``; returns when
    it is open, the socket then carrying the target's bytes. Raises ``ProxyError``."""
    loop = asyncio.get_running_loop()
    await loop.sock_sendall(sock, connect_request(proxy, target, user_agent))
    head = b""
    while True:
        chunk = await loop.sock_recv(sock, 4096)
        if not chunk:
            raise ProxyError(f"the proxy {proxy.name} closed the connection to CONNECT {target}")
        head += chunk
        end = head.find(b"\r\n\r\n")
        if end < 0:
            end = head.find(b"\n\n")
            size = end + 2
        else:
            size = end + 4
        if end >= 0:
            break
        if len(head) > MAX_ANSWER_BYTES:
            raise ProxyError(f"the proxy {proxy.name} answered CONNECT with an endless head")
    read_answer(head, proxy, target)
    if len(head) > size:  # the target speaks only once asked: the proxy sent something else
        raise ProxyError(f"the proxy {proxy.name} sent bytes after its answer to CONNECT")
