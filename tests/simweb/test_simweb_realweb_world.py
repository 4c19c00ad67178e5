"""The real web's shapes in the world: edge sites and tenants, media hosts, presets unchanged."""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import re

import pytest
from dnslib import QTYPE
from simweb_helpers import REALWEB, SMALL

from courtier.cli import simweb
from courtier.simweb import Network, SiteKind, World, WorldParams, build_world
from courtier.simweb.dns import DnsAnswerer
from courtier.simweb.http import platform_headers
from courtier.simweb.pages import PageRenderer
from courtier.simweb.world import (
    CDN_HOST,
    EDGE_HOST,
    IMGSVC_CACHE,
    IMGSVC_HOST,
    IMGSVC_MIXED,
    IMGSVC_STORE,
    PLATFORM_A_MEDIA_HOST,
    PLATFORM_C_HOST,
    SIZE_PRESETS,
    STACKS,
    STORE_HOST,
    params_for_total,
    request_cost,
    web_split,
)

NET = Network(100, 80)
# The fields a site had before the real web's shapes; the fingerprint reads only these.
_OLD_SITE_FIELDS = (
    "host",
    "kind",
    "origin",
    "slots",
    "behaviours",
    "unicode_host",
    "robots_status",
    "robots_text",
    "crawl_delay",
    "latency",
    "bucket",
    "store_style",
)
# Fingerprints of the presets' worlds (sites, DNS, ground truth, headers, some pages) taken on
# the code before the shapes existed: the shapes must not change an existing world.
_BEFORE = {
    "small": "21531cfb98dc03d9d7fbf057c53d27bc3712c332a742600525f83d6f0bec99cf",
    "demo": "e7ad70bf5d148c19ceca2b22e476acb33ebb01fe5bc0663fa1d32a335bb60a42",
    "bench": "df04919e62500427f3ec52831b416f450b2633fc08d9322fd8543a7858c5ce40",
    "demo-500": "6f0841e1e3b4e28004fd6b1d58282ab1e0a4718dba9a615a06db8aa04504a3b2",
}
# The fields the real web's shapes added to a site; `shapes=True` fingerprints read them too,
# and the edge's slots.
_SHAPE_SITE_FIELDS = (*_OLD_SITE_FIELDS, "stack", "media_host", "customer", "imgsvc_mode")
# Fingerprints (shapes=True) of worlds with the real web's shapes, taken on the code before the
# single-page apps existed: the apps' parameters at 0 must not change them.
_BEFORE_SPA = {
    "realweb": "05c0e14badd0482e3672f15d65e14875eb66bd17207e7a4a1dc12dcbb6e515b4",
    "web": "e56bf4fe02fb0014e862eda90285cda70b4992cdaeaf3ae71679dca1c6953ffe",
}


