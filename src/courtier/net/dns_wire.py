"""The DNS wire format, as much of it as a stub resolver asking A, AAAA and PTR needs.

Rules:

- ``encode_query`` builds a standard query (RD set, no EDNS: the same packet dnspython's
  resolver sends) for a name given as text. A name that is not plain printable ASCII with
  labels of 1-63 octets, or that needs escaping, is refused with ``WireError``: canonical
  host names never do, and refusing is safer than guessing what an escape meant.
- ``parse_reply`` returns ``None`` for a packet that is not the reply to the question asked
  (wrong id, not a response, another question): a stray or forged datagram is ignored, never
  mistaken for the answer. A reply to our question that cannot be read raises ``WireError``.
- Only the header, the question and the answer section are read. A truncated reply (TC) is
  returned without records: it is never trusted for data, the caller asks again over TCP.
- Records of class IN and type A, AAAA, CNAME and PTR are kept, with owner names as lowercase
  text without the trailing dot (bytes outside printable ASCII escaped as ``\\DDD``, the way
  dnspython prints them); other types are skipped. A TTL with the top bit set counts as 0
  (RFC 2181 §8).
- ``chain`` follows CNAMEs from the question name to the records of the asked type the way
  dnspython's ``resolve_chaining`` does (at most ``MAX_CHAIN`` links); the TTL it reports is
  the smallest along the chain.
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass

__all__ = [
    "AAAA",
    "CNAME",
    "MAX_CHAIN",
    "NOERROR",
    "NXDOMAIN",
    "PTR",
    "A",
    "Record",
    "Reply",
    "WireError",
    "chain",
    "encode_query",
    "parse_reply",
    "reverse_name",
]

A, CNAME, PTR, AAAA = 1, 5, 12, 28
NOERROR, NXDOMAIN = 0, 3
MAX_CHAIN = 16  # dnspython's limit on CNAME links followed inside one answer
_CLASS_IN = 1
_KEPT_TYPES = frozenset((A, AAAA, CNAME, PTR))
_HEADER = struct.Struct("!HHHHHH")
_RR_FIXED = struct.Struct("!HHIH")
_QUESTION_FIXED = struct.Struct("!HH")
_MAX_NAME_WIRE = 255
_MAX_POINTERS = 64
_TTL_TOP_BIT = 0x8000_0000
# Bytes dnspython escapes with a backslash in a label's text form.
_ESCAPED = frozenset(b'"().;\\@$')
_PLAIN = frozenset(range(0x21, 0x7F)) - _ESCAPED
_QUERY_FLAGS = 0x0100  # RD


class WireError(ValueError):
    """A name that cannot be asked, or a reply to our question that cannot be read."""


@dataclass(frozen=True, slots=True)
class Record:
    """One answer record: ``value`` is an address's canonical text or a target name."""

    owner: str
    rtype: int
    ttl: int
    value: str


@dataclass(frozen=True, slots=True)
class Reply:
    rcode: int
    truncated: bool
    answer: tuple[Record, ...]


def encode_query(ident: int, name: str, qtype: int) -> bytes:
    """A query for ``name`` (text, trailing dot optional) of type ``qtype``."""
    header = _HEADER.pack(ident, _QUERY_FLAGS, 1, 0, 0, 0)
    return header + _name_wire(name) + _QUESTION_FIXED.pack(qtype, _CLASS_IN)


def _name_wire(name: str) -> bytes:
    text = name[:-1] if name.endswith(".") else name
    if not text:
        raise WireError("empty name")
    try:
        raw = text.encode("ascii")
    except UnicodeEncodeError:
        raise WireError(f"{name!r} is not ASCII") from None
    out = bytearray()
    for label in raw.split(b"."):
        if not 0 < len(label) < 64:
            raise WireError(f"{name!r} has an empty or over-long label")
        if not _PLAIN.issuperset(label):
            raise WireError(f"{name!r} has characters a host name does not contain")
        out.append(len(label))
        out += label
    out.append(0)
    if len(out) > _MAX_NAME_WIRE:
        raise WireError(f"{name!r} is longer than 255 octets")
    return bytes(out)


def reverse_name(address: str) -> str:
    """The PTR query name of an address (``4.3.2.1.in-addr.arpa``, IPv6 nibbles)."""
    return ipaddress.ip_address(address).reverse_pointer


