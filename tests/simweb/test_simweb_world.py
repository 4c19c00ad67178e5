"""The world is deterministic from its seed and holds every behaviour the issue asks for."""

from __future__ import annotations

import dataclasses
import ipaddress
import socket
from urllib.parse import quote

import pytest

from courtier.simweb import Network, SiteKind, World, WorldParams, build_world
from courtier.simweb.pages import PageRenderer
from courtier.simweb.world import (
    CANARY_SLOT,
    CDN_HOST,
    IMGSVC_HOST,
    SPECIAL_STANDALONE,
    STORE_HOST,
    Behaviour,
    Site,
    _customer_labels,
    params_for_total,
    request_cost,
)


def _pages(world: World) -> list[bytes]:
    renderer = PageRenderer(world, Network(100, 80))
    site = world.sites[world.seed_hosts[3]]
    return [
        renderer.render(site, path, q).body
        for path, q in (("/", ""), ("/item/5", ""), ("/search", "q=tea"))
    ]


def test_same_seed_builds_the_same_world_and_pages() -> None:
    a, b = build_world(WorldParams(seed=11)), build_world(WorldParams(seed=11))
    assert a == b
    assert _pages(a) == _pages(b)


def test_another_seed_builds_another_world() -> None:
    a, b = build_world(WorldParams(seed=11)), build_world(WorldParams(seed=12))
    assert a.seed_hosts != b.seed_hosts
    assert _pages(a) != _pages(b)


def test_world_has_every_special_behaviour(world: World) -> None:
    for behaviour in (*SPECIAL_STANDALONE, Behaviour.REBIND, Behaviour.CANARY_ALIAS):
        assert world.sites_with(behaviour), behaviour


def test_seed_excludes_horizon_farm_and_media_hosts(world: World) -> None:
    seed = set(world.seed_hosts)
    assert not seed & set(world.horizon_hosts)
    assert not seed & set(world.farm_hosts)
    assert not seed & {CDN_HOST, STORE_HOST, IMGSVC_HOST}
    assert world.popular_horizon_host in world.horizon_hosts
    kinds = {world.sites[h].kind for h in seed}
    assert kinds == {
        SiteKind.STANDALONE,
        SiteKind.CNAME_TENANT,
        SiteKind.HEADER_TENANT,
        SiteKind.BAIT,
    }
    assert len(seed) == 16 + 8 + 6 + 2


def test_platforms_share_servers_and_standalones_do_not(world: World) -> None:
    tenants_a = [s for s in world.sites.values() if s.kind is SiteKind.CNAME_TENANT]
    tenants_b = [s for s in world.sites.values() if s.kind is SiteKind.HEADER_TENANT]
    assert len({s.slots for s in tenants_a}) == 1 and len(tenants_a[0].slots) == 2
    assert len({s.slots for s in tenants_b}) == 1
    assert {s.origin for s in tenants_a} == {"platform-a"}
    assert {s.origin for s in tenants_b} == {"platform-b"}
    standalone = [s for s in world.sites.values() if s.kind is SiteKind.STANDALONE]
    assert len({s.slots for s in standalone}) == len(standalone)
    assert all(s.origin == s.host for s in standalone)
    # Platform A is visible in DNS (CNAME + PTR), platform B is not.
    assert all(world.dns.cnames.get(s.host) == "tenants.platform-a.test" for s in tenants_a)
    assert not any(s.host in world.dns.cnames for s in tenants_b)
    assert not any(slot in world.dns.ptr_names for slot in tenants_b[0].slots)


def test_every_spelling_of_a_host_names_its_site(world: World) -> None:
    site = world.sites[world.seed_hosts[0]]
    for spelling in (
        site.host,
        site.host.upper(),
        site.host + ".",
        f"{site.host}:80",
        f"{site.host.upper()}.:8080",
    ):
        assert world.site_of_host(spelling) is site
    idn = world.site_with(Behaviour.IDN)
    assert idn.unicode_host is not None and idn.host.startswith("xn--")
    assert world.site_of_host(idn.unicode_host) is idn
    assert world.site_of_host(idn.unicode_host.upper() + ".") is idn
    assert world.site_of_host(idn.host) is idn
    assert world.site_of_host("nowhere.test") is None


def test_request_cost_follows_the_path_class(world: World) -> None:
    site = world.sites[world.seed_hosts[0]]
    assert [
        request_cost(site, p)
        for p in (
            "/robots.txt",
            "/img/1.jpg",
            "/",
            "/search",
            "/list/2",
            "/calendar/2026/1",
            "/item/4",
            "/about",
        )
    ] == [1, 1, 4, 4, 4, 4, 2, 2]
    assert request_cost(world.sites[CDN_HOST], f"/{site.host}/img/1.jpg") == 1


def test_robots_ground_truth_matches_the_special_sites(world: World) -> None:
    assert world.site_with(Behaviour.ROBOTS_500).robots_status == 500
    assert world.site_with(Behaviour.ROBOTS_404).robots_status == 404
    delayed = world.site_with(Behaviour.CRAWL_DELAY)
    assert delayed.crawl_delay == 2.0 and "Crawl-delay: 2" in delayed.robots_text
    disallowing = [s for s in world.sites.values() if "Disallow: /private/" in s.robots_text]
    assert len(disallowing) > 10


