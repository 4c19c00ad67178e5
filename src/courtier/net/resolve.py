"""Name resolution for the SSRF guard: A then AAAA, cached within the answer's TTL.

Rules:

- ``Resolver.resolve(host)`` returns the canonical text of every address, A records first,
  then AAAA, without duplicates; or raises ``ResolveError`` whose ``code`` is one of
  ``nxdomain``, ``no-address``, ``timeout``, ``dns-error`` or ``invalid-host``. Nothing else
  escapes: a malformed packet is ignored like any stray datagram (the wait goes on), and a
  bug in the DNS code becomes ``dns-error``, so a crawl never dies on a hostile nameserver.
- The A lookup decides the fate of the name (NXDOMAIN, timeout, failure); an AAAA failure or
  empty AAAA answer only means "no IPv6 addresses".
- Names are queried as absolute names with search domains off: ``metadata`` must never become
  ``metadata.internal.`` behind our back.
- Answers are cached for their TTL clamped to ``[min_ttl, max_ttl]`` (the smallest TTL along a
  CNAME chain, as dnspython reports it); NXDOMAIN and empty answers for ``negative_ttl``
  clamped the same way; timeouts and failures are never cached. The cache holds at most
  ``max_entries`` names, least recently used first out. Concurrent lookups of one name share a
  single query. The clock is injected so expiry is testable without waiting. The defaults
  are ``DEFAULT_MIN_TTL``, ``DEFAULT_MAX_TTL`` and ``DEFAULT_NEGATIVE_TTL``.
- Questions go through a ``DnsClient`` (``courtier.net.dns_client``), which caches each
  (name, type) answer within the same bounds and may be shared with origin inference: a name
  seen for the first time is answered from answers the client already holds, with the TTL
  they have left; a name whose entry expired is asked afresh.
- Caching cannot weaken the guard: the fetcher connects only to the addresses returned here,
  after the policy has judged every one of them (pinning), so a rebinding answer with TTL 0
  changes nothing.
"""

from __future__ import annotations

import asyncio
import ipaddress
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import dns.exception
import dns.nameserver
import dns.resolver

from courtier.net import dns_wire
from courtier.net.dns_client import CachedReply, DnsClient, QueryError

__all__ = [
    "DEFAULT_MAX_TTL",
    "DEFAULT_MIN_TTL",
    "DEFAULT_NEGATIVE_TTL",
    "DnsResolver",
    "ResolveError",
    "Resolver",
    "StaticResolver",
    "make_dns_client",
    "parse_nameserver",
]


