"""Origin inference on the simulated web, judged against the world's ground truth.

Inference sees only DNS answers and HTTP responses; the tests compare its origins with the
world's. One inference run (DNS for every host, header probes where DNS is indeterminate,
spaced one second apart per host) serves the module's tests.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
from origin_overlay_dns import start_overlay

from courtier.net.policy import AddressPolicy
from courtier.origins.cluster import Assignment
from courtier.origins.dns_evidence import DnsEvidenceSource
from courtier.origins.evidence import Kind
from courtier.origins.header_evidence import probe_response
from courtier.origins.infer import OriginInference
from courtier.origins.probe import HttpHeaderProbe
from courtier.simweb import SimWeb, SiteKind, World, WorldParams, build_world
from courtier.simweb.dns import DnsAnswerer
from courtier.simweb.log import RequestRecord, read_log
from courtier.simweb.world import CDN_HOST, IMGSVC_HOST, STORE_HOST

PARAMS = WorldParams(
    seed=11,
    n_standalone=20,
    n_cname_tenants=12,
    n_header_tenants=16,
    n_horizon=4,
    n_farm=2,
    unavailable_seconds=1.0,
    slow_latency=0.05,
)
SPACING = 1.0


@dataclass(frozen=True)
class Run:
    world: World
    assignments: Mapping[str, Assignment]
    log: list[RequestRecord]
    canary: str


def _hosts(world: World) -> list[str]:
    media = [CDN_HOST, IMGSVC_HOST, STORE_HOST]
    return [*world.seed_hosts, *media, *world.horizon_hosts, *world.farm_hosts]


async def _infer(world: World, log_path: Path) -> Run:
    async with SimWeb(world, log_path=log_path) as web:
        policy = AddressPolicy(allow=[web.allow_net])

        def allowed(address: str) -> bool:
            return policy.check(address).allowed

        host, port = web.dns_address
        dns = DnsEvidenceSource(f"{host}:{port}", concurrency=32)
        async with HttpHeaderProbe(allowed, port=web.port, spacing=SPACING) as probe:
            inference = OriginInference(dns, probe=probe, address_allowed=allowed)
            result = await inference.add(_hosts(world))
        canary = web.network.canary_address
    return Run(world, result.assignments, list(read_log(log_path)), canary)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    log_path = tmp_path_factory.mktemp("origins") / "requests.jsonl"
    return asyncio.run(_infer(build_world(PARAMS), log_path))


def _of_kind(run: Run, kind: SiteKind) -> list[str]:
    return [h for h in run.assignments if run.world.sites[h].kind is kind]


def _members(run: Run) -> dict[str, list[str]]:
    members: dict[str, list[str]] = defaultdict(list)
    for site, assignment in run.assignments.items():
        members[assignment.origin].append(site)
    return members


def test_every_cname_platform_tenant_is_in_one_origin_of_their_own(run: Run) -> None:
    tenants = _of_kind(run, SiteKind.CNAME_TENANT)
    origins = {run.assignments[t].origin for t in tenants}
    assert len(origins) == 1
    assert sorted(_members(run)[origins.pop()]) == sorted(tenants)
    assert all(Kind.CNAME in {e.kind for e in run.assignments[t].evidence} for t in tenants)


def test_header_platform_tenants_are_assigned_to_their_platform(run: Run) -> None:
    tenants = _of_kind(run, SiteKind.HEADER_TENANT)
    origin, count = Counter(run.assignments[t].origin for t in tenants).most_common(1)[0]
    assert count >= 0.95 * len(tenants)
    assert set(_members(run)[origin]) <= set(tenants)  # nobody else is in the platform's origin
    assert Kind.HEADERS in {e.kind for e in run.assignments[tenants[0]].evidence}


def test_no_standalone_site_is_merged_with_another_site(run: Run) -> None:
    members = _members(run)
    for site in _of_kind(run, SiteKind.STANDALONE):
        assert members[run.assignments[site].origin] == [site]


def test_the_cdn_is_recognised_and_merges_no_site(run: Run) -> None:
    assignment = run.assignments[CDN_HOST]
    assert Kind.CDN in {e.kind for e in assignment.evidence}
    assert _members(run)[assignment.origin] == [CDN_HOST]


def test_probes_go_only_where_dns_is_indeterminate_two_per_host_spaced(run: Run) -> None:
    by_host: dict[str, list[RequestRecord]] = defaultdict(list)
    for record in run.log:
        by_host[record.host.rsplit(":", 1)[0]].append(record)
    kinds = {run.world.sites[h].kind for h in by_host}
    assert kinds <= {SiteKind.HEADER_TENANT, SiteKind.HORIZON, SiteKind.FARM}
    assert set(_of_kind(run, SiteKind.HEADER_TENANT)) <= set(by_host)
    for records in by_host.values():
        starts = sorted(r.start for r in records)
        assert len(starts) <= 2
        assert all(b - a >= SPACING - 0.05 for a, b in itertools.pairwise(starts))
    assert not any(r.canary for r in run.log)


async def test_sites_sharing_only_the_cdn_are_not_merged(tmp_path: Path) -> None:
    world = build_world(WorldParams(seed=3))
    tenants = [h for h, s in world.sites.items() if s.kind is SiteKind.CNAME_TENANT][:2]
    aliases = {"alpha-shop.test": CDN_HOST, "beta-shop.test": CDN_HOST}
    async with SimWeb(world) as web:
        transport, nameserver = await start_overlay(DnsAnswerer(world, web.network), aliases)
        try:
            inference = OriginInference(DnsEvidenceSource(nameserver))
            result = await inference.add([*aliases, *tenants])
            # Until their answers are in, sites sharing a CDN's name wait together.
            assert result.assignments["alpha-shop.test"].provisional
            for host, server in (("alpha-shop.test", "nginx"), ("beta-shop.test", "Apache")):
                home = probe_response(200, [("Server", server)], b"", host)
                assert inference.observe(host, home, None)
            result = await inference.recheck()
        finally:
            transport.close()
    alpha, beta = result.assignments["alpha-shop.test"], result.assignments["beta-shop.test"]
    assert alpha.origin != beta.origin
    assert Kind.CDN in {e.kind for e in alpha.evidence}
    assert result.assignments[tenants[0]].origin == result.assignments[tenants[1]].origin
