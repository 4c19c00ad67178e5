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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from courtier.net import dns_wire
from courtier.net.dns_client import CachedReply, QueryError
from courtier.net.resolve import DnsResolver, make_dns_client
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
    """Looks up ``DnsFacts`` through a ``DnsClient`` (see the module rules).

    Given the guard's ``resolver``, it asks through that resolver's client, so the answers
    are shared both ways: the guard's first resolution of an inferred site costs no query,
    and inference of a site the crawl already resolved asks only for its PTR names.
    """

    def __init__(
        self,
        nameserver: str | None,
        *,
        concurrency: int = 64,
        timeout: float = 2.0,
        resolver: DnsResolver | None = None,
    ) -> None:
        """``nameserver`` None means the system's resolvers (/etc/resolv.conf); it and
        ``timeout`` are ignored when ``resolver`` is given (its client asks)."""
        if concurrency < 1 or timeout <= 0:
            raise ValueError("concurrency must be >= 1 and timeout > 0")
        if resolver is not None:
            self._client = resolver.client
        else:
            self._client = make_dns_client(nameserver, timeout)
            if not self._client.has_nameservers:
                raise ValueError(f"no DNS resolver: {self._client.config_error}")
        self._slots = asyncio.Semaphore(concurrency)
        self._ptr: dict[str, tuple[tuple[str, ...], float]] = {}

    async def lookup(self, host: str) -> DnsFacts:
        if is_ip_address(host):
            # An address literal is its own address set; only its PTR name is asked.
            ((names, ttl),) = await self._ptr_of((host,))
            return DnsFacts(host, (), (host,), {host: names} if names else {}, ttl)
        name = host.rstrip(".").lower()
        v4, v6 = await self._ask(((name, dns_wire.A), (name, dns_wire.AAAA)))
        if isinstance(v4, QueryError):
            return DnsFacts(host, error=_error_text(v4))
        if v4.reply.rcode == dns_wire.NXDOMAIN:
            return DnsFacts(host, error="nxdomain: the name does not exist")
        chain, addresses, ttl = _facts_of(name, v4, dns_wire.A)
        if not isinstance(v6, QueryError) and v6.reply.rcode == dns_wire.NOERROR:
            _, v6_addresses, v6_ttl = _facts_of(name, v6, dns_wire.AAAA)
            addresses = (*addresses, *v6_addresses)
            ttl = min(ttl, v6_ttl) if v6_addresses else ttl
        unique = tuple(sorted(set(addresses)))
        if not unique:
            return DnsFacts(host, chain, error="no-address: no A or AAAA records", ttl=ttl)
        ptr_results = await self._ptr_of(unique)
        ptr = {a: names for a, (names, _) in zip(unique, ptr_results, strict=True) if names}
        ttl = min([ttl, *(t for names, t in ptr_results if names)])
        return DnsFacts(host, chain, unique, ptr, ttl)

    async def _ask(self, questions: Sequence[tuple[str, int]]) -> list[CachedReply | QueryError]:
        known = [self._client.cached(name, qtype) for name, qtype in questions]
        if all(k is not None for k in known):
            return [k for k in known if k is not None]  # no slot needed: all at hand
        async with self._slots:
            return await self._client.ask(questions)

    async def _ptr_of(self, addresses: Sequence[str]) -> list[tuple[tuple[str, ...], float]]:
        """The PTR names of each address, asked at most once until ``forget_ptr``."""
        missing = [a for a in addresses if a not in self._ptr]
        if missing:
            asked: list[str] = []
            questions: list[tuple[str, int]] = []
            for address in missing:
                try:
                    questions.append((dns_wire.reverse_name(address), dns_wire.PTR))
                except ValueError:
                    self._ptr[address] = ((), DEFAULT_TTL)  # not an address: no PTR name
                else:
                    asked.append(address)
            outcomes = await self._ask(questions) if questions else []
            for address, (name, _), outcome in zip(asked, questions, outcomes, strict=True):
                self._ptr[address] = _ptr_names(name, outcome)
        return [self._ptr[a] for a in addresses]

    def forget_ptr(self) -> None:
        """Drop the PTR answers shared between hosts, so a re-check asks again (once the
        client's copy has outlived its TTL)."""
        self._ptr.clear()


def _facts_of(
    name: str, answer: CachedReply, qtype: int
) -> tuple[tuple[str, ...], tuple[str, ...], float]:
    """Every CNAME target and every address of ``qtype`` in the answer, and its TTL left."""
    reply = answer.reply
    chain = tuple(dict.fromkeys(r.value for r in reply.answer if r.rtype == dns_wire.CNAME))
    addresses = tuple(r.value for r in reply.answer if r.rtype == qtype)
    found = dns_wire.chain(reply, name, qtype)
    return chain, addresses, DEFAULT_TTL if found is None else found[1] - answer.age


def _ptr_names(name: str, outcome: CachedReply | QueryError) -> tuple[tuple[str, ...], float]:
    """A failed PTR lookup only means "no PTR name", whatever failed."""
    if isinstance(outcome, QueryError) or outcome.reply.rcode != dns_wire.NOERROR:
        return (), DEFAULT_TTL
    found = dns_wire.chain(outcome.reply, name, dns_wire.PTR)
    if found is None:
        return (), DEFAULT_TTL
    records = found[0]
    return tuple(sorted({r.value for r in records})), min(r.ttl for r in records) - outcome.age


def _error_text(error: QueryError) -> str:
    if error.code == "timeout":
        return "timeout: no DNS answer in time"
    return f"{error.code}: {error}"[:300]