def _fingerprint(world: World, *, shapes: bool = False) -> str:
    site_fields = _SHAPE_SITE_FIELDS if shapes else _OLD_SITE_FIELDS

    def fields(site: object) -> list[object]:
        return [
            sorted(map(str, getattr(site, f))) if f == "behaviours" else str(getattr(site, f))
            for f in site_fields
        ]

    dns = world.dns
    data: dict[str, object] = {
        "sites": [fields(s) for s in world.sites.values()],
        "a": sorted((k, list(v)) for k, v in dns.a_records.items()),
        "cname": sorted(dns.cnames.items()),
        "ptr": sorted(dns.ptr_names.items()),
        "rebind": sorted((k, list(v)) for k, v in dns.rebinding.items()),
        "spellings": sorted(world.spellings.items()),
        "buckets": sorted(world.buckets.items()),
        "n_slots": world.n_slots,
        "seed": list(world.seed_hosts),
        "horizon": list(world.horizon_hosts),
        "farm": list(world.farm_hosts),
        "popular": world.popular_horizon_host,
        "labels": sorted(world.customer_labels.items()),
        "headers": [[h, [list(x) for x in platform_headers(s)]] for h, s in world.sites.items()],
    }
    if shapes:
        data["edge_slots"] = list(world.edge_slots)
    renderer = PageRenderer(world, NET)
    pages = []
    for host in world.seed_hosts[:: max(1, len(world.seed_hosts) // 25)]:
        site = world.sites[host]
        for path in ("/", "/item/5", "/list/2", "/nope", "/robots.txt"):
            p = renderer.render(site, path, "")
            body = hashlib.sha256(p.body).hexdigest()
            pages.append([p.status, body, p.content_type, [list(x) for x in p.headers]])
    data["pages"] = pages
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


@pytest.fixture(scope="module")
def realweb() -> World:
    return build_world(REALWEB)


def _of(world: World, kind: SiteKind) -> list[str]:
    return [h for h, s in world.sites.items() if s.kind is kind]


@pytest.mark.parametrize("name", sorted(_BEFORE))
def test_existing_presets_build_the_worlds_they_built_before(name: str) -> None:
    if name == "demo-500":
        params = params_for_total(SIZE_PRESETS["demo"], 500)
    else:
        params = SIZE_PRESETS[name]
    assert _fingerprint(build_world(params)) == _BEFORE[name]


@pytest.mark.parametrize("name", sorted(_BEFORE_SPA))
def test_worlds_with_the_shapes_build_what_they_built_before_the_spa_sites(name: str) -> None:
    params = REALWEB if name == "realweb" else SIZE_PRESETS[name]
    assert _fingerprint(build_world(params), shapes=True) == _BEFORE_SPA[name]


def test_the_shapes_add_to_a_world_and_change_none_of_its_older_sites(realweb: World) -> None:
    plain = build_world(SMALL)
    assert build_world(REALWEB) == realweb  # same params, same world
    assert build_world(dataclasses.replace(REALWEB, seed=8)).seed_hosts != realweb.seed_hosts
    for host, site in plain.sites.items():
        shaped = realweb.sites[host]
        assert dataclasses.replace(shaped, media_host=None, imgsvc_mode=IMGSVC_CACHE) == site
    assert plain.seed_hosts == realweb.seed_hosts[: len(plain.seed_hosts)]
    assert all(realweb.dns.a_records[n] == a for n, a in plain.dns.a_records.items())
    assert all(realweb.dns.cnames[n] == c for n, c in plain.dns.cnames.items())
    assert realweb.dns.ptr_names == plain.dns.ptr_names  # the edge has no PTR names
    assert len(realweb.seed_hosts) == len(plain.seed_hosts) + 12 + 4


def test_edge_sites_and_platform_c_tenants_cname_to_one_edge(realweb: World) -> None:
    edge_sites, tenants = _of(realweb, SiteKind.EDGE_SITE), _of(realweb, SiteKind.EDGE_TENANT)
    assert len(edge_sites) == 12 and len(tenants) == 4
    assert "cdn" not in EDGE_HOST  # to be recognised by behaviour, not by name
    assert len(realweb.edge_slots) == 2
    assert realweb.dns.a_records[EDGE_HOST] == realweb.edge_slots
    assert not set(realweb.edge_slots) & set(realweb.dns.ptr_names)
    assert all(realweb.dns.cnames[h] == EDGE_HOST for h in edge_sites)
    assert all(realweb.dns.cnames[h] == PLATFORM_C_HOST for h in tenants)
    assert realweb.dns.cnames[PLATFORM_C_HOST] == EDGE_HOST
    assert all(realweb.sites[h].slots == realweb.edge_slots for h in edge_sites + tenants)
    # Ground truth: every edge site is its own origin, platform C is one.
    assert [realweb.sites[h].origin for h in edge_sites] == edge_sites
    assert {realweb.sites[h].origin for h in tenants} == {"platform-c"}
    assert [realweb.sites[h].stack for h in edge_sites[: len(STACKS)]] == list(STACKS)
    assert all(realweb.sites[h].stack in STACKS for h in edge_sites)
    assert all(realweb.sites[h].bucket for h in edge_sites + tenants)


def test_dns_answers_the_edge_chains(realweb: World) -> None:
    answerer = DnsAnswerer(realweb, NET)
    edge = sorted(NET.address_of(s) for s in realweb.edge_slots)
    tenant = _of(realweb, SiteKind.EDGE_TENANT)[0]
    _, records = answerer.answer(tenant, QTYPE.A)
    assert [str(r.rdata) for r in records if r.rtype == QTYPE.CNAME] == [
        f"{PLATFORM_C_HOST}.",
        f"{EDGE_HOST}.",
    ]
    assert sorted(str(r.rdata) for r in records if r.rtype == QTYPE.A) == edge
    _, records = answerer.answer(_of(realweb, SiteKind.EDGE_SITE)[0], QTYPE.A)
    assert [str(r.rdata) for r in records if r.rtype == QTYPE.CNAME] == [f"{EDGE_HOST}."]
    reverse = ".".join(reversed(edge[0].split("."))) + ".in-addr.arpa"
    assert answerer.answer(reverse, QTYPE.PTR)[1] == []
    _, records = answerer.answer(PLATFORM_A_MEDIA_HOST, QTYPE.A)
    assert [str(r.rdata) for r in records if r.rtype == QTYPE.CNAME] == ["edge.platform-a.test."]


def test_platform_a_media_host_is_platform_a_and_no_seed(realweb: World) -> None:
    media = realweb.sites[PLATFORM_A_MEDIA_HOST]
    tenant = realweb.sites[_of(realweb, SiteKind.CNAME_TENANT)[0]]
    assert media.kind is SiteKind.PLATFORM_MEDIA and media.origin == "platform-a"
    assert media.slots == tenant.slots and not media.is_seed
    assert PLATFORM_A_MEDIA_HOST not in realweb.seed_hosts
    assert request_cost(media, f"/{tenant.label}/img/1.jpg") == 1
    home = PageRenderer(realweb, NET).render(tenant, "/", "").body.decode()
    assert f"http://{PLATFORM_A_MEDIA_HOST}/{tenant.label}/img/" in home
    assert PLATFORM_A_MEDIA_HOST not in build_world(SMALL).sites


def test_vanity_media_hosts_cname_to_a_distribution_or_the_sites_bucket(realweb: World) -> None:
    vanity = [s for s in realweb.sites.values() if s.media_host]
    assert {s.kind for s in vanity} == {SiteKind.STANDALONE, SiteKind.EDGE_SITE}
    kinds = set()
    for site in vanity:
        assert site.media_host == f"images.{site.host}"
        target = realweb.dns.cnames[site.media_host]
        host = realweb.sites[site.media_host]
        assert host.customer == site.host and not host.is_seed
        if target.endswith(".simcdn.test"):
            assert re.fullmatch(r"d[0-9a-f]{13}\.simcdn\.test", target)
            assert realweb.dns.a_records[target] == realweb.sites[CDN_HOST].slots
            assert host.kind is SiteKind.CDN and realweb.sites[target].customer == site.host
            for name in (site.media_host, target, site.media_host.upper() + "."):
                assert realweb.media_customer(name, "/img/1.jpg") is site
        else:
            assert target == f"{site.bucket}.{STORE_HOST}"
            assert host.kind is SiteKind.STORE and host.bucket == site.bucket
        kinds.add(host.kind)
        page = PageRenderer(realweb, NET).render(site, "/item/3", "").body.decode()
        assert f'src="http://{site.media_host}/img/' in page
    assert kinds == {SiteKind.CDN, SiteKind.STORE}


def test_the_image_service_mode_is_per_customer_and_per_image_for_a_few(realweb: World) -> None:
    by_mode: dict[str, list[str]] = {}
    for host in realweb.seed_hosts:
        by_mode.setdefault(realweb.sites[host].imgsvc_mode, []).append(host)
    assert set(by_mode) == {IMGSVC_CACHE, IMGSVC_STORE, IMGSVC_MIXED}
    bait = [h for h in realweb.seed_hosts if realweb.sites[h].kind is SiteKind.BAIT]
    assert all(realweb.sites[h].imgsvc_mode == IMGSVC_CACHE for h in bait)

    def mode(host: str, n: int) -> str | None:
        return realweb.imgsvc_mode(IMGSVC_HOST, f"/{realweb.sites[host].label}/w_320/img/{n}.jpg")

    assert mode(by_mode[IMGSVC_CACHE][0], 2) == IMGSVC_CACHE
    assert mode(by_mode[IMGSVC_STORE][0], 1) == IMGSVC_STORE
    mixed = by_mode[IMGSVC_MIXED][0]
    assert (mode(mixed, 1), mode(mixed, 2)) == (IMGSVC_CACHE, IMGSVC_STORE)
    assert realweb.imgsvc_mode(IMGSVC_HOST, "/nobody/w_320/img/1.jpg") is None
    assert realweb.imgsvc_mode(CDN_HOST, f"/{mixed}/img/1.jpg") is None


def test_the_web_preset_splits_sites_like_the_real_web() -> None:
    params = params_for_total(SIZE_PRESETS["web"], 2000)
    assert params == web_split(SIZE_PRESETS["web"], 2000)
    split = (
        params.n_cname_tenants,
        params.n_header_tenants,
        params.n_standalone,
        params.n_edge_sites,
        params.n_edge_tenants,
    )
    assert split == (960, 400, 360, 200, 80)
    web = SIZE_PRESETS["web"]
    assert web.platform_media and web.vanity_media > 0 and web.imgsvc_store_share > 0
    world = build_world(web)
    assert len(world.seed_hosts) == 502  # 500 and the two bait sites
    assert len(build_world(params).seed_hosts) == 2002
    with pytest.raises(ValueError, match="at least"):
        params_for_total(web, 10)
    # Presets without edge sites keep the older split.
    assert params_for_total(SIZE_PRESETS["demo"], 2000).n_edge_sites == 0


def test_new_params_round_trip_and_shares_are_checked() -> None:
    params = SIZE_PRESETS["web"]
    assert WorldParams.from_json(json.loads(json.dumps(params.to_json()))) == params
    assert isinstance(WorldParams.from_json({"vanity_media": 1}).vanity_media, float)
    for bad in ({"vanity_media": 1.5}, {"imgsvc_store_share": 0.6, "imgsvc_mixed_share": 0.6}):
        with pytest.raises(ValueError, match=r"share|exceed"):
            build_world(dataclasses.replace(SMALL, **bad))


def test_serve_builds_the_web_preset_split_for_a_site_count() -> None:
    parser = argparse.ArgumentParser()
    simweb.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["simweb", "serve", "--size", "web", "--sites", "2000", "--seed", "3"])
    params = simweb.world_params(args)
    assert params == dataclasses.replace(web_split(SIZE_PRESETS["web"], 2000), seed=3)
