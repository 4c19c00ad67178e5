"""DNS evidence: the CNAME chain, the A/AAAA address set and the PTR names of those addresses.

Rules:
- One A query per host gives the CNAME chain (every link, in order) and the IPv4 addresses; one
  AAAA query adds IPv6 addresses. PTR names are asked once per address, however many hosts
  share it, and shared by all of them.
- Queries go to the configured nameserver only, as absolute names (no search domains), with a
  timeout, through a semaphore that bounds how many are in flight.
- Nothing raises: a failed lookup is a ``DnsFacts`` with ``error`` set; a failed PTR lookup
  only means "no PTR name". The clusterer keeps such a host on its own.
- ``ttl`` is the smallest TTL seen, so the caller knows when the facts are due for a re-check.
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field

import dns.asyncresolver
import dns.exception
import dns.name
import dns.nameserver
import dns.rdatatype
import dns.resolver
import dns.reversename

from courtier.net.resolve import make_dns_resolver
from courtier.url import is_ip_address

DEFAULT_TTL = 300.0


@dataclass(frozen=True, slots=True)
class DnsFacts:
    """What DNS says about one host. ``ptr`` maps an address to its PTR names."""

    host: str
    cname_chain: tuple[str, ...] = ()
    addresses: tuple[str, ...] = ()
    ptr: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    ttl: float = DEFAULT_TTL
    error: str | None = None

    @property
    def ptr_names(self) -> tuple[str, ...]:
        return tuple(sorted({name for names in self.ptr.values() for name in names}))


def _name_text(name: object) -> str:
    return str(name).rstrip(".").lower()


class DnsEvidenceSource:
    """Looks up ``DnsFacts`` through dnspython's async resolver (see the module rules)."""

    def __init__(
        self, nameserver: str | None, *, concurrency: int = 64, timeout: float = 2.0
    ) -> None:
        """``nameserver`` None means the system's resolvers (/etc/resolv.conf)."""
        if concurrency < 1 or timeout <= 0:
            raise ValueError("concurrency must be >= 1 and timeout > 0")
        resolver, error = make_dns_resolver(nameserver, timeout)
        if resolver is None:
            raise ValueError(f"no DNS resolver: {error}")
        self._resolver = resolver
        self._slots = asyncio.Semaphore(concurrency)
        self._ptr: dict[str, asyncio.Future[tuple[tuple[str, ...], float]]] = {}

    async def lookup(self, host: str) -> DnsFacts:
        if is_ip_address(host):
            # An address literal is its own address set; only its PTR name is asked.
            names, ttl = await self._ptr_of(host)
            return DnsFacts(host, (), (host,), {host: names} if names else {}, ttl)
        try:
            qname = dns.name.from_text(host, origin=dns.name.root)
        except (dns.exception.DNSException, UnicodeError, ValueError) as error:
            return DnsFacts(host, error=f"invalid-host: {error}")
        v4, v6 = await asyncio.gather(
            self._query(qname, dns.rdatatype.A),
            self._query(qname, dns.rdatatype.AAAA),
            return_exceptions=True,
        )
        if isinstance(v4, BaseException):
            if not isinstance(v4, Exception):
                raise v4
            return DnsFacts(host, error=_error_text(v4))
        chain, addresses, ttl = v4
        if isinstance(v6, tuple):
            addresses = (*addresses, *v6[1])
            ttl = min(ttl, v6[2]) if v6[1] else ttl
        unique = tuple(sorted(set(addresses)))
        if not unique:
            return DnsFacts(host, chain, error="no-address: no A or AAAA records", ttl=ttl)
        ptr_results = await asyncio.gather(*(self._ptr_of(a) for a in unique))
        ptr = {a: names for a, (names, _) in zip(unique, ptr_results, strict=True) if names}
        ttl = min([ttl, *(t for names, t in ptr_results if names)])
        return DnsFacts(host, chain, unique, ptr, ttl)

    async def _query(
        self, qname: dns.name.Name, rdtype: dns.rdatatype.RdataType
    ) -> tuple[tuple[str, ...], tuple[str, ...], float]:
        async with self._slots:
            answer = await self._resolver.resolve(
                qname, rdtype, search=False, raise_on_no_answer=False
            )
        chain: list[str] = []
        addresses: list[str] = []
        for rrset in answer.response.answer:
            if rrset.rdtype == dns.rdatatype.CNAME:
                chain.extend(_name_text(rdata.target) for rdata in rrset)
            elif rrset.rdtype == rdtype:
                addresses.extend(_address_text(rdata) for rdata in rrset)
        ttl = float(answer.chaining_result.minimum_ttl) if answer.rrset is not None else DEFAULT_TTL
        return tuple(dict.fromkeys(chain)), tuple(a for a in addresses if a), ttl

    async def _ptr_of(self, address: str) -> tuple[tuple[str, ...], float]:
        shared = self._ptr.get(address)
        if shared is None:
            shared = asyncio.ensure_future(self._ptr_lookup(address))
            self._ptr[address] = shared
        return await asyncio.shield(shared)

    async def _ptr_lookup(self, address: str) -> tuple[tuple[str, ...], float]:
        try:
            qname = dns.reversename.from_address(address)
            async with self._slots:
                answer = await self._resolver.resolve(qname, dns.rdatatype.PTR, search=False)
        except Exception:  # a failed PTR lookup only means "no PTR name", whatever failed
            return (), DEFAULT_TTL
        if answer.rrset is None:
            return (), DEFAULT_TTL
        names = tuple(sorted(_name_text(rdata.target) for rdata in answer.rrset))
        return names, float(answer.rrset.ttl)

    def forget_ptr(self) -> None:
        """Drop the PTR answers shared between hosts, so a re-check asks again."""
        self._ptr.clear()


def _address_text(rdata: object) -> str:
    try:
        return str(ipaddress.ip_address(rdata.address))  # type: ignore[attr-defined]
    except (AttributeError, TypeError, ValueError):
        return ""  # not an address record: ignore it rather than trust it


def _error_text(error: Exception) -> str:
    if isinstance(error, dns.resolver.NXDOMAIN):
        return "nxdomain: the name does not exist"
    if isinstance(error, dns.exception.Timeout):
        return "timeout: no DNS answer in time"
    return f"dns-error: {type(error).__name__}: {error}"[:300]
