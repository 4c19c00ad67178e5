"""The simulated web's DNS server (UDP, dnslib): A, AAAA, CNAME chains and PTR for the world.

Rules:
- Names are matched case-insensitively, with or without the trailing dot.
- A CNAME chain is followed inside the world and every link is put in the answer section,
  then the addresses of the last name (the way recursive resolvers answer).
- AAAA and other types of a known name answer NOERROR with no address (the world is IPv4).
- A name the world does not know is NXDOMAIN; so is a PTR for an address without a name.
- The rebinding name answers its in-net address to the first A query and the canary to every
  later one, with TTL 0 so nothing caches the first answer.
- Garbage never stops the server: an unparsable packet with a readable header gets FORMERR,
  anything shorter is dropped.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from typing import cast

from dnslib import CNAME as CNAME_RDATA
from dnslib import PTR, QTYPE, RCODE, RR, A, DNSError, DNSHeader, DNSRecord

from courtier.simweb.network import Network
from courtier.simweb.world import World

log = logging.getLogger(__name__)

TTL = 300
REBIND_TTL = 0
MAX_CHAIN = 8
_REVERSE_SUFFIX = ".in-addr.arpa"


class DnsAnswerer:
    """Builds replies from the world's tables; holds the rebinding counters."""

    def __init__(self, world: World, network: Network) -> None:
        self.tables = world.dns
        self.network = network
        self._rebind_answers: dict[str, int] = {}
        self._known = (
            set(self.tables.a_records) | set(self.tables.cnames) | set(self.tables.rebinding)
        )

    def reply_to(self, packet: bytes) -> bytes | None:
        try:
            request = DNSRecord.parse(packet)
        except (DNSError, struct.error, UnicodeError, ValueError, IndexError):
            return _format_error(packet)
        if not request.questions or request.header.qr:
            return _format_error(packet)
        reply = request.reply()
        question = request.q
        name = str(question.qname).rstrip(".").lower()
        rcode, records = self.answer(name, question.qtype)
        reply.header.rcode = rcode
        for record in records:
            reply.add_answer(record)
        return bytes(reply.pack())

    def answer(self, name: str, qtype: int) -> tuple[int, list[RR]]:
        if qtype == QTYPE.PTR:
            return self._ptr(name)
        if name not in self._known:
            return RCODE.NXDOMAIN, []
        records: list[RR] = []
        for _ in range(MAX_CHAIN):
            target = self.tables.cnames.get(name)
            if target is None:
                break
            records.append(RR(name, QTYPE.CNAME, rdata=CNAME_RDATA(target), ttl=TTL))
            name = target
        if qtype in (QTYPE.A, QTYPE.ANY):
            records.extend(self._addresses(name))
        # Any other type (AAAA included: the world is IPv4-only) gets the chain and no data.
        return RCODE.NOERROR, records

    def _addresses(self, name: str) -> list[RR]:
        rebinding = self.tables.rebinding.get(name)
        if rebinding is not None:
            count = self._rebind_answers.get(name, 0)
            self._rebind_answers[name] = count + 1
            slot = rebinding[0] if count == 0 else rebinding[1]
            return [RR(name, QTYPE.A, rdata=A(self.network.address_of(slot)), ttl=REBIND_TTL)]
        slots = self.tables.a_records.get(name, ())
        return [RR(name, QTYPE.A, rdata=A(self.network.address_of(s)), ttl=TTL) for s in slots]

    def _ptr(self, name: str) -> tuple[int, list[RR]]:
        if not name.endswith(_REVERSE_SUFFIX):
            return RCODE.NXDOMAIN, []
        octets = name.removesuffix(_REVERSE_SUFFIX).split(".")
        slot = self.network.slot_of(".".join(reversed(octets))) if len(octets) == 4 else None
        target = None if slot is None else self.tables.ptr_names.get(slot)
        if target is None:
            return RCODE.NXDOMAIN, []
        return RCODE.NOERROR, [RR(name, QTYPE.PTR, rdata=PTR(target), ttl=TTL)]


def _format_error(packet: bytes) -> bytes | None:
    if len(packet) < 12:
        return None
    (ident,) = struct.unpack("!H", packet[:2])
    return bytes(DNSRecord(DNSHeader(id=ident, qr=1, rcode=RCODE.FORMERR)).pack())


class DnsProtocol(asyncio.DatagramProtocol):
    def __init__(self, answerer: DnsAnswerer) -> None:
        self.answerer = answerer
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # The selector loop's datagram transport does not subclass DatagramTransport.
        self.transport = cast(asyncio.DatagramTransport, transport)

    def datagram_received(self, data: bytes, addr: tuple[str | object, int]) -> None:
        try:
            reply = self.answerer.reply_to(data)
        except Exception:  # a DNS server must outlive any packet; log and drop it
            log.exception("simweb DNS: dropped a packet it could not answer")
            return
        if reply is not None and self.transport is not None:
            self.transport.sendto(reply, addr)


async def start_dns(answerer: DnsAnswerer, host: str, port: int = 0) -> asyncio.DatagramTransport:
    loop = asyncio.get_running_loop()
    transport, _ = await loop.create_datagram_endpoint(
        lambda: DnsProtocol(answerer), local_addr=(host, port)
    )
    return transport
