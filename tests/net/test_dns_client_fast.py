"""The stub resolver's exchanges, against scripted nameservers on 127.0.0.1 (never elsewhere)."""

from __future__ import annotations

import asyncio
import errno
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import cast

import pytest
from dnslib import QTYPE, RR, A, DNSRecord
from loopback_dns import LoopbackDnsServer

from courtier.net import dns_client, dns_wire
from courtier.net.dns_client import DnsClient, QueryError
from courtier.net.resolve import DnsResolver
from courtier.origins.dns_evidence import DnsEvidenceSource

Script = Callable[[DNSRecord], list[bytes]]


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def answer(request: DNSRecord, address: str = "127.0.0.10", ttl: int = 300) -> bytes:
    reply = request.reply()
    if request.q.qtype == QTYPE.A:
        reply.add_answer(RR(request.q.qname, QTYPE.A, rdata=A(address), ttl=ttl))
    return bytes(reply.pack())


class ScriptedServer(asyncio.DatagramProtocol):
    """Answers each UDP question with whatever ``script`` returns; serves TCP on the same port."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.questions: list[tuple[str, str]] = []
        self.sources: set[int] = set()
        self.tcp_questions = 0
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)

    def datagram_received(self, data: bytes, addr: tuple[str | object, int]) -> None:
        request = DNSRecord.parse(data)
        self.questions.append((str(request.q.qname).rstrip("."), QTYPE[request.q.qtype]))
        self.sources.add(addr[1])
        assert self.transport is not None
        for packet in self.script(request):
            self.transport.sendto(packet, addr)

    async def serve_tcp(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        length = int.from_bytes(await reader.readexactly(2), "big")
        request = DNSRecord.parse(await reader.readexactly(length))
        self.tcp_questions += 1
        packet = answer(request, "127.0.0.77")
        writer.write(len(packet).to_bytes(2, "big") + packet)
        await writer.drain()
        writer.close()


Start = Callable[[Script], Awaitable[tuple[ScriptedServer, str]]]
PORT_ATTEMPTS = 20


@pytest.fixture
async def scripted() -> AsyncIterator[Start]:
    loop = asyncio.get_running_loop()
    cleanup: list[Callable[[], None]] = []

    async def start(script: Script) -> tuple[ScriptedServer, str]:
        server = ScriptedServer(script)
        # The kernel picks a UDP port that is free for UDP; a TCP socket elsewhere on the
        # machine (another test's connection, another process) may hold the same number.
        # Then take another UDP port: a collision is about the machine, not the client.
        for attempt in range(PORT_ATTEMPTS):
            transport, _ = await loop.create_datagram_endpoint(
                lambda: server, local_addr=("127.0.0.1", 0)
            )
            port = transport.get_extra_info("sockname")[1]
            try:
                tcp = await asyncio.start_server(server.serve_tcp, "127.0.0.1", port)
            except OSError as exc:
                transport.close()
                if exc.errno != errno.EADDRINUSE or attempt == PORT_ATTEMPTS - 1:
                    raise
                continue
            cleanup.extend([transport.close, tcp.close])
            return server, f"127.0.0.1:{port}"
        raise AssertionError("unreachable")

    yield start
    for close in cleanup:
        close()


def client_for(nameserver: str, **options: object) -> DnsClient:
    host, _, port = nameserver.partition(":")
    return DnsClient([(host, int(port))], **options)  # type: ignore[arg-type]


async def test_many_askers_of_one_question_share_one_exchange(scripted: Start) -> None:
    server, address = await scripted(lambda request: [answer(request)])
    client = client_for(address)
    results = await asyncio.gather(*(client.query("one.test", dns_wire.A) for _ in range(50)))
    assert {r.reply.answer[0].value for r in results} == {"127.0.0.10"}
    assert server.questions == [("one.test", "A")]


async def test_a_forged_or_stray_datagram_does_not_end_the_wait(scripted: Start) -> None:
    def script(request: DNSRecord) -> list[bytes]:
        wrong_question = DNSRecord.parse(request.pack()).reply()  # a copy: reply() shares q
        wrong_question.q.qname = "elsewhere.test"
        wrong_question.add_answer(RR("elsewhere.test", QTYPE.A, rdata=A("10.0.0.1"), ttl=60))
        wrong_id = DNSRecord.parse(answer(request, "10.0.0.2"))
        wrong_id.header.id = (request.header.id + 1) % 65536
        garbage = bytes(request.pack()[:2]) + b"\x81\x80garbage"
        return [bytes(wrong_question.pack()), bytes(wrong_id.pack()), garbage, answer(request)]

    _, address = await scripted(script)
    result = await client_for(address).query("real.test", dns_wire.A)
    assert [r.value for r in result.reply.answer] == ["127.0.0.10"]


async def test_a_truncated_reply_is_asked_again_over_tcp(scripted: Start) -> None:
    def script(request: DNSRecord) -> list[bytes]:
        reply = request.reply()
        reply.header.tc = 1
        return [bytes(reply.pack())]

    server, address = await scripted(script)
    result = await client_for(address).query("big.test", dns_wire.A)
    assert [r.value for r in result.reply.answer] == ["127.0.0.77"]
    assert server.tcp_questions == 1


async def test_a_lost_datagram_is_sent_again_within_the_timeout(scripted: Start) -> None:
    seen: list[int] = []

    def script(request: DNSRecord) -> list[bytes]:
        seen.append(request.header.id)
        return [] if len(seen) == 1 else [answer(request)]

    _, address = await scripted(script)
    result = await client_for(address, timeout=0.6).query("lossy.test", dns_wire.A)
    assert result.reply.answer[0].value == "127.0.0.10"
    assert len(seen) == 2


async def test_a_failing_nameserver_gives_way_to_the_next(scripted: Start) -> None:
    def failing(request: DNSRecord) -> list[bytes]:
        reply = request.reply()
        reply.header.rcode = 2  # SERVFAIL
        return [bytes(reply.pack())]

    bad, bad_address = await scripted(failing)
    good, good_address = await scripted(lambda request: [answer(request)])
    servers = [(a.partition(":")[0], int(a.partition(":")[2])) for a in (bad_address, good_address)]
    result = await DnsClient(servers).query("site.test", dns_wire.A)
    assert result.reply.answer[0].value == "127.0.0.10"
    assert len(bad.questions) == 1 and len(good.questions) == 1
    with pytest.raises(QueryError) as caught:
        await DnsClient(servers[:1]).query("site.test", dns_wire.A)
    assert caught.value.code == "dns-error"


async def test_answers_are_cached_for_their_ttl_and_report_their_age(scripted: Start) -> None:
    server, address = await scripted(lambda request: [answer(request, ttl=60)])
    clock = FakeClock()
    client = client_for(address, clock=clock)
    await client.query("ttl.test", dns_wire.A)
    clock.now += 59.0
    hit = await client.query("ttl.test", dns_wire.A)
    assert hit.age == 59.0 and len(server.questions) == 1
    clock.now += 1.0
    fresh = await client.query("ttl.test", dns_wire.A)
    assert fresh.age == 0.0 and len(server.questions) == 2
    await client.query("ttl.test", dns_wire.A, fresh=True)
    assert len(server.questions) == 3


async def test_ttls_are_capped_and_zero_is_not_cached(scripted: Start) -> None:
    server, address = await scripted(
        lambda request: [answer(request, ttl=int(str(request.q.qname)[1]))]
    )
    clock = FakeClock()
    client = client_for(address, clock=clock, max_ttl=5.0)
    await client.query("t9.test", dns_wire.A)
    await client.query("t0.test", dns_wire.A)
    await client.query("t0.test", dns_wire.A)
    assert server.questions.count(("t0.test", "A")) == 2
    clock.now += 5.0
    await client.query("t9.test", dns_wire.A)
    assert server.questions.count(("t9.test", "A")) == 2


async def test_the_cache_is_bounded(scripted: Start) -> None:
    server, address = await scripted(lambda request: [answer(request)])
    client = client_for(address, max_entries=2, clock=FakeClock())
    for name in ("a.test", "b.test", "c.test"):
        await client.query(name, dns_wire.A)
    assert client.cached("a.test", dns_wire.A) is None
    assert client.cached("c.test", dns_wire.A) is not None
    await client.query("a.test", dns_wire.A)
    assert server.questions.count(("a.test", "A")) == 2


async def test_sockets_change_and_none_outlives_its_questions(
    scripted: Start, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dns_client, "QUERIES_PER_SOCKET", 4)
    server, address = await scripted(lambda request: [answer(request)])
    client = client_for(address)
    names = [f"n{i}.test" for i in range(12)]
    await asyncio.gather(*(client.query(name, dns_wire.A) for name in names))
    assert len(server.sources) >= 3  # 12 questions, at most 4 per source port
    assert all(s.sock.fileno() == -1 for s in client._sockets.values())


async def test_a_cancelled_asker_leaves_no_socket_behind(scripted: Start) -> None:
    _, address = await scripted(lambda request: [])
    client = client_for(address, timeout=5.0)
    task = asyncio.ensure_future(client.query("silent.test", dns_wire.A))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert all(s.sock.fileno() == -1 for s in client._sockets.values())


async def test_an_unaskable_name_is_invalid_host_and_never_sent(scripted: Start) -> None:
    server, address = await scripted(lambda request: [answer(request)])
    with pytest.raises(QueryError) as caught:
        await client_for(address).query("bad name.test", dns_wire.A)
    assert caught.value.code == "invalid-host"
    assert server.questions == []


async def test_no_configured_nameserver_is_a_dns_error() -> None:
    client = DnsClient([], config_error="resolv.conf is empty")
    with pytest.raises(QueryError) as caught:
        await client.query("site.test", dns_wire.A)
    assert caught.value.code == "dns-error" and "resolv.conf is empty" in str(caught.value)


# -- sharing between the guard's resolver and origin inference ---------------------------------


async def test_inference_then_guard_asks_each_question_once(dns_server: LoopbackDnsServer) -> None:
    resolver = DnsResolver(dns_server.address, timeout=2.0)
    evidence = DnsEvidenceSource(None, resolver=resolver)
    facts = await evidence.lookup("alias.test")
    assert facts.cname_chain == ("site.test",)
    assert await resolver.resolve("alias.test") == ("127.0.0.10", "::1")
    assert dns_server.query_count("alias.test", "A") == 1
    assert dns_server.query_count("alias.test", "AAAA") == 1


async def test_guard_then_inference_asks_only_for_ptr_names(dns_server: LoopbackDnsServer) -> None:
    resolver = DnsResolver(dns_server.address, timeout=2.0)
    await resolver.resolve("site.test")
    facts = await DnsEvidenceSource(None, resolver=resolver).lookup("site.test")
    assert facts.addresses == ("127.0.0.10", "::1")
    assert [q for q in dns_server.queries if q[1] in ("A", "AAAA")] == [
        ("site.test", "A"),
        ("site.test", "AAAA"),
    ]


async def test_the_guard_counts_down_the_ttl_of_a_shared_answer(
    dns_server: LoopbackDnsServer,
) -> None:
    clock = FakeClock()
    resolver = DnsResolver(dns_server.address, timeout=2.0, clock=clock)
    await DnsEvidenceSource(None, resolver=resolver).lookup("v4only.test")  # A TTL 60
    clock.now += 50.0
    await resolver.resolve("v4only.test")  # from the shared answer: 10 s left
    clock.now += 10.0
    await resolver.resolve("v4only.test")
    assert dns_server.query_count("v4only.test", "A") == 2


def test_udp_sockets_are_not_left_open_by_a_finished_loop(dns_server: LoopbackDnsServer) -> None:
    resolver = DnsResolver(dns_server.address, timeout=2.0)
    asyncio.run(resolver.resolve("site.test"))
    assert all(s.sock.fileno() == -1 for s in resolver.client._sockets.values())
    assert all(
        s.family in (socket.AF_INET, socket.AF_INET6) for s in resolver.client._sockets.values()
    )