def test_params_for_total_splits_sites_and_refuses_too_few() -> None:
    params = params_for_total(WorldParams(), 2000)
    assert params.n_standalone + params.n_cname_tenants + params.n_header_tenants == 2000
    assert params.n_cname_tenants == 500 and params.n_header_tenants == 300
    with pytest.raises(ValueError, match="at least"):
        params_for_total(WorldParams(), 5)


def test_params_survive_a_json_round_trip_and_reject_unknown_keys() -> None:
    params = dataclasses.replace(WorldParams(), seed=9, origin_budget=3.5)
    assert WorldParams.from_json(params.to_json()) == params
    with pytest.raises(ValueError, match="unknown"):
        WorldParams.from_json({"seed": 1, "colour": 3})


def test_params_of_an_older_info_file_without_bucket_limits_take_the_defaults() -> None:
    params = dataclasses.replace(WorldParams(), bucket_rate=7.5, bucket_burst=2.0)
    assert WorldParams.from_json(params.to_json()) == params
    old = {k: v for k, v in params.to_json().items() if not k.startswith("bucket_")}
    loaded = WorldParams.from_json(old)
    assert (loaded.bucket_rate, loaded.bucket_burst) == (50.0, 5.0)
    assert isinstance(WorldParams.from_json({"bucket_rate": 3}).bucket_rate, float)
    world = build_world(WorldParams())
    assert (world.bucket_limit(1.0), world.bucket_limit(5.0)) == (301.0, 501.0)
    with pytest.raises(ValueError, match="bucket_rate"):
        build_world(dataclasses.replace(WorldParams(), bucket_rate=0.0))


def test_media_customer_names_the_seed_site_behind_a_cdn_or_image_service_url(
    world: World,
) -> None:
    site = world.sites[world.seed_hosts[0]]
    idn = world.site_with(Behaviour.IDN)
    assert idn.unicode_host is not None
    for spelled in (site.host, site.host.upper(), site.host + ".", f"{site.host}:80"):
        assert world.media_customer(CDN_HOST, f"/{spelled}/img/1.jpg") is site
    assert world.media_customer("CDN.SimCDN.test.:80", f"/{site.host}/img/1.jpg?x=1") is site
    assert world.media_customer(CDN_HOST, f"/{quote(idn.unicode_host)}/img/1.jpg") is idn
    assert world.media_customer(CDN_HOST, f"/{idn.host}/img/1.jpg") is idn
    for label in (site.label, site.label.upper()):
        assert world.media_customer(IMGSVC_HOST, f"/{label}/w_320/img/1.jpg") is site
    assert world.media_customer(IMGSVC_HOST, f"/{idn.label}/w_320/img/1.jpg") is idn
    # Not a customer: unknown names, hosts outside the seed, other hosts, no segment at all.
    assert world.media_customer(CDN_HOST, "/nowhere.test/img/1.jpg") is None
    assert world.media_customer(CDN_HOST, f"/{world.popular_horizon_host}/img/1.jpg") is None
    assert world.media_customer(IMGSVC_HOST, f"/{site.host}/w_320/img/1.jpg") is None
    assert world.media_customer(STORE_HOST, f"/{site.host}/img/1.jpg") is None
    assert world.media_customer(site.host, f"/{site.host}/img/1.jpg") is None
    assert world.media_customer(CDN_HOST, "/") is None
    ascii_labels = {k: v for k, v in world.customer_labels.items() if k.isascii()}
    assert all(world.sites[host].label == label for label, host in ascii_labels.items())
    assert set(ascii_labels.values()) == set(world.seed_hosts)


def test_a_label_two_seed_sites_share_belongs_to_the_host_that_sorts_first() -> None:
    sites = {
        host: Site(host, SiteKind.STANDALONE, host, (i,))
        for i, host in enumerate(("shop.zz.test", "shop.aa.test", "other.test"))
    }
    labels = _customer_labels(sites)
    assert labels == {"shop": "shop.aa.test", "other": "other.test"}


def test_network_places_servers_inside_the_block_and_the_canary_outside(world: World) -> None:
    net = Network(77, 8080)
    allowed = ipaddress.ip_network(net.allow_net)
    addresses = [net.address_of(slot) for slot in range(world.n_slots)]
    assert len(set(addresses)) == world.n_slots
    assert all(ipaddress.ip_address(a) in allowed for a in addresses)
    assert ipaddress.ip_address(net.dns_host) in allowed
    assert ipaddress.ip_address(net.canary_address) not in allowed
    assert all(net.slot_of(net.address_of(s)) == s for s in (0, 253, 254, 3000))
    assert net.slot_of(net.canary_address) == CANARY_SLOT
    assert net.slot_of("127.78.0.1") is None and net.slot_of(net.dns_host) is None


def test_canary_spellings_all_mean_the_canary_address() -> None:
    net = Network(77, 8080)
    spellings = net.canary_spellings()
    assert len(set(spellings)) == 4
    for spelled in spellings:
        host, _, port = spelled.rpartition(":")
        assert port == "8080"
        assert socket.inet_ntoa(socket.inet_aton(host)) == net.canary_address
    assert all(":" not in s for s in Network(77, 80).canary_spellings())


def test_bench_preset_fits_in_one_block() -> None:
    from courtier.simweb.world import SIZE_PRESETS

    world = build_world(SIZE_PRESETS["bench"])
    assert len(world.seed_hosts) == 2002
    Network(64, 80).address_of(world.n_slots - 1)
