"""The web fuzzer's worlds: a pure function of the seed, every shape across a handful of seeds,
and ground truth that agrees with the DNS: who shares servers is who the world says."""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
from collections import Counter, defaultdict

import pytest
from fuzz_checks import NET, ground_truth_problems, resolve

from courtier.cli import simweb
from courtier.simweb import SiteKind, World, WorldParams, build_world
from courtier.simweb.dns import DnsAnswerer
from courtier.simweb.fuzz import PLATFORM_MEDIA, SHAPES, VANITY_MEDIA
from courtier.simweb.media_shapes import SIMASSETS_HOST
from courtier.simweb.pages import PageRenderer
from courtier.simweb.sites import FRONT_HEADERS
from courtier.simweb.world import (
    CDN_DOMAIN,
    FUZZ_SITES,
    IMGSVC_HOST,
    SIZE_PRESETS,
    STORE_HOST,
    fuzz_params,
    params_for_total,
)

SEEDS = (1, 2, 3, 4, 5)


@pytest.fixture(scope="module")
def worlds() -> dict[int, World]:
    return {seed: build_world(fuzz_params(seed)) for seed in SEEDS}


def _generated(world: World) -> list:
    return [s for s in world.sites.values() if s.shape in SHAPES]


@pytest.mark.parametrize("seed", SEEDS)
def test_the_ground_truth_of_a_fuzzed_world_is_well_formed(
    seed: int, worlds: dict[int, World]
) -> None:
    world = worlds[seed]
    assert ground_truth_problems(world) == []
    generated = [s for s in _generated(world) if s.is_seed]
    assert len(generated) == FUZZ_SITES == world.params.fuzz_sites
    assert 250 <= len(world.seed_hosts) <= 400  # a few hundred sites
    assert all(s.bucket and world.buckets[s.bucket] == s.host for s in generated)


def test_a_fuzzed_world_is_a_pure_function_of_its_seed(worlds: dict[int, World]) -> None:
    again = build_world(fuzz_params(3))
    assert again == worlds[3]
    renderer, other = PageRenderer(again, NET), PageRenderer(worlds[3], NET)
    for host in again.seed_hosts[::20]:
        site = again.sites[host]
        for path in ("/", "/robots.txt", "/item/4", "/nope"):
            assert renderer.render(site, path, "") == other.render(site, path, "")
    assert worlds[3].seed_hosts != worlds[4].seed_hosts
    # Its own rng: the older shapes around it do not move the generated topology.
    fewer = build_world(dataclasses.replace(fuzz_params(3), n_standalone=12, n_horizon=3))
    assert [s.host for s in _generated(fewer)] == [s.host for s in _generated(worlds[3])]


def test_zero_generated_sites_leave_a_world_as_it_was() -> None:
    params = dataclasses.replace(fuzz_params(3), fuzz_sites=0)
    world = build_world(params)
    assert not _generated(world) and world.cdn_edges == ()
    assert (
        build_world(WorldParams(seed=3)).seed_hosts
        == build_world(dataclasses.replace(WorldParams(seed=3), fuzz_sites=0)).seed_hosts
    )
    with pytest.raises(ValueError, match="fuzz_sites"):
        build_world(dataclasses.replace(params, fuzz_sites=3))


def test_every_shape_and_overlay_appears_in_every_world(worlds: dict[int, World]) -> None:
    for seed, world in worlds.items():
        shapes = Counter(s.shape for s in world.sites.values() if s.shape)
        assert set(shapes) == {*SHAPES, PLATFORM_MEDIA, VANITY_MEDIA}, (seed, shapes)
        assert any(s.robots_redirect for s in world.sites.values()), seed


def test_the_variants_of_every_shape_appear_across_a_handful_of_seeds(
    worlds: dict[int, World],
) -> None:
    seen: set[str] = set()
    for world in worlds.values():
        seen |= _variants(world)
    expected = {
        "platform:cname", "platform:chain", "platform:a-records", "platform:subdomains",
        "platform:ptr", "platform:no-ptr", "platform:front-served-by", "platform:branded",
        "cdn-platform:via-own-name", "cdn-platform:direct", "cdn-platform:generic",
        "cdn-platform:branded", "cdn:says-cdn", "cdn:does-not-say",
        "hosting:ptr", "hosting:no-ptr", "hosting:cname", "hosting:several-apps",
        "stranger:distinctive", "stranger:identical", "stranger:none",
        "stranger:edge-name", "stranger:distribution", "stranger:a-records",
        "pair:one-server", "pair:two-servers", "pair:www-cname", "pair:redirect",
        "vanity:cdn", "vanity:store", "vanity:imgsvc", "platform-media",
        "vanity:cdn-shared", "vanity:store-endpoint",
        "robots:twin", "robots:same-origin", "robots:other-origin",
        *(f"front:{h}" for h in FRONT_HEADERS),
    }  # fmt: skip
    assert expected - seen == set()


