"""The fuzzer's shapes over loopback: each answers with the headers it promises (generic stacks,
a platform's own caches with no CDN's values, a CDN edge's CDN-shaped values, a brand),
redirects as its ground truth says, and serves its media where it lives."""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import aiohttp
import pytest
from simweb_helpers import Answer, Client, logged

from courtier.simweb import SimWeb, Site, SiteKind, World, build_world
from courtier.simweb.audit import audit_records
from courtier.simweb.layers import brand_not_found, edge_error
from courtier.simweb.world import fuzz_params

SEEDS = (1, 2, 3, 4, 5)
# What a real CDN's values look like: Fastly's cache-<pop><n>-<POP>, a ray id <hex>-<IATA>.
CDN_SERVED_BY = re.compile(r"cache-[a-z]+\d+-[A-Z]+")
RAY = re.compile(r"[0-9a-f]{16}-[A-Z]{3}")


@pytest.fixture(scope="module")
def worlds() -> dict[int, World]:
    return {seed: build_world(fuzz_params(seed)) for seed in SEEDS}


def _find(worlds: dict[int, World], test: Callable[[Site], bool]) -> Iterator[tuple[World, Site]]:
    for world in worlds.values():
        for site in world.sites.values():
            if site.is_seed and test(site):
                yield world, site


@contextlib.asynccontextmanager
async def _serving(world: World, tmp_path: Path) -> AsyncIterator[Client]:
    async with (
        SimWeb(world, log_path=tmp_path / "requests.jsonl") as web,
        aiohttp.ClientSession() as session,
    ):
        yield Client(web, session)


def _values(answer: Answer, name: str) -> list[str]:
    return [v for k, v in answer.raw_headers if k.lower() == name.lower()]


async def test_a_generic_platform_answers_its_stack_and_nothing_distinctive(
    worlds: dict[int, World], tmp_path: Path
) -> None:
    world, tenant = next(_find(worlds, lambda s: s.shape == "generic-platform"))
    group = [s for s in world.sites.values() if s.origin == tenant.origin and s.is_seed]
    async with _serving(world, tmp_path) as client:
        homes = set()
        for site in group[:3]:
            for target in ("/robots.txt", "/", "/no/such/page"):
                answer = await client.get(site.host, target)
                assert answer.status in (200, 404, 301, 302, 307, 308)
                assert _values(answer, "Server"), site.host
                for value in _values(answer, "X-Served-By"):
                    assert tenant.front is not None and value in tenant.front.servers
                    assert not CDN_SERVED_BY.fullmatch(value), value
                assert not any(RAY.fullmatch(v) for _, v in answer.raw_headers)
                assert not any(k.lower().startswith("x-cache") for k, _ in answer.raw_headers)
                if target == "/":  # one stack: every tenant's home page says the same names
                    homes.add(frozenset(k.lower() for k, _ in answer.raw_headers))
        assert len(homes) == 1


async def test_a_platforms_own_caches_send_cache_headers_with_no_cdns_values(
    worlds: dict[int, World], tmp_path: Path
) -> None:
    cached = list(_find(worlds, lambda s: s.shape == "cached-platform" and s.front is not None))
    world, tenant = cached[0]
    assert tenant.front is not None
    async with _serving(world, tmp_path) as client:
        answers = [await client.get(tenant.host, t) for t in ("/", "/item/2", "/list/1")]
    for answer in answers:
        sent = [k.lower() for k, _ in answer.raw_headers]
        for header in tenant.front.headers:
            assert header in sent, header
        for value in _values(answer, "X-Cache"):
            assert re.fullmatch(r"(HIT|MISS)( from \S+)?", value), value
        for value in _values(answer, "X-Served-By"):
            assert value in tenant.front.servers and not CDN_SERVED_BY.fullmatch(value)
        for value in _values(answer, "X-Varnish"):
            assert re.fullmatch(r"\d{9}( \d{9})?", value), value
        for value in _values(answer, "Via"):
            assert "varnish" in value or "squid" in value
        assert not any(RAY.fullmatch(v) for _, v in answer.raw_headers)
    # Whether a URL is a hit is the URL's: every tenant of the platform varies alike.
    verdicts = {a.headers.get("X-Cache") for a in answers if "X-Cache" in a.headers}
    assert verdicts <= {f"HIT{tenant.front.cache_from}", f"MISS{tenant.front.cache_from}"}


