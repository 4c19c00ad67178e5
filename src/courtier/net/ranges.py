"""Special-purpose address blocks that a crawler must never connect to, as data.

Every entry names the registry row or RFC it comes from, so a refusal can say why. Sources:

- IANA IPv4 Special-Purpose Address Registry
  (https://www.iana.org/assignments/iana-ipv4-special-registry), RFC 6890, RFC 8190;
- IANA IPv6 Special-Purpose Address Registry
  (https://www.iana.org/assignments/iana-ipv6-special-registry), same RFCs;
- IANA IPv4 Multicast Address Space Registry (RFC 5771) and IANA IPv6 Address Space Registry
  (RFC 4291) for the blocks that live outside the special-purpose registries.

Rules of this table:

- A block whose registry row is *not globally reachable* is blocked whole, including any
  globally reachable sub-assignment inside it (the PCP and TURN anycast addresses in
  192.0.0.0/24 and 2001::/23, AMT and AS112 inside 2001::/23): those are anycast service
  addresses, never a web server, and one rule is easier to audit than a list of holes.
- Blocks that are globally reachable in their own right (AS112 192.31.196.0/24 and
  192.175.48.0/24, AMT 192.52.193.0/24, AS112 2620:4f:8000::/48) are not listed: they are
  ordinary Internet destinations.
- IPv6 outside the global unicast space 2000::/3 is refused as ``reserved`` even when no row
  below names it: IANA allocates unicast space only from 2000::/3.
- Prefixes that *embed* an IPv4 address are listed separately in ``IPV6_EMBEDDINGS``: the
  policy judges the embedded address with the IPv4 rules instead of refusing by prefix.

The ``reason`` of an entry is a short stable code used to count refusals.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from enum import Enum

__all__ = [
    "IPV4_BLOCKED",
    "IPV6_BLOCKED",
    "IPV6_EMBEDDINGS",
    "IPV6_GLOBAL_UNICAST",
    "Embedding",
    "EmbeddingPrefix",
    "SpecialBlock",
]


@dataclass(frozen=True, slots=True)
class SpecialBlock:
    """A block of addresses that is refused, with a counting code and its source."""

    network: ipaddress.IPv4Network | ipaddress.IPv6Network
    reason: str
    name: str
    source: str


class Embedding(Enum):
    """How an IPv6 prefix carries an IPv4 address (the value is the reason-code prefix)."""

    MAPPED = "ipv4-mapped"
    TRANSLATED = "ipv4-translated"
    COMPATIBLE = "ipv4-compatible"
    NAT64 = "nat64"
    NAT64_LOCAL = "nat64-local"
    SIX_TO_FOUR = "6to4"
    TEREDO = "teredo"


@dataclass(frozen=True, slots=True)
class EmbeddingPrefix:
    """An IPv6 prefix whose addresses embed an IPv4 address.

    ``refused_even_if_global`` marks prefixes that are refused even when the embedded IPv4
    address is globally reachable, because the prefix itself is deprecated or local-use.
    """

    network: ipaddress.IPv6Network
    embedding: Embedding
    name: str
    source: str
    refused_even_if_global: bool


def _v4(cidr: str, reason: str, name: str, source: str) -> SpecialBlock:
    return SpecialBlock(ipaddress.IPv4Network(cidr), reason, name, source)


def _v6(cidr: str, reason: str, name: str, source: str) -> SpecialBlock:
    return SpecialBlock(ipaddress.IPv6Network(cidr), reason, name, source)


_IANA4 = "IANA IPv4 Special-Purpose Address Registry"
_IANA6 = "IANA IPv6 Special-Purpose Address Registry"
_SPACE6 = "IANA IPv6 Address Space Registry"

IPV4_BLOCKED: tuple[SpecialBlock, ...] = (
    _v4("0.0.0.0/8", "this-network", '"This network"', f"{_IANA4}; RFC 791 §3.2"),
    _v4("0.0.0.0/32", "this-network", '"This host on this network"', f"{_IANA4}; RFC 1122"),
    _v4("10.0.0.0/8", "private", "Private-Use", f"{_IANA4}; RFC 1918"),
    _v4(
        "100.64.0.0/10", "cgnat", "Shared Address Space (carrier-grade NAT)", f"{_IANA4}; RFC 6598"
    ),
    _v4("127.0.0.0/8", "loopback", "Loopback", f"{_IANA4}; RFC 1122 §3.2.1.3"),
    _v4(
        "169.254.0.0/16",
        "link-local",
        "Link Local (cloud metadata lives here)",
        f"{_IANA4}; RFC 3927",
    ),
    _v4("172.16.0.0/12", "private", "Private-Use", f"{_IANA4}; RFC 1918"),
    _v4(
        "192.0.0.0/24",
        "protocol-assignment",
        "IETF Protocol Assignments",
        f"{_IANA4}; RFC 6890 §2.1",
    ),
    _v4(
        "192.0.0.0/29",
        "protocol-assignment",
        "IPv4 Service Continuity Prefix",
        f"{_IANA4}; RFC 7335",
    ),
    _v4(
        "192.0.0.170/31",
        "protocol-assignment",
        "NAT64/DNS64 Discovery",
        f"{_IANA4}; RFC 8880, RFC 7050",
    ),
    _v4("192.0.2.0/24", "documentation", "Documentation (TEST-NET-1)", f"{_IANA4}; RFC 5737"),
    _v4("192.88.99.0/24", "6to4-relay", "Deprecated (6to4 Relay Anycast)", f"{_IANA4}; RFC 7526"),
    _v4("192.168.0.0/16", "private", "Private-Use", f"{_IANA4}; RFC 1918"),
    _v4("198.18.0.0/15", "benchmarking", "Benchmarking", f"{_IANA4}; RFC 2544"),
    _v4("198.51.100.0/24", "documentation", "Documentation (TEST-NET-2)", f"{_IANA4}; RFC 5737"),
    _v4("203.0.113.0/24", "documentation", "Documentation (TEST-NET-3)", f"{_IANA4}; RFC 5737"),
    _v4(
        "224.0.0.0/4",
        "multicast",
        "Multicast",
        "IANA IPv4 Multicast Address Space Registry; RFC 5771",
    ),
    _v4("240.0.0.0/4", "reserved", "Reserved", f"{_IANA4}; RFC 1112 §4"),
    _v4("255.255.255.255/32", "broadcast", "Limited Broadcast", f"{_IANA4}; RFC 8190, RFC 919 §7"),
)

IPV6_BLOCKED: tuple[SpecialBlock, ...] = (
    _v6("::/128", "unspecified", "Unspecified Address", f"{_IANA6}; RFC 4291"),
    _v6("::1/128", "loopback", "Loopback Address", f"{_IANA6}; RFC 4291"),
    _v6("100::/64", "discard", "Discard-Only Address Block", f"{_IANA6}; RFC 6666"),
    _v6("2001::/23", "protocol-assignment", "IETF Protocol Assignments", f"{_IANA6}; RFC 2928"),
    _v6("2001:2::/48", "benchmarking", "Benchmarking", f"{_IANA6}; RFC 5180"),
    _v6(
        "2001:10::/28",
        "protocol-assignment",
        "Deprecated (previously ORCHID)",
        f"{_IANA6}; RFC 4843",
    ),
    _v6("2001:20::/28", "protocol-assignment", "ORCHIDv2", f"{_IANA6}; RFC 7343"),
    _v6("2001:db8::/32", "documentation", "Documentation", f"{_IANA6}; RFC 3849"),
    _v6("3fff::/20", "documentation", "Documentation", f"{_IANA6}; RFC 9637"),
    _v6("5f00::/16", "segment-routing", "Segment Routing (SRv6) SIDs", f"{_IANA6}; RFC 9602"),
    _v6("fc00::/7", "unique-local", "Unique-Local", f"{_IANA6}; RFC 4193, RFC 8190"),
    _v6("fe80::/10", "link-local", "Link-Local Unicast", f"{_IANA6}; RFC 4291"),
    _v6("fec0::/10", "site-local", "Site-Local (deprecated)", f"{_SPACE6}; RFC 3879"),
    _v6("ff00::/8", "multicast", "Multicast", f"{_SPACE6}; RFC 4291 §2.7"),
)

IPV6_EMBEDDINGS: tuple[EmbeddingPrefix, ...] = (
    EmbeddingPrefix(
        ipaddress.IPv6Network("::ffff:0:0/96"),
        Embedding.MAPPED,
        "IPv4-mapped Address",
        f"{_IANA6}; RFC 4291 §2.5.5.2",
        refused_even_if_global=False,
    ),
    EmbeddingPrefix(
        ipaddress.IPv6Network("::ffff:0:0:0/96"),
        Embedding.TRANSLATED,
        "IPv4-translated Address (SIIT)",
        f"{_SPACE6} (0000::/8 reserved); RFC 2765 §2.1",
        refused_even_if_global=True,
    ),
    EmbeddingPrefix(
        ipaddress.IPv6Network("::/96"),
        Embedding.COMPATIBLE,
        "IPv4-compatible Address (deprecated)",
        f"{_SPACE6} (0000::/8 reserved); RFC 4291 §2.5.5.1",
        refused_even_if_global=True,
    ),
    EmbeddingPrefix(
        ipaddress.IPv6Network("64:ff9b::/96"),
        Embedding.NAT64,
        "IPv4-IPv6 Translation (NAT64 well-known prefix)",
        f"{_IANA6}; RFC 6052 §2.1",
        refused_even_if_global=False,
    ),
    EmbeddingPrefix(
        ipaddress.IPv6Network("64:ff9b:1::/48"),
        Embedding.NAT64_LOCAL,
        "IPv4-IPv6 Translation (local-use NAT64 prefix, not globally reachable)",
        f"{_IANA6}; RFC 8215",
        refused_even_if_global=True,
    ),
    EmbeddingPrefix(
        ipaddress.IPv6Network("2002::/16"),
        Embedding.SIX_TO_FOUR,
        "6to4",
        f"{_IANA6}; RFC 3056",
        refused_even_if_global=False,
    ),
    EmbeddingPrefix(
        ipaddress.IPv6Network("2001::/32"),
        Embedding.TEREDO,
        "TEREDO",
        f"{_IANA6}; RFC 4380, RFC 8190",
        refused_even_if_global=False,
    ),
)

# Everything IANA hands out as IPv6 unicast comes from here (RFC 4291 §2.4, RFC 3587).
IPV6_GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")