def _variants(world: World) -> set[str]:
    seen: set[str] = set()
    dns, sites = world.dns, world.sites
    edges = {e.name: e for e in world.cdn_edges}
    by_origin: dict[str, list] = defaultdict(list)
    for site in _generated(world):
        by_origin[site.origin].append(site)
    for origin, group in by_origin.items():
        first = group[0]
        if first.shape in ("generic-platform", "cached-platform"):
            target = dns.cnames.get(first.host)
            if first.host.endswith(f".{origin.removeprefix('platform:')}"):
                seen.add("platform:subdomains")
            elif target is None:
                seen.add("platform:a-records")
            else:
                seen.add("platform:chain" if target in dns.cnames else "platform:cname")
            seen.add("platform:ptr" if first.slots[0] in dns.ptr_names else "platform:no-ptr")
            if first.front is not None and first.front.headers == ("x-served-by",):
                seen.add("platform:front-served-by")
            if first.brand is not None:
                seen.add("platform:branded")
            if first.front is not None and first.shape == "cached-platform":
                seen.update(f"front:{h}" for h in first.front.headers)
        elif first.shape == "cdn-platform":
            chain = resolve(DnsAnswerer(world, NET), first.host)[0]
            own = [n for n in chain if n.endswith(origin.removeprefix("platform:"))]
            seen.add("cdn-platform:via-own-name" if own else "cdn-platform:direct")
            seen.add("cdn-platform:branded" if first.brand else "cdn-platform:generic")
        elif first.shape == "shared-hosting":
            seen.add("hosting:ptr" if first.slots[0] in dns.ptr_names else "hosting:no-ptr")
            if any(s.host in dns.cnames for s in group):
                seen.add("hosting:cname")
            if len({s.stack for s in group}) > 1:
                seen.add("hosting:several-apps")
        elif first.shape == "cdn-stranger":
            target = dns.cnames.get(first.host)
            way = (
                "a-records"
                if target is None
                else "edge-name"
                if target in edges
                else "distribution"
            )
            seen.add(f"stranger:{way}")
            if first.brand is not None:
                seen.add("stranger:distinctive")
        elif first.shape == "www-pair":
            seen.add("pair:one-server" if len(group) == 2 else "pair:two-servers")
            if any(dns.cnames.get(s.host) == s.host.removeprefix("www.") for s in group):
                seen.add("pair:www-cname")
            if any(s.redirect_to for s in group):
                seen.add("pair:redirect")
    strangers = [s for s in _generated(world) if s.shape == "cdn-stranger" and not s.brand]
    by_edge: dict[tuple[int, ...], set[str | None]] = defaultdict(set)
    for site in strangers:
        by_edge[site.slots].add(site.stack)
    for stacks in by_edge.values():
        seen.add("stranger:identical" if len(stacks) == 1 else "stranger:none")
    seen.update("cdn:says-cdn" if e.says_cdn else "cdn:does-not-say" for e in world.cdn_edges)
    for site in sites.values():
        if site.shape == PLATFORM_MEDIA:
            seen.add("platform-media")
        if site.shape == VANITY_MEDIA and site.host in dns.cnames:
            target = dns.cnames[site.host]
            kind = (
                "cdn"
                if target.endswith(CDN_DOMAIN)
                else "cdn-shared"  # a CDN's shared name, known by that name alone
                if target == SIMASSETS_HOST
                else "imgsvc"
                if target == IMGSVC_HOST
                else "store-endpoint"  # the bucket named like the vanity host
                if target == STORE_HOST
                else "store"
            )
            seen.add(f"vanity:{kind}")
        if site.robots_redirect:
            aim = sites[site.robots_redirect]
            twin = site.host.removeprefix("www.") == aim.host.removeprefix("www.")
            same = aim.origin == site.origin
            seen.add(
                "robots:twin" if twin else "robots:same-origin" if same else "robots:other-origin"
            )
    return seen


def test_a_platforms_tenants_are_one_origin_on_one_set_of_servers(
    worlds: dict[int, World],
) -> None:
    for world in worlds.values():
        answerer = DnsAnswerer(world, NET)
        tenants: dict[str, list] = defaultdict(list)
        for site in world.sites.values():
            if site.kind is SiteKind.PLATFORM_TENANT:
                tenants[site.origin].append(site)
        assert len(tenants) >= 3
        for origin, group in tenants.items():
            domain = origin.removeprefix("platform:")
            assert {s.slots for s in group} == {group[0].slots}
            assert {s.stack for s in group} == {group[0].stack}
            assert {s.brand for s in group} == {group[0].brand}
            assert all(resolve(answerer, s.host)[1] == set(s.slots) for s in group)
            ptrs = [world.dns.ptr_names.get(slot) for slot in group[0].slots]
            if group[0].shape != "cdn-platform" and any(ptrs):
                # A platform's own servers are named in its own registrable domain.
                assert all(p is not None and p.endswith(f".{domain}") for p in ptrs), ptrs


