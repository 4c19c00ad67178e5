"""The facts DNS gives keep their host's name, an address literal stays its own address set,
and a lookup that fails says what failed, in words an operator reads in ``origins explain``."""

from __future__ import annotations

import pytest
from test_origin_dns_evidence import _first, _source, silent_nameserver, web, world

from courtier.origins.dns_evidence import DnsEvidenceSource, DnsFacts
from courtier.simweb import SimWeb, SiteKind, World

__all__ = ["silent_nameserver", "web", "world"]  # the fixtures, shared with that module


async def test_an_address_literal_is_its_own_site_with_its_ptr_names(
    web: SimWeb, world: World
) -> None:
    tenant = world.sites[_first(world, SiteKind.CNAME_TENANT)]
    address = web.network.address_of(tenant.slots[0])
    facts = await _source(web).lookup(address)
    assert facts == DnsFacts(address, (), (address,), {address: ("web1.platform-a.test",)}, 300.0)


async def test_an_address_literal_without_a_ptr_name_has_no_ptr_entry(web: SimWeb) -> None:
    facts = await _source(web).lookup("192.0.2.77")
    assert facts == DnsFacts("192.0.2.77", (), ("192.0.2.77",), {}, 300.0)


async def test_a_host_written_with_capitals_and_a_final_dot_has_the_same_facts(
    web: SimWeb, world: World
) -> None:
    host = _first(world, SiteKind.CNAME_TENANT)
    source = _source(web)
    plain = await source.lookup(host)
    written = await source.lookup(host.upper() + ".")
    assert written.host == host.upper() + "."  # the caller's name, as asked
    assert (written.cname_chain, written.addresses, written.ptr) == (
        plain.cname_chain,
        plain.addresses,
        plain.ptr,
    )
    # The second answer comes from the cache: its TTL is what is left of it, never more.
    assert 299.0 < written.ttl <= plain.ttl <= 300.0


async def test_a_failed_lookup_keeps_the_host_and_says_what_failed(
    web: SimWeb, silent_nameserver: str
) -> None:
    missing = await _source(web).lookup("no-such-site.test")
    assert missing == DnsFacts("no-such-site.test", error="nxdomain: the name does not exist")
    silent = await DnsEvidenceSource(silent_nameserver, timeout=0.2).lookup("anything.test")
    assert silent == DnsFacts("anything.test", error="timeout: no DNS answer in time")


def test_one_lookup_at_a_time_is_a_valid_limit_and_no_timeout_is_not() -> None:
    DnsEvidenceSource("127.0.0.1:53", concurrency=1)
    with pytest.raises(ValueError, match="concurrency must be >= 1 and timeout > 0"):
        DnsEvidenceSource("127.0.0.1:53", timeout=0)
