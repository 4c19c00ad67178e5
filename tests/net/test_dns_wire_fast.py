"""The DNS wire format of the stub resolver, against replies built by dnslib."""

from __future__ import annotations

import random

import pytest
from dnslib import AAAA as AAAA_RDATA
from dnslib import CNAME as CNAME_RDATA
from dnslib import PTR as PTR_RDATA
from dnslib import QTYPE, RCODE, RR, TXT, A, DNSRecord

from courtier.net import dns_wire
from courtier.net.dns_wire import WireError, chain, encode_query, parse_reply


def reply_to(query: bytes, *records: RR, rcode: int = RCODE.NOERROR, tc: bool = False) -> bytes:
    reply = DNSRecord.parse(query).reply()
    reply.header.rcode = rcode
    reply.header.tc = int(tc)
    for record in records:
        reply.add_answer(record)
    return bytes(reply.pack())


def test_query_is_a_standard_recursive_question() -> None:
    query = DNSRecord.parse(encode_query(0xBEEF, "Site.Example.test.", dns_wire.AAAA))
    assert query.header.id == 0xBEEF
    assert query.header.rd == 1 and query.header.qr == 0
    assert str(query.q.qname) == "Site.Example.test."
    assert query.q.qtype == QTYPE.AAAA
    assert not query.rr and not query.ar  # no EDNS, like dnspython's resolver


@pytest.mark.parametrize(
    "name", ["", "a..test", "a" * 64 + ".test", "caf\u00e9.test", "a b.test", "a\\.b.test"]
)
def test_a_name_that_is_not_a_plain_host_name_is_refused(name: str) -> None:
    with pytest.raises(WireError):
        encode_query(1, name, dns_wire.A)


def test_a_name_over_255_octets_is_refused() -> None:
    with pytest.raises(WireError):
        encode_query(1, ".".join(["a" * 60] * 5), dns_wire.A)


def test_cname_chain_and_addresses_are_read_with_the_smallest_ttl() -> None:
    query = encode_query(7, "www.shop.test", dns_wire.A)
    packet = reply_to(
        query,
        RR("www.shop.test", QTYPE.CNAME, rdata=CNAME_RDATA("edge.cdn.test"), ttl=30),
        RR("edge.cdn.test", QTYPE.A, rdata=A("192.0.2.1"), ttl=300),
        RR("edge.cdn.test", QTYPE.A, rdata=A("192.0.2.2"), ttl=200),
    )
    reply = parse_reply(packet, 7, "WWW.shop.test.", dns_wire.A)
    assert reply is not None and reply.rcode == dns_wire.NOERROR and not reply.truncated
    found = chain(reply, "www.shop.test", dns_wire.A)
    assert found is not None
    records, ttl = found
    assert [r.value for r in records] == ["192.0.2.1", "192.0.2.2"]
    assert ttl == 30


def test_ipv6_addresses_come_back_in_canonical_text() -> None:
    query = encode_query(9, "v6.test", dns_wire.AAAA)
    packet = reply_to(query, RR("v6.test", QTYPE.AAAA, rdata=AAAA_RDATA("2001:db8:0:0::1"), ttl=5))
    reply = parse_reply(packet, 9, "v6.test", dns_wire.AAAA)
    assert reply is not None
    assert [r.value for r in reply.answer] == ["2001:db8::1"]


def test_ptr_names_are_lowercase_without_trailing_dot() -> None:
    name = dns_wire.reverse_name("192.0.2.7")
    assert name == "7.2.0.192.in-addr.arpa"
    query = encode_query(3, name, dns_wire.PTR)
    packet = reply_to(query, RR(name, QTYPE.PTR, rdata=PTR_RDATA("Web1.Platform.test."), ttl=60))
    reply = parse_reply(packet, 3, name, dns_wire.PTR)
    assert reply is not None
    assert chain(reply, name, dns_wire.PTR) == (
        (dns_wire.Record(name, 12, 60, "web1.platform.test"),),
        60,
    )


def test_other_record_types_are_skipped() -> None:
    query = encode_query(4, "txt.test", dns_wire.A)
    packet = reply_to(query, RR("txt.test", QTYPE.TXT, rdata=TXT("hello"), ttl=60))
    reply = parse_reply(packet, 4, "txt.test", dns_wire.A)
    assert reply is not None and reply.answer == ()
    assert chain(reply, "txt.test", dns_wire.A) is None


@pytest.mark.parametrize(
    ("ident", "name", "qtype"),
    [(8, "site.test", dns_wire.A), (7, "other.test", dns_wire.A), (7, "site.test", dns_wire.AAAA)],
)
def test_a_reply_to_another_question_is_not_ours(ident: int, name: str, qtype: int) -> None:
    query = encode_query(7, "site.test", dns_wire.A)
    packet = reply_to(query, RR("site.test", QTYPE.A, rdata=A("192.0.2.1"), ttl=60))
    assert parse_reply(packet, ident, name, qtype) is None


