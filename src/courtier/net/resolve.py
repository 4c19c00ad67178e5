"""Name resolution for the SSRF guard: A then AAAA, cached within the answer's TTL.

Rules:

- ``Resolver.resolve(host)`` returns the canonical text of every address, A records first,
  then AAAA, without duplicates; or raises ``ResolveError`` whose ``code`` is one of
  ``nxdomain``, ``no-address``, ``timeout``, ``dns-error`` or ``invalid-host``. Nothing else
  escapes: a malformed packet, an unexpected rdata or a bug in the DNS library all become
  ``dns-error``, so a crawl never dies on a hostile nameserver.
- The A lookup decides the fate of the name (NXDOMAIN, timeout, failure); an AAAA failure or
  empty AAAA answer only means "no IPv6 addresses".
- Names are queried as absolute names with search domains off: ``metadata`` must never become
  ``metadata.internal.`` behind our back.
- Answers are cached for their TTL clamped to ``[min_ttl, max_ttl]`` (the smallest TTL along a
  CNAME chain, as dnspython reports it); NXDOMAIN and empty answers for ``negative_ttl``
  clamped the same way; timeouts and failures are never cached. The cache holds at most
  ``max_entries`` names, least recently used first out. Concurrent lookups of one name share a
  single query. The clock is injected so expiry is testable without waiting.
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

import dns.asyncresolver
import dns.exception
import dns.name
import dns.nameserver
import dns.rdatatype
import dns.resolver

__all__ = [
    "DnsResolver",
    "ResolveError",
    "Resolver",
    "StaticResolver",
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


class DnsResolver:
    """dnspython's async resolver behind a bounded TTL cache (see the module rules)."""

    def __init__(
        self,
        nameserver: str | None = None,
        *,
        timeout: float = 5.0,
        min_ttl: float = 0.0,
        max_ttl: float = 3600.0,
        negative_ttl: float = 60.0,
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
        self._dns, self._config_error = make_dns_resolver(nameserver, timeout)

    def cached_names(self) -> int:
        """How many names the cache holds (expired ones included until evicted or looked up)."""
        return len(self._cache)

    async def resolve(self, host: str) -> tuple[str, ...]:
        key = host.strip().rstrip(".").lower()
        cached = self._cache_get(key)
        if cached is not None:
            if cached.error is not None:
                # A fresh exception per caller: re-raising one instance piles up tracebacks.
                raise ResolveError(cached.error.code, str(cached.error))
            return cached.addresses
        shared = self._inflight.get(key)
        if shared is None:
            shared = asyncio.ensure_future(self._lookup_and_cache(key))
            self._inflight[key] = shared
            shared.add_done_callback(lambda done: self._lookup_finished(key, done))
        # shield: one impatient caller being cancelled must not cancel the others' lookup.
        return await asyncio.shield(shared)

    def _lookup_finished(self, key: str, done: asyncio.Future[tuple[str, ...]]) -> None:
        self._inflight.pop(key, None)
        if not done.cancelled():
            done.exception()  # mark retrieved: every waiter may have gone away

    def _cache_get(self, key: str) -> _CacheEntry | None:
        entry = self._cache.get(key)
        if entry is None:
            return None
        if self._clock() >= entry.expires_at:
            del self._cache[key]
            return None
        self._cache.move_to_end(key)
        return entry

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

    async def _lookup_and_cache(self, key: str) -> tuple[str, ...]:
        try:
            addresses, ttl = await self._lookup(key)
        except ResolveError as error:
            if error.code in ("nxdomain", "no-address"):
                self._cache_put(key, self._negative_ttl, (), error)
            raise
        self._cache_put(key, ttl, addresses, None)
        return addresses

    async def _lookup(self, key: str) -> tuple[tuple[str, ...], float]:
        if self._dns is None:
            raise ResolveError("dns-error", f"no DNS configuration: {self._config_error}")
        try:
            qname = dns.name.from_text(key, origin=dns.name.root)
        except (dns.exception.DNSException, UnicodeError, ValueError) as error:
            raise ResolveError("invalid-host", f"{key!r} is not a DNS name: {error}") from None
        a_result, aaaa_result = await asyncio.gather(
            self._query(qname, dns.rdatatype.A),
            self._query(qname, dns.rdatatype.AAAA),
            return_exceptions=True,
        )
        if isinstance(a_result, BaseException):
            raise _as_resolve_error(key, a_result)
        answers = [a_result]
        if not isinstance(aaaa_result, BaseException):
            answers.append(aaaa_result)
        addresses = tuple(address for found, _ in answers for address in found)
        # The entry lives as long as its shortest-lived non-empty answer.
        ttl = min((ttl for found, ttl in answers if found), default=0.0)
        unique = tuple(dict.fromkeys(addresses))
        if not unique:
            raise ResolveError("no-address", f"{key} has no A or AAAA records")
        return unique, ttl

    async def _query(
        self, qname: dns.name.Name, rdtype: dns.rdatatype.RdataType
    ) -> tuple[tuple[str, ...], float]:
        assert self._dns is not None
        answer = await self._dns.resolve(qname, rdtype, search=False, raise_on_no_answer=False)
        rrset = answer.rrset
        if rrset is None:
            return (), float(answer.chaining_result.minimum_ttl)
        addresses = tuple(_address_text(rdata) for rdata in rrset)
        return addresses, float(answer.chaining_result.minimum_ttl)


def make_dns_resolver(
    nameserver: str | None, timeout: float
) -> tuple[dns.asyncresolver.Resolver | None, str]:
    """A dnspython resolver for ``nameserver`` (None: the system's), without dnspython's
    cache; or None and why the system's configuration could not be read."""
    if nameserver is None:
        try:
            resolver = dns.asyncresolver.Resolver(configure=True)
        except dns.exception.DNSException as error:
            return None, str(error) or type(error).__name__
    else:
        address, port = parse_nameserver(nameserver)
        resolver = dns.asyncresolver.Resolver(configure=False)
        resolver.nameservers = [dns.nameserver.Do53Nameserver(address, port)]
    resolver.timeout = timeout
    resolver.lifetime = timeout
    resolver.cache = None  # ours is the only cache, so TTL handling has one owner
    return resolver, ""


def _address_text(rdata: object) -> str:
    """Canonical text of an A/AAAA rdata; anything else is a garbage answer."""
    try:
        return str(ipaddress.ip_address(rdata.address))  # type: ignore[attr-defined]
    except (AttributeError, TypeError, ValueError):
        raise ResolveError("dns-error", f"not an address record: {rdata!r}") from None


def _as_resolve_error(host: str, error: BaseException) -> BaseException:
    """Map whatever the A lookup raised to a ``ResolveError`` (cancellation passes through)."""
    if isinstance(error, ResolveError | asyncio.CancelledError):
        return error
    if not isinstance(error, Exception):
        return error  # KeyboardInterrupt and friends are not ours to swallow
    if isinstance(error, dns.resolver.NXDOMAIN):
        return ResolveError("nxdomain", f"{host} does not exist (NXDOMAIN)")
    if isinstance(error, dns.exception.Timeout):
        return ResolveError("timeout", f"no DNS answer for {host} in time")
    if isinstance(error, dns.resolver.NoNameservers):
        return ResolveError("dns-error", f"every nameserver failed for {host}: {error}")
    return ResolveError(
        "dns-error", f"DNS lookup of {host} failed: {type(error).__name__}: {error}"
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
