"""Single-page apps in the world: their sites, the twin, the hanging one, the script host."""

from __future__ import annotations

import dataclasses
import json

import pytest
from dnslib import QTYPE
from simweb_helpers import REALWEB, SMALL, SPA

from courtier.simweb import Behaviour, Network, SiteKind, World, build_world
from courtier.simweb.dns import DnsAnswerer
from courtier.simweb.world import (
    SEED_KINDS,
    SIZE_PRESETS,
    THIRD_PARTY_SCRIPT_HOST,
    WorldParams,
    request_cost,
)

NET = Network(100, 8080)


@pytest.fixture(scope="module")
def spa_world() -> World:
    return build_world(SPA)


def test_spa_sites_add_to_a_world_and_change_none_of_its_older_sites() -> None:
    plain = build_world(REALWEB)
    shaped = build_world(dataclasses.replace(REALWEB, n_spa=3, spa_twin=1, spa_hang=1))
    assert all(shaped.sites[host] == site for host, site in plain.sites.items())
    assert shaped.seed_hosts[: len(plain.seed_hosts)] == plain.seed_hosts
    for name in ("a_records", "cnames", "ptr_names", "rebinding"):
        old, new = getattr(plain.dns, name), getattr(shaped.dns, name)
        assert all(new[key] == value for key, value in old.items()), name
    assert (plain.buckets, plain.edge_slots) == (shaped.buckets, shaped.edge_slots)
    added = [shaped.sites[h] for h in shaped.sites if h not in plain.sites]
    kinds = [s.kind for s in added]
    assert kinds == [SiteKind.SPA] * 3 + [SiteKind.SPA_TWIN, SiteKind.THIRD_PARTY]
    assert shaped.n_slots == plain.n_slots + len(added)
    assert [s.slots for s in added] == [(plain.n_slots + i,) for i in range(len(added))]


def test_spa_sites_are_seed_sites_each_its_own_origin_and_server(spa_world: World) -> None:
    apps = spa_world.sites_of_kind(SiteKind.SPA)
    assert len(apps) == 3 and {SiteKind.SPA, SiteKind.SPA_TWIN} <= SEED_KINDS
    spa, twin = spa_world.spa_twin()
    assert spa is apps[0] and twin.kind is SiteKind.SPA_TWIN
    for site in (*apps, twin):
        assert site.is_seed and site.host in spa_world.seed_hosts
        assert site.origin == site.host and len(site.slots) == 1
        assert spa_world.dns.a_records[site.host] == site.slots
        sharing = [s.host for s in spa_world.sites.values() if set(s.slots) & set(site.slots)]
        assert sharing == [site.host]
        assert site.bucket is None and site.media_host is None
    assert all(s.host.startswith("app-") and s.host.endswith(".test") for s in apps)
    # The twin is named after its app and serves the app's catalogue.
    assert twin.host == "twin-" + spa.host.removeprefix("app-")
    assert (twin.twin_of, twin.catalogue, spa.catalogue) == (spa.host, spa.host, spa.host)
    assert twin.robots_text == spa.robots_text
    assert spa_world.sites_with(Behaviour.RENDER_HANG) == apps[-1:]


def test_the_last_spa_sites_hang_and_the_twin_is_optional() -> None:
    world = build_world(dataclasses.replace(SMALL, n_spa=4, spa_hang=2))
    apps = world.sites_of_kind(SiteKind.SPA)
    assert [Behaviour.RENDER_HANG in s.behaviours for s in apps] == [False, False, True, True]
    assert not world.sites_of_kind(SiteKind.SPA_TWIN)
    with pytest.raises(LookupError, match="twin"):
        world.spa_twin()


def test_the_third_party_script_host_resolves_and_is_no_seed_host(spa_world: World) -> None:
    site = spa_world.sites[THIRD_PARTY_SCRIPT_HOST]
    assert site.kind is SiteKind.THIRD_PARTY and not site.is_seed
    assert THIRD_PARTY_SCRIPT_HOST not in spa_world.seed_hosts
    assert spa_world.site_of_host(THIRD_PARTY_SCRIPT_HOST.upper() + ".:8080") is site
    _, records = DnsAnswerer(spa_world, NET).answer(THIRD_PARTY_SCRIPT_HOST, QTYPE.A)
    assert [str(r.rdata) for r in records] == [NET.address_of(site.slots[0])]
    assert spa_world.sites_of_kind(SiteKind.THIRD_PARTY) == (site,)
    assert THIRD_PARTY_SCRIPT_HOST not in build_world(SMALL).sites  # only with SPA sites


def test_request_costs_of_spa_paths(spa_world: World) -> None:
    spa, twin = spa_world.spa_twin()
    paths = (
        "/robots.txt",
        "/static/app.js",
        "/static/app.css",
        "/api/list/1",
        "/api/item/3",
        "/",
        "/list/2",
        "/item/3",
        "/about",
    )
    assert [request_cost(spa, p) for p in paths] == [1, 1, 1, 4, 2, 4, 4, 2, 2]
    assert [request_cost(twin, p) for p in ("/", "/list/1", "/item/1")] == [4, 4, 2]
    tracker = spa_world.sites[THIRD_PARTY_SCRIPT_HOST]
    assert request_cost(tracker, "/t.js") == 1


def test_spa_params_round_trip_and_are_checked() -> None:
    assert WorldParams.from_json(json.loads(json.dumps(SPA.to_json()))) == SPA
    older = {k: v for k, v in SPA.to_json().items() if not k.startswith(("n_spa", "spa_"))}
    assert WorldParams.from_json(older) == dataclasses.replace(SPA, n_spa=0, spa_twin=0, spa_hang=0)
    for bad in ({"spa_twin": 1}, {"n_spa": 2, "spa_hang": 3}, {"n_spa": 1, "spa_twin": 2}):
        with pytest.raises(ValueError, match="spa"):
            build_world(dataclasses.replace(SMALL, **bad))


def test_the_spa_preset_is_a_small_world_with_every_spa_shape() -> None:
    params = SIZE_PRESETS["spa"]
    assert (params.n_spa, params.spa_twin, params.spa_hang) == (3, 1, 1)
    world = build_world(params)
    kinds = [world.sites[h].kind for h in world.seed_hosts]
    assert kinds.count(SiteKind.SPA) == 3 and kinds.count(SiteKind.SPA_TWIN) == 1
    assert kinds.count(SiteKind.STANDALONE) + kinds.count(SiteKind.CNAME_TENANT) <= 5
    assert len(world.sites_with(Behaviour.RENDER_HANG)) == 1
    # A rendering crawl of one app: every shell, its API answer, the static files, robots.txt.
    spa = world.sites_of_kind(SiteKind.SPA)[0]
    pages = ["/", *(f"/list/{n}" for n in range(1, params.n_lists + 1))]
    pages += [f"/item/{n}" for n in range(1, params.n_items + 1)]
    paths = ["/robots.txt", "/static/app.js", "/static/app.css", "/api/list/1"]
    paths += [*pages, *(f"/api{p}" for p in pages[1:])]
    seconds = sum(request_cost(spa, p) for p in paths) / params.origin_budget
    assert len(paths) < 30 and seconds < 35  # at 1 request/s and the origin budget
