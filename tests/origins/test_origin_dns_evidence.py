"""DNS evidence from the simulated web's nameserver: chains, addresses, PTR names, failures."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Iterator

import pytest

from courtier.origins.dns_evidence import DnsEvidenceSource
from courtier.simweb import SimWeb, SiteKind, World, WorldParams, build_world


@pytest.fixture(scope="module")
def world() -> World:
    return build_world(WorldParams(seed=5))


@pytest.fixture
async def web(world: World) -> AsyncIterator[SimWeb]:
    async with SimWeb(world) as running:
        yield running


def _source(web: SimWeb) -> DnsEvidenceSource:
    host, port = web.dns_address
    return DnsEvidenceSource(f"{host}:{port}")


def _first(world: World, kind: SiteKind) -> str:
    return next(h for h, s in world.sites.items() if s.kind is kind)


async def test_a_cname_tenant_has_its_chain_addresses_and_ptr_names(
    web: SimWeb, world: World
) -> None:
    host = _first(world, SiteKind.CNAME_TENANT)
    facts = await _source(web).lookup(host)
    assert facts.error is None
    assert facts.cname_chain == ("tenants.platform-a.test", "edge.platform-a.test")
    assert set(facts.addresses) == {web.network.address_of(s) for s in world.sites[host].slots}
    assert facts.ptr_names == ("web1.platform-a.test", "web2.platform-a.test")
    assert facts.ttl == 300.0


async def test_a_header_platform_tenant_has_an_address_and_nothing_else(
    web: SimWeb, world: World
) -> None:
    facts = await _source(web).lookup(_first(world, SiteKind.HEADER_TENANT))
    assert facts.error is None
    assert facts.cname_chain == ()
    assert len(facts.addresses) == 1
    assert facts.ptr == {}


async def test_a_name_that_does_not_exist_is_an_error_not_an_exception(web: SimWeb) -> None:
    facts = await _source(web).lookup("no-such-site.test")
    assert facts.error is not None and facts.error.startswith("nxdomain")
    assert facts.addresses == ()


async def test_an_address_literal_is_its_own_address_set(web: SimWeb, world: World) -> None:
    tenant = world.sites[_first(world, SiteKind.CNAME_TENANT)]
    address = web.network.address_of(tenant.slots[0])
    facts = await _source(web).lookup(address)
    assert facts.addresses == (address,)
    assert facts.ptr_names == ("web1.platform-a.test",)


@pytest.fixture
def silent_nameserver() -> Iterator[str]:
    """A UDP socket on loopback that never answers."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"127.0.0.1:{sock.getsockname()[1]}"


async def test_a_silent_nameserver_is_a_timeout_error(silent_nameserver: str) -> None:
    source = DnsEvidenceSource(silent_nameserver, timeout=0.2)
    facts = await source.lookup("anything.test")
    assert facts.error is not None and facts.error.startswith("timeout")


def test_a_bad_nameserver_or_limit_is_refused_up_front() -> None:
    with pytest.raises(ValueError):
        DnsEvidenceSource("dns.example:53")
    with pytest.raises(ValueError):
        DnsEvidenceSource("127.0.0.1:53", concurrency=0)