def test_a_cdn_edges_strangers_are_origins_of_their_own(worlds: dict[int, World]) -> None:
    for world in worlds.values():
        for edge in world.cdn_edges:
            on_edge = [s for s in world.sites.values() if s.is_seed and s.slots == edge.slots]
            strangers = [s for s in on_edge if s.kind is SiteKind.CDN_SITE]
            assert [s.origin for s in strangers] == [s.host for s in strangers]
            platforms = {s.origin for s in on_edge if s.kind is SiteKind.PLATFORM_TENANT}
            assert not platforms & {s.origin for s in strangers}
            assert edge.says_cdn == bool(re.search(r"cdn\.test$", edge.name)), edge.name
            assert not any(slot in world.dns.ptr_names for slot in edge.slots) or all(
                world.dns.ptr_names[slot].endswith(edge.name.split(".", 1)[1])
                for slot in edge.slots
            )


def test_shared_hosting_servers_and_pairs_are_origins_by_machine(
    worlds: dict[int, World],
) -> None:
    for world in worlds.values():
        machines: dict[str, set[tuple[int, ...]]] = defaultdict(set)
        for site in world.sites.values():
            if site.kind is SiteKind.SHARED_HOST:
                machines[site.origin].add(site.slots)
                assert re.fullmatch(r"server:[a-z]+\d+\.test/\d", site.origin)
        assert machines and all(len(slots) == 1 for slots in machines.values())
        for slot, name in world.dns.ptr_names.items():
            if any(
                s.kind is SiteKind.SHARED_HOST and slot in s.slots for s in world.sites.values()
            ):
                assert re.fullmatch(r"host\d+\.[a-z]+\d+\.test", name)
        for site in world.sites.values():
            if site.kind is SiteKind.PAIR_SITE:
                bare = site.host.removeprefix("www.")
                twin = world.sites[bare if site.host != bare else f"www.{bare}"]
                same = site.slots == twin.slots
                assert (site.origin == twin.origin) == same
                assert site.origin == (bare if same else site.host)


def test_media_hosts_of_generated_sites(worlds: dict[int, World]) -> None:
    for world in worlds.values():
        renderer = PageRenderer(world, NET)
        for site in world.sites.values():
            if site.shape == PLATFORM_MEDIA:
                assert site.kind is SiteKind.PLATFORM_MEDIA and not site.is_seed
                tenants = [s for s in world.sites.values() if s.media_host == site.host]
                assert tenants and {t.origin for t in tenants} == {site.origin}
                home = renderer.render(tenants[0], "/", "").body.decode()
                assert f"http://{site.host}/{tenants[0].host}/img/" in home
            elif site.shape == VANITY_MEDIA and site.host in world.dns.cnames:
                customer = world.sites[site.customer or ""]
                assert customer.media_host == site.host and customer.is_seed
                target = world.dns.cnames[site.host]
                assert target in world.sites or target.endswith(f".{STORE_HOST}")
                if target == STORE_HOST:  # the endpoint serves the bucket named like the host
                    assert site.bucket == customer.bucket == site.host
                    assert world.buckets[site.host] == customer.host


def test_the_fuzz_preset_and_its_cli(capsys: pytest.CaptureFixture[str]) -> None:
    assert SIZE_PRESETS["fuzz"] == fuzz_params(1)
    assert WorldParams.from_json(json.loads(json.dumps(fuzz_params(9).to_json()))) == fuzz_params(9)
    parser = argparse.ArgumentParser()
    simweb.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["simweb", "serve", "--fuzz", "7"])
    assert simweb.world_params(args) == fuzz_params(7)
    args = parser.parse_args(["simweb", "serve", "--fuzz", "7", "--sites", "120"])
    params = simweb.world_params(args)
    assert params.seed == 7 and len(build_world(params).seed_hosts) == 120 + 2  # and bait
    assert params == params_for_total(fuzz_params(7), 120)
    with pytest.raises(ValueError, match="at least"):
        params_for_total(fuzz_params(7), 25)
    with pytest.raises(ValueError, match="sets the seed"):
        simweb.world_params(parser.parse_args(["simweb", "serve", "--fuzz", "7", "--seed", "3"]))
    bare = parser.parse_args(["simweb"])  # no subcommand and no --fuzz: a usage error
    assert bare.handler(bare) == 2
    capsys.readouterr()
    args = parser.parse_args(["simweb", "truth", "--fuzz", "2", "--json"])
    assert args.handler(args) == 0
    truth = json.loads(capsys.readouterr().out)
    world = build_world(fuzz_params(2))
    assert truth["seed_sites"] == len(world.seed_hosts)
    assert {o: e["sites"] for o, e in truth["origins"].items()} == {
        o: list(h) for o, h in world.origin_sites().items()
    }
    assert all(e["budget"] == world.params.origin_budget for e in truth["origins"].values())