async def test_a_cdn_edge_adds_cdn_shaped_headers_and_answers_strangers_hosts_alone(
    worlds: dict[int, World], tmp_path: Path
) -> None:
    for world in worlds.values():
        async with _serving(world, tmp_path) as client:
            for edge in world.cdn_edges:
                behind = [s for s in world.sites.values() if s.is_seed and s.slots == edge.slots]
                if not behind:
                    continue
                site = behind[0]
                home = await client.get(site.host, "/")
                assert home.status == 200 and f"Welcome to {site.host}" in home.text
                if "served-by" in edge.headers:
                    assert f"cache-sim1-{edge.code}" in _values(home, "X-Served-By")
                if "ray" in edge.headers:
                    assert re.fullmatch(r"[0-9a-f]{16}-SIM", home.headers[f"{edge.code}-Ray"])
                if "via" in edge.headers:
                    assert f"1.1 {edge.product}" in _values(home, "Via")
                if "server" in edge.headers:
                    assert _values(home, "Server") == [edge.product]
                if "x-cache" in edge.headers:
                    first = await client.get(site.host, "/img/2.jpg")
                    again = await client.get(site.host, "/img/2.jpg")
                    assert "MISS" in _values(first, "X-Cache") and "HIT" in _values(
                        again, "X-Cache"
                    )
                address = client.web.network.address_of(edge.slots[-1])
                for host in ("nowhere.test", edge.name):
                    answer = await client.get(host, "/", address=address)
                    assert answer.status == edge.error_status and answer.body == edge_error(edge)


async def test_strangers_with_distinctive_backends_show_a_brand_each(
    worlds: dict[int, World], tmp_path: Path
) -> None:
    world, _ = next(_find(worlds, lambda s: s.shape == "cdn-stranger" and s.brand is not None))
    strangers = [
        s for s in world.sites.values() if s.kind is SiteKind.CDN_SITE and s.brand is not None
    ]
    assert len({s.brand.name for s in strangers if s.brand}) == len(strangers)
    async with _serving(world, tmp_path) as client:
        for stranger in strangers[:4]:
            assert stranger.brand is not None
            home = await client.get(stranger.host, "/")
            robots = await client.get(stranger.host, "/robots.txt")
            name = stranger.brand.name
            assert any(name in k or name == v for k, v in home.raw_headers), stranger.host
            carried = any(name in k or name == v for k, v in robots.raw_headers)
            assert carried == stranger.brand.everywhere
            missing = await client.get(stranger.host, "/no/such/page")
            if stranger.brand.not_found:
                assert missing.body == brand_not_found(stranger.brand)
                assert stranger.host.encode() not in missing.body


async def test_a_shared_hosting_machine_runs_one_web_server_for_unrelated_sites(
    worlds: dict[int, World], tmp_path: Path
) -> None:
    world, site = next(_find(worlds, lambda s: s.shape == "shared-hosting"))
    machine = [s for s in world.sites.values() if s.is_seed and s.origin == site.origin]
    async with _serving(world, tmp_path) as client:
        servers = {tuple(_values(await client.get(s.host, "/item/1"), "Server")) for s in machine}
    assert len(servers) == 1 and all(servers.pop())
    assert len({s.slots for s in machine}) == 1


async def test_redirects_answer_as_the_ground_truth_says(
    worlds: dict[int, World], tmp_path: Path
) -> None:
    world, site = next(_find(worlds, lambda s: s.redirect_to is not None))
    async with _serving(world, tmp_path) as client:
        moved = await client.get(site.host, "/item/3?x=1")
        assert moved.status == site.redirect_status
        www = client.web.network.origin_url(site.redirect_to or "")
        assert moved.headers["Location"] == f"{www}/item/3?x=1"
        redirecting = [s for s in world.sites.values() if s.robots_redirect]
        for source in redirecting:
            answer = await client.get(source.host, "/robots.txt")
            target = world.sites[source.robots_redirect or ""]
            assert answer.status == source.redirect_status in (301, 302, 307, 308)
            assert answer.headers["Location"] == (
                f"{client.web.network.origin_url(target.host)}/robots.txt"
            )
            there = await client.get(target.host, "/robots.txt")
            assert there.status == 200 and there.text == source.robots_text


async def test_media_lives_where_the_ground_truth_says(
    worlds: dict[int, World], tmp_path: Path
) -> None:
    world, media, vanity = next(
        (world, media, vanity)
        for world, media in _find_media(worlds, SiteKind.PLATFORM_MEDIA)
        for _, vanity in _find_media({0: world}, SiteKind.IMGSVC)
    )
    tenant = next(s for s in world.sites.values() if s.media_host == media.host)
    async with _serving(world, tmp_path) as client:
        image = await client.get(media.host, f"/{tenant.host}/img/1.jpg")
        assert image.status == 200 and image.headers["Content-Type"] == "image/jpeg"
        stranger = next(h for h in world.seed_hosts if world.sites[h].origin != media.origin)
        assert (await client.get(media.host, f"/{stranger}/img/1.jpg")).status == 404
        first = await client.get(vanity.host, "/w_320/img/3.jpg")
        assert first.status == 200
        records = await logged(client.web)
    report = audit_records(records, world, allow_media=True)
    figures = {o.origin: o for o in report.origins}
    assert figures[media.origin].media_requests == 2  # both charged to the platform


def _find_media(worlds: dict[int, World], kind: SiteKind) -> Iterator[tuple[World, Site]]:
    for world in worlds.values():
        for site in world.sites.values():
            if site.kind is kind and site.shape:
                yield world, site
