"""A tiny authoritative DNS server on 127.0.0.1 for resolver tests (dnslib, one thread).

It answers from a zone held in memory and can misbehave on purpose per name: stay silent
(timeouts), answer with garbage bytes, or fail with SERVFAIL. Every query is recorded so tests
can count what reached the wire. It only ever binds to loopback.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

from dnslib import QTYPE, RCODE, RR, DNSRecord


@dataclass
class Behaviour:
    """Names the server treats specially: ``name`` for every query type, ``name/AAAA`` for one."""

    silent: set[str] = field(default_factory=set)
    garbage: set[str] = field(default_factory=set)
    truncated_record: set[str] = field(default_factory=set)
    servfail: set[str] = field(default_factory=set)


class LoopbackDnsServer:
    """Serve ``zone`` (dnslib zone-file lines) on an ephemeral UDP port of 127.0.0.1."""

    def __init__(self, zone: Iterable[str] = ()) -> None:
        self.behaviour = Behaviour()
        self.queries: list[tuple[str, str]] = []
        self._records: list[RR] = []
        self._lock = threading.Lock()
        self.set_zone(zone)
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._socket.bind(("127.0.0.1", 0))
        self._socket.settimeout(0.05)
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="loopback-dns", daemon=True)

    @property
    def address(self) -> str:
        host, port = self._socket.getsockname()
        return f"{host}:{port}"

    def set_zone(self, zone: Iterable[str]) -> None:
        records = [rr for line in zone for rr in RR.fromZone(line)]
        with self._lock:
            self._records = records

    def query_count(self, name: str, qtype: str | None = None) -> int:
        with self._lock:
            return sum(1 for n, t in self.queries if n == name and qtype in (None, t))

    def start(self) -> LoopbackDnsServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=5)
        self._socket.close()

    def _serve(self) -> None:
        while not self._stopping.is_set():
            try:
                data, client = self._socket.recvfrom(4096)
            except TimeoutError:
                continue
            except OSError:
                return
            reply = self._reply(data)
            if reply is not None:
                self._socket.sendto(reply, client)

    def _reply(self, data: bytes) -> bytes | None:
        request = DNSRecord.parse(data)
        name = str(request.q.qname).rstrip(".").lower()
        qtype = QTYPE[request.q.qtype]
        with self._lock:
            self.queries.append((name, qtype))
            records = list(self._records)
        keys = {name, f"{name}/{qtype}"}
        if keys & self.behaviour.silent:
            return None
        if keys & self.behaviour.garbage:
            # The right transaction id, then bytes that are not a DNS message.
            return data[:2] + b"\x81\x80\xff\xffnot a dns message"
        reply = request.reply()
        if keys & self.behaviour.servfail:
            reply.header.rcode = RCODE.SERVFAIL
            return reply.pack()
        owned = [rr for rr in records if str(rr.rname).rstrip(".").lower() == name]
        if not owned:
            reply.header.rcode = RCODE.NXDOMAIN
            return reply.pack()
        for rr in owned:
            if rr.rtype == request.q.qtype or QTYPE[rr.rtype] == "CNAME":
                reply.add_answer(rr)
        self._follow_cname(reply, records, request.q.qtype)
        packed = reply.pack()
        if keys & self.behaviour.truncated_record and reply.rr:
            # Claim more answer bytes than we send: a record cut off mid-rdata.
            return packed[:-2]
        return packed

    @staticmethod
    def _follow_cname(reply: DNSRecord, records: list[RR], qtype: int) -> None:
        seen: set[str] = set()
        while reply.rr and QTYPE[reply.rr[-1].rtype] == "CNAME":
            target = str(reply.rr[-1].rdata.label).rstrip(".").lower()
            if target in seen:
                return
            seen.add(target)
            for rr in records:
                if str(rr.rname).rstrip(".").lower() == target and (
                    rr.rtype == qtype or QTYPE[rr.rtype] == "CNAME"
                ):
                    reply.add_answer(rr)