def test_a_query_echoed_back_is_not_a_reply() -> None:
    query = encode_query(7, "site.test", dns_wire.A)
    assert parse_reply(query, 7, "site.test", dns_wire.A) is None


def test_nxdomain_and_failures_keep_their_rcode() -> None:
    query = encode_query(5, "gone.test", dns_wire.A)
    nx = parse_reply(reply_to(query, rcode=RCODE.NXDOMAIN), 5, "gone.test", dns_wire.A)
    fail = parse_reply(reply_to(query, rcode=RCODE.SERVFAIL), 5, "gone.test", dns_wire.A)
    assert nx is not None and nx.rcode == dns_wire.NXDOMAIN
    assert fail is not None and fail.rcode == 2


def test_a_truncated_reply_carries_no_records() -> None:
    query = encode_query(6, "big.test", dns_wire.A)
    packet = reply_to(query, RR("big.test", QTYPE.A, rdata=A("192.0.2.1"), ttl=60), tc=True)
    reply = parse_reply(packet, 6, "big.test", dns_wire.A)
    assert reply is not None and reply.truncated and reply.answer == ()


def test_a_ttl_with_the_top_bit_set_counts_as_zero() -> None:
    query = encode_query(2, "odd.test", dns_wire.A)
    packet = bytearray(reply_to(query, RR("odd.test", QTYPE.A, rdata=A("192.0.2.1"), ttl=60)))
    ttl_at = len(packet) - 4 - 2 - 4  # rdata, rdlength, then the TTL
    packet[ttl_at : ttl_at + 4] = (0x8000_0001).to_bytes(4, "big")
    reply = parse_reply(bytes(packet), 2, "odd.test", dns_wire.A)
    assert reply is not None and reply.answer[0].ttl == 0


def test_a_compression_pointer_loop_is_an_error_not_a_hang() -> None:
    query = encode_query(1, "a.test", dns_wire.A)
    header = bytearray(query[:12])
    header[2] |= 0x80  # QR
    header[7] = 1  # one answer
    question = query[12:]
    # The answer's owner name is a pointer to itself.
    owner_at = len(header) + len(question)
    looped = (0xC000 | owner_at).to_bytes(2, "big")
    record = looped + bytes((0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 1))
    with pytest.raises(WireError):
        parse_reply(bytes(header) + question + record, 1, "a.test", dns_wire.A)


def test_an_address_record_of_the_wrong_size_is_an_error() -> None:
    query = encode_query(1, "a.test", dns_wire.A)
    good = reply_to(query, RR("a.test", QTYPE.A, rdata=A("192.0.2.1"), ttl=60))
    bad = good[:-6] + b"\x00\x05" + good[-4:] + b"\x00"  # rdlength 5
    with pytest.raises(WireError):
        parse_reply(bad, 1, "a.test", dns_wire.A)


def test_a_cname_loop_ends_without_records() -> None:
    query = encode_query(1, "a.test", dns_wire.A)
    packet = reply_to(
        query,
        RR("a.test", QTYPE.CNAME, rdata=CNAME_RDATA("b.test"), ttl=60),
        RR("b.test", QTYPE.CNAME, rdata=CNAME_RDATA("a.test"), ttl=60),
    )
    reply = parse_reply(packet, 1, "a.test", dns_wire.A)
    assert reply is not None and chain(reply, "a.test", dns_wire.A) is None


def test_damaged_replies_never_raise_anything_but_wire_error() -> None:
    query = encode_query(0x4242, "www.shop.test", dns_wire.A)
    packet = reply_to(
        query,
        RR("www.shop.test", QTYPE.CNAME, rdata=CNAME_RDATA("edge.cdn.test"), ttl=30),
        RR("edge.cdn.test", QTYPE.A, rdata=A("192.0.2.1"), ttl=300),
        RR("edge.cdn.test", QTYPE.AAAA, rdata=AAAA_RDATA("2001:db8::1"), ttl=300),
    )
    rng = random.Random(20261201)
    outcomes = set()
    for _ in range(3000):
        damaged = bytearray(packet)
        if rng.random() < 0.5:
            del damaged[rng.randrange(2, len(damaged)) :]
        for _ in range(rng.randrange(1, 4)):
            if len(damaged) > 2:
                damaged[rng.randrange(2, len(damaged))] = rng.randrange(256)
        try:
            reply = parse_reply(bytes(damaged), 0x4242, "www.shop.test", dns_wire.A)
        except WireError:
            outcomes.add("error")
            continue
        outcomes.add("none" if reply is None else "reply")
        if reply is not None:
            chain(reply, "www.shop.test", dns_wire.A)
    assert outcomes == {"error", "none", "reply"}
