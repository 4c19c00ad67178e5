"""DNS evidence from hand-made replies (a fake client, no sockets): IPv6 addresses beside the
IPv4 ones, the TTL left of cached answers, failures that raise nothing, and the answers the
guard's resolver already holds asked for again by nobody."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import SimpleNamespace

import pytest

from courtier.net import dns_wire, resolve
from courtier.net.dns_client import CachedReply, QueryError
from courtier.net.dns_wire import AAAA, CNAME, NOERROR, NXDOMAIN, PTR, A, Record, Reply
from courtier.origins.dns_evidence import DnsEvidenceSource, DnsFacts

SERVFAIL = 2
Outcome = CachedReply | QueryError


def reply(*records: tuple[str, int, int, str], rcode: int = NOERROR) -> Reply:
    return Reply(rcode, False, tuple(Record(*r) for r in records))


def ptr_name(address: str) -> str:
    return dns_wire.reverse_name(address)


class FakeClient:
    """Answers from a table; ``cache`` holds the answers a resolver already has at hand."""

    def __init__(
        self,
        answers: Mapping[tuple[str, int], Reply | QueryError],
        cache: Mapping[tuple[str, int], CachedReply] | None = None,
        age: float = 0.0,
    ) -> None:
        self.answers = dict(answers)
        self.cache = dict(cache or {})
        self.age = age
        self.asked: list[tuple[str, int]] = []

    def cached(self, name: str, qtype: int) -> CachedReply | None:
        return self.cache.get((name, qtype))

    async def ask(self, questions: Sequence[tuple[str, int]]) -> list[Outcome]:
        outcomes: list[Outcome] = []
        for question in questions:
            self.asked.append(question)
            found = self.answers.get(question, reply(rcode=NXDOMAIN))
            outcomes.append(
                found if isinstance(found, QueryError) else CachedReply(found, self.age)
            )
        return outcomes


def source(client: FakeClient) -> DnsEvidenceSource:
    return DnsEvidenceSource(None, resolver=SimpleNamespace(client=client))  # type: ignore[arg-type]


async def test_ipv6_addresses_join_the_ipv4_ones_with_the_smallest_ttl() -> None:
    client = FakeClient(
        {
            ("shop.test", A): reply(
                ("shop.test", CNAME, 600, "edge.host.test"), ("edge.host.test", A, 900, "192.0.2.1")
            ),
            ("shop.test", AAAA): reply(
                ("shop.test", CNAME, 600, "edge.host.test"),
                ("edge.host.test", AAAA, 120, "2001:db8::1"),
            ),
            (ptr_name("192.0.2.1"), PTR): reply(
                (ptr_name("192.0.2.1"), PTR, 3600, "web1.host.test")
            ),
        }
    )
    facts = await source(client).lookup("shop.test")
    assert facts == DnsFacts(
        "shop.test",
        ("edge.host.test",),
        ("192.0.2.1", "2001:db8::1"),
        {"192.0.2.1": ("web1.host.test",)},
        120.0,
    )


async def test_an_empty_or_failed_ipv6_answer_leaves_the_ipv4_facts_as_they_are() -> None:
    a = reply(("shop.test", A, 600, "192.0.2.1"))
    for aaaa in (reply(), reply(rcode=SERVFAIL), QueryError("timeout", "no answer")):
        client = FakeClient({("shop.test", A): a, ("shop.test", AAAA): aaaa})
        facts = await source(client).lookup("shop.test")
        assert facts == DnsFacts("shop.test", (), ("192.0.2.1",), {}, 600.0), aaaa


async def test_a_cached_answer_counts_only_the_ttl_left_of_it() -> None:
    client = FakeClient(
        {
            ("shop.test", A): reply(("shop.test", A, 300, "192.0.2.1")),
            (ptr_name("192.0.2.7"), PTR): reply(
                (ptr_name("192.0.2.7"), PTR, 500, "web7.host.test")
            ),
        },
        age=100.0,
    )
    dns = source(client)
    assert (await dns.lookup("shop.test")).ttl == 200.0
    literal = await dns.lookup("192.0.2.7")
    assert literal == DnsFacts(
        "192.0.2.7", (), ("192.0.2.7",), {"192.0.2.7": ("web7.host.test",)}, 400.0
    )


async def test_a_name_with_no_address_is_an_error_naming_its_chain() -> None:
    client = FakeClient({("gone.test", A): reply(("gone.test", CNAME, 60, "old.host.test"))})
    assert await source(client).lookup("gone.test") == DnsFacts(
        "gone.test", ("old.host.test",), error="no-address: no A or AAAA records"
    )


async def test_failed_lookups_are_errors_of_at_most_300_characters_never_exceptions() -> None:
    client = FakeClient(
        {
            ("slow.test", A): QueryError("timeout", "no answer"),
            ("odd.test", A): QueryError("dns-error", "x" * 400),
            ("shop.test", A): reply(("shop.test", A, 600, "192.0.2.1")),
            (ptr_name("192.0.2.1"), PTR): QueryError("timeout", "no answer"),
        }
    )
    dns = source(client)
    assert (await dns.lookup("slow.test")).error == "timeout: no DNS answer in time"
    assert (await dns.lookup("odd.test")).error == ("dns-error: " + "x" * 400)[:300]
    assert await dns.lookup("shop.test") == DnsFacts("shop.test", (), ("192.0.2.1",), {}, 600.0)


async def test_a_record_that_is_no_address_gets_no_ptr_name_and_raises_nothing() -> None:
    client = FakeClient({("shop.test", A): reply(("shop.test", A, 600, "not-an-address"))})
    facts = await source(client).lookup("shop.test")
    assert facts == DnsFacts("shop.test", (), ("not-an-address",), {}, 600.0)
    assert client.asked == [("shop.test", A), ("shop.test", AAAA)]


async def test_a_site_the_guard_resolved_costs_only_its_ptr_question() -> None:
    """The guard's resolver holds the A and AAAA answers (its cache is keyed by the name as
    it asks: lower case, no trailing dot): inference asks for the PTR name alone."""
    at_hand = {
        ("shop.example.tax", A): CachedReply(reply(("shop.example.tax", A, 600, "192.0.2.1")), 0),
        ("shop.example.tax", AAAA): CachedReply(reply(), 0),
    }
    client = FakeClient({}, cache=at_hand)
    facts = await source(client).lookup("Shop.Example.TAX.")
    assert facts.addresses == ("192.0.2.1",)
    assert client.asked == [(ptr_name("192.0.2.1"), PTR)]


def test_an_impossible_limit_or_a_missing_resolver_is_refused_saying_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(ValueError, match=r"^concurrency must be >= 1 and timeout > 0$"):
        DnsEvidenceSource("127.0.0.1:53", timeout=0)
    monkeypatch.setattr(resolve, "system_nameservers", lambda: ((), "no nameserver line"))
    with pytest.raises(ValueError, match=r"^no DNS resolver: no nameserver line$"):
        DnsEvidenceSource(None)