def parse_reply(packet: bytes, ident: int, name: str, qtype: int) -> Reply | None:
    """The reply to the question ``(name, qtype)`` sent with id ``ident`` (see the rules)."""
    if len(packet) < _HEADER.size:
        return None
    got_id, flags, qdcount, ancount, _nscount, _arcount = _HEADER.unpack_from(packet)
    if got_id != ident or not flags & 0x8000 or (flags >> 11) & 0xF:
        return None  # not a response to a standard query of ours
    rcode = flags & 0xF
    if qdcount != 1:
        # Only a failure may come back without the question (RFC 1035 allows it for FORMERR).
        if qdcount == 0 and rcode not in (NOERROR, NXDOMAIN):
            return Reply(rcode, False, ())
        return None
    try:
        asked, offset = _read_name(packet, _HEADER.size)
        got_type, got_class = _QUESTION_FIXED.unpack_from(packet, offset)
    except (WireError, struct.error):
        return None  # a question we cannot read is not ours
    if got_type != qtype or got_class != _CLASS_IN or asked != _key(name):
        return None
    if flags & 0x0200:
        return Reply(rcode, True, ())
    offset += _QUESTION_FIXED.size
    try:
        records = _read_answer(packet, offset, ancount)
    except struct.error:
        raise WireError("answer section cut short") from None
    return Reply(rcode, False, records)


def _key(name: str) -> str:
    return name.rstrip(".").lower()


def _read_answer(packet: bytes, offset: int, count: int) -> tuple[Record, ...]:
    records: list[Record] = []
    end = len(packet)
    for _ in range(count):
        owner, offset = _read_name(packet, offset)
        rtype, rclass, ttl, length = _RR_FIXED.unpack_from(packet, offset)
        offset += _RR_FIXED.size
        rdata_end = offset + length
        if rdata_end > end:
            raise WireError("record data runs past the end of the reply")
        if rclass == _CLASS_IN and rtype in _KEPT_TYPES:
            if ttl & _TTL_TOP_BIT:
                ttl = 0
            records.append(Record(owner, rtype, ttl, _rdata(packet, offset, length, rtype)))
        offset = rdata_end
    return tuple(records)


def _rdata(packet: bytes, offset: int, length: int, rtype: int) -> str:
    if rtype == A:
        if length != 4:
            raise WireError("an A record that is not 4 octets")
        return "%d.%d.%d.%d" % tuple(packet[offset : offset + 4])  # noqa: UP031 -- fastest
    if rtype == AAAA:
        if length != 16:
            raise WireError("an AAAA record that is not 16 octets")
        return str(ipaddress.IPv6Address(packet[offset : offset + 16]))
    target, after = _read_name(packet, offset)
    if after != offset + length:
        raise WireError("a name in record data does not fill it")
    return target


def _read_name(packet: bytes, offset: int) -> tuple[str, int]:
    """The lowercase text of the name at ``offset`` and the offset after it.

    Compression pointers must point backwards (so they cannot loop) and are bounded in number.
    """
    labels: list[str] = []
    wire_length = 0
    after = -1
    pointers = 0
    end = len(packet)
    while True:
        if offset >= end:
            raise WireError("name runs past the end of the reply")
        length = packet[offset]
        if length >= 0xC0:
            if offset + 1 >= end:
                raise WireError("compression pointer cut short")
            target = (length & 0x3F) << 8 | packet[offset + 1]
            if after < 0:
                after = offset + 2
            pointers += 1
            if target >= offset or pointers > _MAX_POINTERS:
                raise WireError("compression pointer does not point backwards")
            offset = target
            continue
        if length > 63:
            raise WireError("unknown label type")
        offset += 1
        if length == 0:
            break
        label = packet[offset : offset + length]
        if len(label) != length:
            raise WireError("label runs past the end of the reply")
        wire_length += length + 1
        if wire_length >= _MAX_NAME_WIRE:
            raise WireError("name longer than 255 octets")
        labels.append(_label_text(label))
        offset += length
    return ".".join(labels), after if after >= 0 else offset


def _label_text(label: bytes) -> str:
    if _PLAIN.issuperset(label):
        return label.decode("ascii").lower()
    parts: list[str] = []
    for byte in label.lower():
        if byte in _PLAIN:
            parts.append(chr(byte))
        elif byte in _ESCAPED:
            parts.append("\\" + chr(byte))
        else:
            parts.append(f"\\{byte:03d}")
    return "".join(parts)


def chain(reply: Reply, name: str, qtype: int) -> tuple[tuple[Record, ...], int] | None:
    """The records of type ``qtype`` that answer ``name``, following CNAMEs, and the
    smallest TTL along the way; None when the answer has no such records."""
    current = _key(name)
    smallest = _TTL_TOP_BIT
    for _ in range(MAX_CHAIN):
        found = tuple(r for r in reply.answer if r.rtype == qtype and r.owner == current)
        if found:
            return found, min(smallest, *(r.ttl for r in found))
        if qtype == CNAME:
            return None
        link = [r for r in reply.answer if r.rtype == CNAME and r.owner == current]
        if not link:
            return None
        smallest = min(smallest, *(r.ttl for r in link))
        current = link[0].value
    return None
