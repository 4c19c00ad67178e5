"""Address policy: may the crawler connect to this IP address?

Rules (in the order they are applied):

1. An address inside a network of the explicit allow-list is allowed (``allow-listed``). The
   allow-list is the only way through; it matches the address itself, and for an IPv4-mapped
   IPv6 address also the IPv4 address it maps to (both name the same endpoint).
2. An IPv4 address inside a block of ``ranges.IPV4_BLOCKED`` is refused with that block's
   reason; the most specific block wins so the detail names the narrowest registry row.
3. An IPv6 address is matched against ``ranges.IPV6_BLOCKED`` and ``ranges.IPV6_EMBEDDINGS``
   together, most specific prefix first (so ``::1`` is ``loopback`` although it also lies in the
   IPv4-compatible ``::/96``, and Teredo ``2001::/32`` is judged although it lies in 2001::/23).
   An embedding prefix hands the embedded IPv4 address(es) to rule 2: a blocked one refuses the
   address with ``<embedding>:<ipv4 reason>`` (``nat64:loopback``, ``teredo:private``). Teredo
   carries two: the server, and the client XOR-obfuscated; both are judged. Deprecated and
   local-use embeddings are refused even when the embedded address is global.
4. Any other IPv6 address outside the global unicast space 2000::/3 is ``reserved``.
5. Everything else is allowed (``ok``).

The policy only judges addresses (``ipaddress`` objects, or their plain text). Other spellings
(``0x7f.1``, ``2130706433``, ``[::ffff:7f00:1]``) are the job of ``courtier.url.canonical_host``
and are ``invalid-host`` here, so a caller that skips canonicalisation fails closed.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

from courtier.net.ranges import (
    IPV4_BLOCKED,
    IPV6_BLOCKED,
    IPV6_EMBEDDINGS,
    IPV6_GLOBAL_UNICAST,
    Embedding,
    EmbeddingPrefix,
    SpecialBlock,
)

__all__ = [
    "AddressPolicy",
    "IPAddress",
    "IPNetwork",
    "Verdict",
    "is_local_name",
    "local_name_reason",
    "parse_allowed_network",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

_LOW32 = 0xFFFF_FFFF


@dataclass(frozen=True, slots=True)
class Verdict:
    """The policy's answer for one address.

    ``reason`` is a short stable code for counting refusals; ``detail`` explains it to a human,
    naming the block and its source.
    """

    allowed: bool
    reason: str
    detail: str


def parse_allowed_network(spec: str | IPNetwork) -> IPNetwork:
    """Parse one allow-list entry (``127.0.0.0/8``, ``::1``, ``10.1.2.3``).

    Raises ``ValueError`` with a readable message for anything else, including a network with
    host bits set: a typo in an allow-list must not silently widen or narrow it.
    """
    if isinstance(spec, ipaddress.IPv4Network | ipaddress.IPv6Network):
        return spec
    text = spec.strip()
    try:
        return ipaddress.ip_network(text, strict=True)
    except ValueError as error:
        raise ValueError(f"not a network in CIDR notation: {spec!r} ({error})") from None


_Entry = SpecialBlock | EmbeddingPrefix


class _PrefixTable:
    """Longest-prefix match over a handful of networks of one address family.

    One dict per prefix length, probed from the longest length down: a lookup costs a few
    shifts and dict probes instead of a membership test per block.
    """

    __slots__ = ("_bits", "_by_length")

    def __init__(self, bits: int, entries: Iterable[_Entry]) -> None:
        self._bits = bits
        by_length: dict[int, dict[int, _Entry]] = {}
        for entry in entries:
            network = entry.network
            key = int(network.network_address) >> (bits - network.prefixlen)
            by_length.setdefault(network.prefixlen, {})[key] = entry
        self._by_length = sorted(by_length.items(), reverse=True)

    def lookup(self, value: int) -> _Entry | None:
        for length, entries in self._by_length:
            entry = entries.get(value >> (self._bits - length))
            if entry is not None:
                return entry
        return None


_IPV4_TABLE = _PrefixTable(32, IPV4_BLOCKED)
_IPV6_TABLE = _PrefixTable(128, (*IPV6_BLOCKED, *IPV6_EMBEDDINGS))


def embedded_ipv4(
    address: ipaddress.IPv6Address, prefix: EmbeddingPrefix
) -> tuple[tuple[str, ipaddress.IPv4Address], ...]:
    """The IPv4 address(es) carried by ``address`` under ``prefix``, each with its role."""
    value = int(address)
    if prefix.embedding is Embedding.SIX_TO_FOUR:
        # 2002:AABB:CCDD::/48 -- the IPv4 address is bits 16..47 (RFC 3056 §2).
        return (("6to4 gateway", ipaddress.IPv4Address((value >> 80) & _LOW32)),)
    if prefix.embedding is Embedding.TEREDO:
        # 2001:0:SERVER:FLAGS:PORT:CLIENT -- the client is stored XOR 0xffffffff (RFC 4380 §4).
        client = ipaddress.IPv4Address((value & _LOW32) ^ _LOW32)
        server = ipaddress.IPv4Address((value >> 64) & _LOW32)
        return (("Teredo client", client), ("Teredo server", server))
    # Every other embedding keeps the IPv4 address in the last 32 bits (RFC 4291, RFC 6052 /96).
    return (("IPv4 address", ipaddress.IPv4Address(value & _LOW32)),)


class AddressPolicy:
    """Judges addresses against the special-purpose blocks and one explicit allow-list.

    Immutable once built, so verdicts are memoised (a crawl sees the same CDN and hosting
    addresses over and over); the memo is bounded by ``VERDICT_CACHE_SIZE``.
    """

    VERDICT_CACHE_SIZE = 1 << 16

    __slots__ = ("_allow", "_allow_masks", "_cached_check")

    def __init__(self, allow: Iterable[str | IPNetwork] = ()) -> None:
        self._allow: tuple[IPNetwork, ...] = tuple(parse_allowed_network(a) for a in allow)
        # (version, network as int, netmask as int): membership without ipaddress overhead.
        self._allow_masks = tuple(
            (net.version, int(net.network_address), int(net.netmask)) for net in self._allow
        )
        self._cached_check = functools.lru_cache(maxsize=self.VERDICT_CACHE_SIZE)(self._check)

    @property
    def allow(self) -> tuple[IPNetwork, ...]:
        """The allow-listed networks, in the order given."""
        return self._allow

    def check(self, address: str | IPAddress) -> Verdict:
        """Judge one address given as an ``ipaddress`` object or its plain text."""
        return self._cached_check(address)

    def _check(self, address: str | IPAddress) -> Verdict:
        if isinstance(address, str):
            try:
                address = ipaddress.ip_address(address.strip().removeprefix("[").removesuffix("]"))
            except ValueError:
                return Verdict(False, "invalid-host", f"{address!r} is not an IP address")
        allowed_by = self._allow_listed_network(address)
        if allowed_by is not None:
            return Verdict(True, "allow-listed", f"{address} is inside allow-listed {allowed_by}")
        if isinstance(address, ipaddress.IPv4Address):
            return _judge_ipv4(address)
        return _judge_ipv6(address)

    def _allow_listed_network(self, address: IPAddress) -> IPNetwork | None:
        if not self._allow:
            return None
        candidates = [(address.version, int(address))]
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            candidates.append((4, int(address.ipv4_mapped)))
        for network, (version, network_int, mask) in zip(
            self._allow, self._allow_masks, strict=True
        ):
            for candidate_version, value in candidates:
                if candidate_version == version and value & mask == network_int:
                    return network
        return None


def _refusal(address: IPAddress, block: SpecialBlock) -> Verdict:
    return Verdict(
        False, block.reason, f"{address} is in {block.network} {block.name} ({block.source})"
    )


def _judge_ipv4(address: ipaddress.IPv4Address) -> Verdict:
    block = _IPV4_TABLE.lookup(int(address))
    if isinstance(block, SpecialBlock):
        return _refusal(address, block)
    return Verdict(True, "ok", f"{address} is not in any special-purpose block")


def _judge_ipv6(address: ipaddress.IPv6Address) -> Verdict:
    if address.scope_id is not None:
        # A zone index names a local interface: only meaningful on the local link.
        return Verdict(False, "invalid-host", f"{address} carries a zone index")
    entry = _IPV6_TABLE.lookup(int(address))
    if isinstance(entry, SpecialBlock):
        return _refusal(address, entry)
    if isinstance(entry, EmbeddingPrefix):
        return _judge_embedding(address, entry)
    if address not in IPV6_GLOBAL_UNICAST:
        return Verdict(
            False,
            "reserved",
            f"{address} is outside the global unicast space {IPV6_GLOBAL_UNICAST} "
            "(IANA IPv6 Address Space Registry; RFC 4291 §2.4)",
        )
    return Verdict(True, "ok", f"{address} is not in any special-purpose block")


def _judge_embedding(address: ipaddress.IPv6Address, prefix: EmbeddingPrefix) -> Verdict:
    code = prefix.embedding.value
    where = f"{prefix.network} {prefix.name} ({prefix.source})"
    # The local-use NAT64 prefix reports its embedded address under the "nat64" code as well:
    # the layout is operator-defined, the /96 reading is the only one worth naming.
    embedded_code = "nat64" if prefix.embedding is Embedding.NAT64_LOCAL else code
    for role, ipv4 in embedded_ipv4(address, prefix):
        inner = _judge_ipv4(ipv4)
        if not inner.allowed:
            return Verdict(
                False,
                f"{embedded_code}:{inner.reason}",
                f"{address} is in {where} and embeds {role} {ipv4}: {inner.detail}",
            )
    if prefix.refused_even_if_global:
        return Verdict(False, code, f"{address} is in {where}, refused whatever it embeds")
    return Verdict(True, "ok", f"{address} is in {where} and embeds only global IPv4 addresses")


# Special-use names that never mean a public web site. Each is resolved locally or not at all:
#   localhost, *.localhost      RFC 6761 §6.3 (loopback by definition)
#   localhost.localdomain etc.  "localdomain" is the de-facto /etc/hosts suffix, not a TLD
#   *.local                     RFC 6762 (multicast DNS on the local link)
#   *.home.arpa                 RFC 8375 (residential home networks)
#   *.internal                  ICANN's 2024 reservation for private namespaces
#   *.onion                     RFC 7686 (must not be resolved through DNS)
#   *.invalid                   RFC 6761 §6.4 (guaranteed never to exist)
# Single-label names ("intranet", "metadata") are refused too: resolvers complete them with the
# host's search domains, which is exactly how a short name reaches an internal service.
# ".test" is NOT here: it is the simulated web's namespace and gets an ordinary DNS lookup.
_LOCAL_SUFFIXES = (
    ("localhost", "localhost-name", "RFC 6761 §6.3"),
    ("localdomain", "local-name", "de-facto local /etc/hosts domain"),
    ("local", "local-name", "multicast DNS, RFC 6762"),
    ("home.arpa", "local-name", "home networks, RFC 8375"),
    ("internal", "local-name", "private-use TLD reserved by ICANN"),
    ("onion", "local-name", "Tor onion services, RFC 7686"),
    ("invalid", "local-name", "never exists, RFC 6761 §6.4"),
)


def local_name_reason(host: str) -> tuple[str, str] | None:
    """``(reason, detail)`` when ``host`` is a special-use local name, else ``None``.

    ``host`` is expected canonical (lowercase, no trailing dot); both are tolerated.
    """
    name = host.strip().rstrip(".").lower()
    if not name:
        return ("invalid-host", "empty host name")
    for suffix, reason, source in _LOCAL_SUFFIXES:
        if name == suffix or name.endswith("." + suffix):
            return (reason, f"{name} is a special-use local name ({source})")
    if "." not in name:
        return ("local-name", f"{name} is a single-label name, completed by local search domains")
    return None


def is_local_name(host: str) -> bool:
    """True for names that never resolve outward (``localhost``, ``*.localhost``, ...)."""
    return local_name_reason(host) is not None