class ResolveError(Exception):
    """A name could not be resolved to addresses; ``code`` is a stable counting code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class Resolver(Protocol):
    """Turns a canonical host name into the canonical texts of its addresses."""

    async def resolve(self, host: str) -> tuple[str, ...]:
        """A then AAAA addresses; raises ``ResolveError`` and nothing else."""
        ...


def parse_nameserver(spec: str) -> tuple[str, int]:
    """Parse ``HOST:PORT``, ``[V6]:PORT``, ``HOST`` or a bare IPv6 address (port 53).

    The host must be an IP address: a nameserver named by a name would need a resolver itself.
    Raises ``ValueError`` with a readable message.
    """
    text = spec.strip()
    host, port_text = text, "53"
    if text.startswith("["):
        host, bracket, rest = text[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise ValueError(f"bad nameserver {spec!r}: expected [IPv6]:PORT")
        port_text = rest[1:] if rest else "53"
    elif text.count(":") == 1:
        host, _, port_text = text.partition(":")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise ValueError(f"bad nameserver {spec!r}: {host!r} is not an IP address") from None
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ValueError(f"bad nameserver {spec!r}: port must be 1-65535")
    return str(address), int(port_text)


@dataclass(frozen=True, slots=True)
class _CacheEntry:
    expires_at: float
    addresses: tuple[str, ...]
    error: ResolveError | None


DEFAULT_MIN_TTL = 0.0
"""Floor on how long an answer is kept: 0 honours TTL 0 (asked again every time)."""
DEFAULT_MAX_TTL = 3600.0
"""Ceiling on how long an answer is kept, whatever its TTL says."""
DEFAULT_NEGATIVE_TTL = 60.0
"""How long NXDOMAIN and "no address" are kept (then clamped like any TTL)."""


class DnsResolver:
    """A ``DnsClient`` behind a bounded TTL cache of whole names (see the module rules).

    ``client`` is the shared question-level cache: origin inference asks its A and AAAA
    questions through it too (``DnsEvidenceSource(resolver=...)``), so the guard's first
    resolution of a site it already inferred costs no query.
    """

    def __init__(
        self,
        nameserver: str | None = None,
        *,
        timeout: float = 5.0,
        min_ttl: float = DEFAULT_MIN_TTL,
        max_ttl: float = DEFAULT_MAX_TTL,
        negative_ttl: float = DEFAULT_NEGATIVE_TTL,
        max_entries: int = 100_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not 0 <= min_ttl <= max_ttl:
            raise ValueError("need 0 <= min_ttl <= max_ttl")
        if max_entries < 1 or timeout <= 0:
            raise ValueError("max_entries must be >= 1 and timeout > 0")
        self._min_ttl = min_ttl
        self._max_ttl = max_ttl
        self._negative_ttl = negative_ttl
        self._max_entries = max_entries
        self._clock = clock
        self._cache: OrderedDict[str, _CacheEntry] = OrderedDict()
        self._inflight: dict[str, asyncio.Future[tuple[str, ...]]] = {}
        self.client = make_dns_client(
            nameserver,
            timeout,
            max_ttl=max_ttl,
            negative_ttl=min(max(negative_ttl, min_ttl), max_ttl),
            max_entries=2 * max_entries,
            clock=clock,
        )

    def cached_names(self) -> int:
        """How many names the cache holds (expired ones included until evicted or looked up)."""
        return len(self._cache)

    async def resolve(self, host: str) -> tuple[str, ...]:
        key = host.strip().rstrip(".").lower()
        entry = self._cache.get(key)
        if entry is not None and self._clock() < entry.expires_at:
            self._cache.move_to_end(key)
            if entry.error is not None:
                # A fresh exception per caller: re-raising one instance piles up tracebacks.
                raise ResolveError(entry.error.code, str(entry.error))
            return entry.addresses
        # A name whose answer set expired is asked afresh in full, so its A and AAAA answers
        # come from one moment; a name never resolved may use answers inference just got.
        refresh = entry is not None
        if refresh:
            del self._cache[key]
        else:
            known = self._from_client_cache(key)
            if known is not None:
                return known
        shared = self._inflight.get(key)
        if shared is None:
            shared = asyncio.ensure_future(self._lookup_and_cache(key, refresh))
            self._inflight[key] = shared
            shared.add_done_callback(lambda done: self._lookup_finished(key, done))
        # shield: one impatient caller being cancelled must not cancel the others' lookup.
        return await asyncio.shield(shared)

    def _from_client_cache(self, key: str) -> tuple[str, ...] | None:
        """Both answers already known (origin inference asked them): no task, no query."""
        a = self.client.cached(key, dns_wire.A)
        if a is None or a.reply.rcode != dns_wire.NOERROR:
            return None
        aaaa = self.client.cached(key, dns_wire.AAAA)
        if aaaa is None:
            return None
        try:
            addresses, ttl = _addresses_of(key, a, aaaa)
        except ResolveError:
            return None  # the ordinary path decides and caches the failure
        self._cache_put(key, ttl, addresses, None)
        return addresses

    def _lookup_finished(self, key: str, done: asyncio.Future[tuple[str, ...]]) -> None:
        self._inflight.pop(key, None)
        if not done.cancelled():
            done.exception()  # mark retrieved: every waiter may have gone away

    def _cache_put(
        self, key: str, ttl: float, addresses: tuple[str, ...], error: ResolveError | None
    ) -> None:
        ttl = min(max(ttl, self._min_ttl), self._max_ttl)
        if ttl <= 0:
            return
        self._cache[key] = _CacheEntry(self._clock() + ttl, addresses, error)
        self._cache.move_to_end(key)
        while len(self._cache) > self._max_entries:
            self._cache.popitem(last=False)

    async def _lookup_and_cache(self, key: str, refresh: bool) -> tuple[str, ...]:
        try:
            addresses, ttl = await self._lookup(key, refresh)
        except ResolveError as error:
            if error.code in ("nxdomain", "no-address"):
                self._cache_put(key, self._negative_ttl, (), error)
            raise
        except Exception as error:  # a bug of ours must not escape as anything else
            detail = f"DNS lookup of {key} failed: {type(error).__name__}: {error}"
            raise ResolveError("dns-error", detail) from error
        self._cache_put(key, ttl, addresses, None)
        return addresses

    async def _lookup(self, key: str, refresh: bool) -> tuple[tuple[str, ...], float]:
        a_result, aaaa_result = await self.client.ask(
            ((key, dns_wire.A), (key, dns_wire.AAAA)), fresh=refresh
        )
        if isinstance(a_result, QueryError):
            raise ResolveError(a_result.code, str(a_result))
        if isinstance(aaaa_result, QueryError):
            return _addresses_of(key, a_result, None)  # an AAAA failure: "no IPv6 address"
        return _addresses_of(key, a_result, aaaa_result)


def _addresses_of(
    key: str, a: CachedReply, aaaa: CachedReply | None
) -> tuple[tuple[str, ...], float]:
    """A then AAAA addresses, and the TTL left on the shortest-lived non-empty answer."""
    if a.reply.rcode == dns_wire.NXDOMAIN:
        raise ResolveError("nxdomain", f"{key} does not exist (NXDOMAIN)")
    addresses: list[str] = []
    ttls: list[float] = []
    for answer, rtype in ((a, dns_wire.A), (aaaa, dns_wire.AAAA)):
        if answer is None or answer.reply.rcode != dns_wire.NOERROR:
            continue
        found = dns_wire.chain(answer.reply, key, rtype)
        if found is not None:
            records, ttl = found
            addresses.extend(record.value for record in records)
            ttls.append(ttl - answer.age)
    unique = tuple(dict.fromkeys(addresses))
    if not unique:
        raise ResolveError("no-address", f"{key} has no A or AAAA records")
    return unique, min(ttls)


def system_nameservers() -> tuple[tuple[tuple[str, int], ...], str]:
    """The plain-DNS nameservers of /etc/resolv.conf (read by dnspython), or () and why not."""
    try:
        config = dns.resolver.Resolver(configure=True)
    except dns.exception.DNSException as error:
        return (), str(error) or type(error).__name__
    servers: list[tuple[str, int]] = []
    for nameserver in config.nameservers:
        if isinstance(nameserver, str):
            servers.append((str(ipaddress.ip_address(nameserver)), config.port))
        elif isinstance(nameserver, dns.nameserver.Do53Nameserver):
            servers.append((str(ipaddress.ip_address(nameserver.address)), nameserver.port))
    return tuple(servers), "" if servers else "no plain DNS nameserver in the configuration"


def make_dns_client(
    nameserver: str | None,
    timeout: float,
    *,
    max_ttl: float = DEFAULT_MAX_TTL,
    negative_ttl: float = DEFAULT_NEGATIVE_TTL,
    max_entries: int = 200_000,
    clock: Callable[[], float] = time.monotonic,
) -> DnsClient:
    """A ``DnsClient`` for ``nameserver`` (None: the system's); raises ``ValueError`` for a
    bad ``nameserver``. A system configuration that cannot be read gives a client whose
    every query is a ``dns-error`` naming why."""
    if nameserver is None:
        servers, error = system_nameservers()
    else:
        servers, error = (parse_nameserver(nameserver),), ""
    return DnsClient(
        servers,
        timeout=timeout,
        max_ttl=max_ttl,
        negative_ttl=negative_ttl,
        max_entries=max_entries,
        clock=clock,
        config_error=error,
    )


class StaticResolver:
    """A resolver answering from a fixed table, for tests and offline checks.

    A name missing from the table is ``nxdomain``; a name mapped to no address is ``no-address``.
    Addresses are returned as given, so tests can feed the guard garbage on purpose.
    """

    def __init__(self, table: Mapping[str, Sequence[str]]) -> None:
        self._table = {
            name.strip().rstrip(".").lower(): tuple(addresses) for name, addresses in table.items()
        }

    async def resolve(self, host: str) -> tuple[str, ...]:
        key = host.strip().rstrip(".").lower()
        addresses = self._table.get(key)
        if addresses is None:
            raise ResolveError("nxdomain", f"{key} is not in the static table")
        if not addresses:
            raise ResolveError("no-address", f"{key} has no addresses in the static table")
        return addresses
