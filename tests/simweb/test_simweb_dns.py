"""The simulated DNS server answers the world's records and survives garbage."""

from __future__ import annotations

import asyncio

import dns.asyncresolver
import dns.resolver
import pytest
from dnslib import QTYPE, RCODE, DNSRecord

from courtier.simweb import Network, SimWeb, SiteKind, World
from courtier.simweb.dns import DnsAnswerer
from courtier.simweb.world import Behaviour

NET = Network(90, 80)


def _ask(answerer: DnsAnswerer, name: str, qtype: str = "A") -> DNSRecord:
    reply = answerer.reply_to(bytes(DNSRecord.question(name, qtype).pack()))
    assert reply is not None
    return DNSRecord.parse(reply)


def _data(reply: DNSRecord, qtype: int) -> list[str]:
    return [str(rr.rdata) for rr in reply.rr if rr.rtype == qtype]


def test_standalone_site_has_one_a_record(world: World) -> None:
    site = next(s for s in world.sites.values() if s.kind is SiteKind.STANDALONE)
    reply = _ask(DnsAnswerer(world, NET), site.host)
    assert reply.header.rcode == RCODE.NOERROR
    assert _data(reply, QTYPE.A) == [NET.address_of(site.slots[0])]


def test_cname_tenant_answer_carries_the_whole_chain(world: World) -> None:
    site = next(s for s in world.sites.values() if s.kind is SiteKind.CNAME_TENANT)
    reply = _ask(DnsAnswerer(world, NET), site.host)
    assert _data(reply, QTYPE.CNAME) == ["tenants.platform-a.test.", "edge.platform-a.test."]
    assert sorted(_data(reply, QTYPE.A)) == sorted(NET.address_of(s) for s in site.slots)


def test_platform_addresses_have_ptr_names(world: World) -> None:
    site = next(s for s in world.sites.values() if s.kind is SiteKind.CNAME_TENANT)
    answerer = DnsAnswerer(world, NET)
    names = []
    for slot in site.slots:
        reverse = ".".join(reversed(NET.address_of(slot).split("."))) + ".in-addr.arpa"
        names += _data(_ask(answerer, reverse, "PTR"), QTYPE.PTR)
    assert names == ["web1.platform-a.test.", "web2.platform-a.test."]


def test_header_tenant_address_has_no_ptr(world: World) -> None:
    site = next(s for s in world.sites.values() if s.kind is SiteKind.HEADER_TENANT)
    reverse = ".".join(reversed(NET.address_of(site.slots[0]).split("."))) + ".in-addr.arpa"
    assert _ask(DnsAnswerer(world, NET), reverse, "PTR").header.rcode == RCODE.NXDOMAIN


def test_unknown_names_are_nxdomain(world: World) -> None:
    answerer = DnsAnswerer(world, NET)
    for name in ("nowhere.test", "example.com", "test", "1.0.0.127.in-addr.arpa"):
        assert _ask(answerer, name).header.rcode == RCODE.NXDOMAIN, name


def test_names_match_whatever_the_case_and_trailing_dot(world: World) -> None:
    host = world.seed_hosts[-5]
    answerer = DnsAnswerer(world, NET)
    answers = {tuple(_data(_ask(answerer, n), QTYPE.A)) for n in (host, host.upper() + ".")}
    assert len(answers) == 1 and answers != {()}


def test_aaaa_of_a_known_name_is_empty_noerror(world: World) -> None:
    reply = _ask(DnsAnswerer(world, NET), world.seed_hosts[-5], "AAAA")
    assert reply.header.rcode == RCODE.NOERROR and not reply.rr


def test_rebinding_name_answers_in_the_net_once_then_the_canary(world: World) -> None:
    site = world.site_with(Behaviour.REBIND)
    answerer = DnsAnswerer(world, NET)
    first, second, third = (_ask(answerer, site.host) for _ in range(3))
    assert _data(first, QTYPE.A) == [NET.address_of(site.slots[0])]
    assert _data(second, QTYPE.A) == _data(third, QTYPE.A) == [NET.canary_address]
    assert {rr.ttl for r in (first, second) for rr in r.rr} == {0}


def test_canary_alias_resolves_to_the_canary(world: World) -> None:
    site = world.site_with(Behaviour.CANARY_ALIAS)
    assert _data(_ask(DnsAnswerer(world, NET), site.host), QTYPE.A) == [NET.canary_address]


def test_garbage_gets_formerr_or_silence(world: World) -> None:
    answerer = DnsAnswerer(world, NET)
    assert answerer.reply_to(b"") is None
    assert answerer.reply_to(b"\x01\x02garbage") is None
    reply = answerer.reply_to(b"\xab\xcd" + b"\xff" * 30)
    assert reply is not None
    parsed = DNSRecord.parse(reply)
    assert parsed.header.id == 0xABCD and parsed.header.rcode == RCODE.FORMERR


async def test_live_server_survives_garbage_and_answers_dnspython(web: SimWeb) -> None:
    host, port = web.dns_address
    loop = asyncio.get_running_loop()
    transport, _ = await loop.create_datagram_endpoint(
        asyncio.DatagramProtocol, remote_addr=(host, port)
    )
    for junk in (b"", b"\x00", b"\xff" * 512, bytes(range(256))):
        transport.sendto(junk)
    transport.close()
    resolver = dns.asyncresolver.Resolver(configure=False)
    resolver.nameservers, resolver.port = [host], port
    tenant = next(s for s in web.world.sites.values() if s.kind is SiteKind.CNAME_TENANT)
    answer = await resolver.resolve(tenant.host, "A")
    expected = sorted(web.network.address_of(slot) for slot in tenant.slots)
    assert sorted(r.address for r in answer) == expected
    assert answer.canonical_name.to_text() == "edge.platform-a.test."
    with pytest.raises(dns.resolver.NXDOMAIN):
        await resolver.resolve("nowhere.test", "A")
