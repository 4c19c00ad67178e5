"""A loopback DNS server answering like the simulated web, plus CNAMEs the tests add.

Used to put sites behind the simulated CDN (``name CNAME cdn.simcdn.test``) without changing
the world: every other name is answered by the simulated web's own answerer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import cast

from dnslib import CNAME, QTYPE, RR, DNSRecord

from courtier.simweb.dns import DnsAnswerer


class OverlayDns(asyncio.DatagramProtocol):
    def __init__(self, answerer: DnsAnswerer, aliases: Mapping[str, str]) -> None:
        self.answerer = answerer
        self.aliases = dict(aliases)
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)

    def datagram_received(self, data: bytes, addr: tuple[str | object, int]) -> None:
        request = DNSRecord.parse(data)
        name = str(request.q.qname).rstrip(".").lower()
        target = self.aliases.get(name)
        if target is None or request.q.qtype == QTYPE.PTR:
            reply = self.answerer.reply_to(data)
        else:
            answer = request.reply()
            answer.add_answer(RR(name, QTYPE.CNAME, rdata=CNAME(target), ttl=300))
            answer.header.rcode, records = self.answerer.answer(target, request.q.qtype)
            for record in records:
                answer.add_answer(record)
            reply = bytes(answer.pack())
        if reply is not None and self.transport is not None:
            self.transport.sendto(reply, addr)


async def start_overlay(
    answerer: DnsAnswerer, aliases: Mapping[str, str]
) -> tuple[asyncio.DatagramTransport, str]:
    loop = asyncio.get_running_loop()
    transport, _ = await loop.create_datagram_endpoint(
        lambda: OverlayDns(answerer, aliases), local_addr=("127.0.0.1", 0)
    )
    host, port = transport.get_extra_info("sockname")[:2]
    return transport, f"{host}:{port}"
