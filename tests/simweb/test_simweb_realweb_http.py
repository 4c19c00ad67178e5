"""The real web's shapes over loopback: the edge's headers and error page, the stacks behind it,
platform C, platform A's media host, vanity media hosts and the image service's modes."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from simweb_helpers import REALWEB, Client, logged

from courtier.simweb import SimWeb, SiteKind, World, build_world
from courtier.simweb.stacks import EDGE_ERROR, PLATFORM_C_404, stack_not_found
from courtier.simweb.world import (
    IMGSVC_CACHE,
    IMGSVC_HOST,
    IMGSVC_MIXED,
    IMGSVC_STORE,
    PLATFORM_A_MEDIA_HOST,
    STACKS,
)

# What each stack's home page says besides the edge: (header, value or a pattern of it).
STACK_HEADERS = {
    "nginx-php": [("Server", r"nginx/1\.24\.0"), ("X-Powered-By", r"PHP/8\.2\.12")],
    "apache-php": [("Server", r"Apache/2\.4\.58 \(Ubuntu\)"), ("X-Powered-By", r"PHP/8\.1\.2-.*")],
    "iis-aspnet": [("Server", r"Microsoft-IIS/10\.0"), ("X-AspNet-Version", r"4\.0\.30319")],
    "express": [("X-Powered-By", "Express")],
    "rails": [("X-Runtime", r"0\.\d{6}"), ("X-Request-Id", "[0-9a-f-]{36}")],
    "django": [("Server", "gunicorn"), ("X-Frame-Options", "DENY")],
    "caddy": [("Server", "Caddy")],
    "wordpress": [("X-Pingback", r"http://.*/xmlrpc\.php"), ("Link", ".*wp-json.*")],
}
STACK_COOKIES = {
    "nginx-php": "PHPSESSID",
    "apache-php": "PHPSESSID",
    "iis-aspnet": "ASP.NET_SessionId",
    "express": "connect.sid",
    "rails": "_session_id",
    "django": "csrftoken",
}


@pytest.fixture(scope="module")
def realweb() -> World:
    return build_world(REALWEB)


@pytest.fixture
async def shaped(realweb: World, tmp_path: Path) -> AsyncIterator[Client]:
    async with (
        SimWeb(realweb, log_path=tmp_path / "requests.jsonl") as web,
        aiohttp.ClientSession() as session,
    ):
        yield Client(web, session)


def _of(world: World, kind: SiteKind) -> list[str]:
    return [h for h, s in world.sites.items() if s.kind is kind]


def _edge_headers_on(headers: dict[str, str]) -> None:
    assert headers["Via"] == "1.1 quickserve"
    assert re.fullmatch(r"cache-sim[12]-QS", headers["X-Served-By"])
    assert re.fullmatch(r"[0-9a-f]{16}-SIM", headers["QS-Ray"])


async def test_each_stack_answers_with_its_headers_behind_the_edges(
    shaped: Client, realweb: World
) -> None:
    sites = {realweb.sites[h].stack: h for h in reversed(_of(realweb, SiteKind.EDGE_SITE))}
    assert set(sites) == set(STACKS)
    rays = set()
    for stack, host in sites.items():
        assert stack is not None
        home = await shaped.get(host, "/")
        assert home.status == 200 and f"Welcome to {host}" in home.text, stack
        _edge_headers_on(home.headers)
        assert home.headers["X-Cache"] == "MISS" and "Age" not in home.headers
        rays.add(home.headers["QS-Ray"])
        lower = {name.lower(): value for name, value in home.headers.items()}
        for name, pattern in STACK_HEADERS[stack]:
            assert re.fullmatch(pattern, lower[name.lower()]), (stack, name)
        if stack in STACK_COOKIES:
            assert home.headers["Set-Cookie"].startswith(f"{STACK_COOKIES[stack]}="), stack
        missing = await shaped.get(host, "/no/such/page")
        assert missing.status == 404
        assert missing.body == stack_not_found(stack, "/no/such/page")[0], stack
        assert host.encode() not in missing.body, stack
        _edge_headers_on(missing.headers)
        image = await shaped.get(host, "/img/2.jpg")
        assert image.headers["Content-Type"] == "image/jpeg"
        assert "Set-Cookie" not in image.headers, stack  # the web server's answer, no app's
        again = await shaped.get(host, "/img/2.jpg")
        assert again.headers["X-Cache"] == "HIT" and "Age" in again.headers
        rays.add(again.headers["QS-Ray"])
    assert len(rays) == 2 * len(sites)  # a new ray on every answer


async def test_a_stack_serves_one_stock_not_found_page_for_every_site(
    shaped: Client, realweb: World
) -> None:
    by_stack: dict[str | None, list[str]] = {}
    for host in _of(realweb, SiteKind.EDGE_SITE):
        by_stack.setdefault(realweb.sites[host].stack, []).append(host)
    stack, hosts = next((s, h) for s, h in by_stack.items() if len(h) > 1)
    bodies = {(await shaped.get(h, "/missing")).body for h in hosts}
    assert len(bodies) == 1, stack


async def test_the_edge_answers_an_unknown_host_with_its_own_error(
    shaped: Client, realweb: World
) -> None:
    edge = shaped.web.network.address_of(realweb.edge_slots[1])
    standalone = _of(realweb, SiteKind.STANDALONE)[0]
    for host in ("nowhere.test", standalone, "edge.quickserve.test"):
        answer = await shaped.get(host, "/", address=edge)
        assert answer.status == 421 and answer.body == EDGE_ERROR, host
        assert answer.headers["Server"] == "quickserve"
        _edge_headers_on(answer.headers)
        assert answer.headers["X-Served-By"] == "cache-sim2-QS"
    # Elsewhere an unknown host gets the ordinary 404.
    assert (await shaped.get(standalone, "/", host_header="nowhere.test")).status == 404


async def test_platform_c_tenants_share_headers_and_one_not_found_page(
    shaped: Client, realweb: World
) -> None:
    first, second = _of(realweb, SiteKind.EDGE_TENANT)[:2]
    assert shaped.web.address_of(first) == shaped.web.address_of(second)
    answers = [await shaped.get(h, "/nothing-here") for h in (first, second)]
    assert [a.status for a in answers] == [404, 404]
    assert answers[0].body == answers[1].body == PLATFORM_C_404
    for answer in answers:
        _edge_headers_on(answer.headers)
        assert answer.headers["Powered-By"] == "Shopwise"
        assert re.fullmatch(r"pod[1-4]", answer.headers["X-Shopwise-Stack"])
        assert answer.headers["Set-Cookie"].startswith("_shopwise_s=")
    ids = {a.headers["X-Shopwise-Tenant"] for a in answers}
    assert len(ids) == 2 and all(i.isdigit() for i in ids)


async def test_platform_a_media_host_serves_its_tenants_images(
    shaped: Client, realweb: World
) -> None:
    tenant = realweb.sites[_of(realweb, SiteKind.CNAME_TENANT)[0]]
    home = await shaped.get(tenant.host, "/")
    (src,) = re.findall(rf'src="http://{re.escape(PLATFORM_A_MEDIA_HOST)}(/[^"]+)"', home.text)
    assert src.startswith(f"/{tenant.label}/img/")
    address = shaped.web.network.address_of(tenant.slots[1])
    image = await shaped.get(PLATFORM_A_MEDIA_HOST, src, address=address)
    assert image.status == 200 and image.headers["Content-Type"] == "image/jpeg"
    assert image.headers["Server"] == "nginx" and "X-Cache" not in image.headers
    assert (await shaped.get(PLATFORM_A_MEDIA_HOST, "/nobody/img/1.jpg")).status == 404
    standalone = realweb.sites[_of(realweb, SiteKind.STANDALONE)[0]]
    assert (await shaped.get(PLATFORM_A_MEDIA_HOST, f"/{standalone.label}/img/1.jpg")).status == 404


async def test_vanity_media_hosts_are_served_by_the_cdn_or_the_store(
    shaped: Client, realweb: World
) -> None:
    vanity = [s for s in realweb.sites.values() if s.media_host]
    cdn = next(s for s in vanity if realweb.sites[s.media_host or ""].kind is SiteKind.CDN)
    store = next(s for s in vanity if realweb.sites[s.media_host or ""].kind is SiteKind.STORE)
    assert cdn.media_host and store.media_host
    first = await shaped.get(cdn.media_host, "/img/3.jpg")
    assert first.status == 200 and first.headers["X-Cache"] == "MISS"
    distribution = realweb.dns.cnames[cdn.media_host]
    again = await shaped.get(distribution, "/img/3.jpg")  # one distribution, one cache
    assert again.headers["X-Cache"] == "HIT"
    stored = await shaped.get(store.media_host, "/img/3.jpg")
    assert stored.status == 200 and stored.headers["Server"] == "SimStore"
    assert (await shaped.get(store.media_host, "/img/99.jpg")).status == 404
    records = await logged(shaped.web)
    assert [r.cache for r in records[:2]] == ["MISS", "HIT"]
    assert records[2].bucket == store.bucket and records[2].host == store.media_host


async def test_the_image_service_is_a_cache_for_some_customers_and_a_store_for_others(
    shaped: Client, realweb: World
) -> None:
    def customer(mode: str) -> str:
        sites = (realweb.sites[h] for h in realweb.seed_hosts)
        return next(s.label for s in sites if s.imgsvc_mode == mode)

    async def cache_of(label: str, n: int) -> str | None:
        answer = await shaped.get(IMGSVC_HOST, f"/{label}/w_320/img/{n}.jpg")
        assert answer.status == 200
        return answer.headers.get("X-Cache")

    assert await cache_of(customer(IMGSVC_CACHE), 1) == "MISS"
    assert await cache_of(customer(IMGSVC_STORE), 1) is None
    assert await cache_of(customer(IMGSVC_STORE), 1) is None  # no cache, not even later
    mixed = customer(IMGSVC_MIXED)
    assert [await cache_of(mixed, n) for n in (1, 2, 3, 1)] == ["MISS", None, "MISS", "HIT"]
