"""Routing by Host, page classes, media services and the canary, over real loopback sockets."""

from __future__ import annotations

import re

from simweb_helpers import Client, logged

from courtier.simweb import Network, SimWeb, SiteKind, World
from courtier.simweb.pages import PLATFORM_B_404, PageRenderer
from courtier.simweb.world import CDN_HOST, IMGSVC_HOST, STORE_HOST, Behaviour


def _tenants(world: World, kind: SiteKind) -> list[str]:
    return [s.host for s in world.sites.values() if s.kind is kind]


async def test_one_address_serves_each_tenant_its_own_site(client: Client, world: World) -> None:
    first, second = _tenants(world, SiteKind.HEADER_TENANT)[:2]
    address = client.web.address_of(first)
    assert client.web.address_of(second) == address
    a = await client.get(first, "/", address=address)
    b = await client.get(second, "/", address=address)
    assert a.status == b.status == 200
    assert f"Welcome to {first}" in a.text and f"Welcome to {second}" in b.text


async def test_any_spelling_of_the_host_header_routes_to_the_site(client: Client) -> None:
    host = client.web.world.seed_hosts[-4]
    for spelled in (host.upper(), host + ".", f"{host}:80", f"{host}:{client.web.port}"):
        answer = await client.get(host, "/list/1", host_header=spelled)
        assert answer.status == 200 and "Catalogue page 1" in answer.text, spelled


async def test_unknown_host_and_wrong_server_get_404(client: Client, world: World) -> None:
    standalone = [s.host for s in world.sites.values() if s.kind is SiteKind.STANDALONE]
    elsewhere = client.web.address_of(standalone[1])
    assert (await client.get(standalone[0], "/", address=elsewhere)).status == 404
    assert (await client.get(standalone[0], "/", host_header="nowhere.test")).status == 404


async def test_platform_b_gives_itself_away_only_in_headers(client: Client, world: World) -> None:
    first, second = _tenants(world, SiteKind.HEADER_TENANT)[:2]
    a = await client.get(first, "/no-such-page")
    b = await client.get(second, "/no-such-page")
    assert a.status == b.status == 404 and a.body == b.body == PLATFORM_B_404
    for answer in (a, b):
        assert answer.headers["Server"] == "Plinth/2.3"
        assert answer.headers["X-Powered-By"] == "PlinthSites"
        assert answer.headers["Set-Cookie"].startswith("plinth_sid=")


async def test_page_classes_answer_and_unknown_paths_do_not(client: Client) -> None:
    host = client.web.world.site_with(Behaviour.SLOW).host
    expect = {
        "/": 200,
        "/list/1": 200,
        "/list/99": 404,
        "/item/7": 200,
        "/item/0": 404,
        "/search?q=tea&page=2": 200,
        "/search?q=tea&page=9": 404,
        "/img/1.jpg": 200,
        "/img/1.png": 404,
        "/private/account": 200,
        "/calendar/2026/1": 404,
        "/nothing": 404,
    }
    for target, status in expect.items():
        assert (await client.get(host, target)).status == status, target
    image = await client.get(host, "/img/3.jpg")
    assert image.headers["Content-Type"] == "image/jpeg" and image.body.startswith(b"\xff\xd8")


async def test_home_page_links_every_kind_of_trap(client: Client) -> None:
    web = client.web
    host = web.world.site_with(Behaviour.REDIRECT_TO_CANARY).host
    page = (await client.get(host, "/")).text
    links = set(re.findall(r'href="([^"]+)"', page))
    for spelled in web.network.canary_spellings():
        assert f"http://{spelled}/" in links
    assert f"http://{host.upper()}/item/2" in links and f"http://{host}./item/3" in links
    assert f"http://{host}:80/item/4" in links  # the fixture listens on port 80 as root
    assert "/search?q=maps&amp;page=2" in links or any("&amp;page=2" in x for x in links)
    assert "/item/1#reviews" in links
    assert f"http://{web.world.popular_horizon_host}/" in links
    idn = web.world.site_with(Behaviour.IDN)
    assert f"http://{idn.unicode_host}/" in links and f"http://{idn.host}/" in links
    assert "/go/elsewhere" in links
    images = re.findall(r'src="([^"]+)"', page)
    assert any(CDN_HOST in i for i in images) and any(IMGSVC_HOST in i for i in images)
    assert any(STORE_HOST in i for i in images)


async def test_redirect_leads_to_the_canary(client: Client) -> None:
    host = client.web.world.site_with(Behaviour.REDIRECT_TO_CANARY).host
    answer = await client.get(host, "/go/elsewhere")
    assert answer.status == 302
    assert answer.headers["Location"] == f"http://{client.web.network.canary_address}/landing"


async def test_calendar_trap_never_ends(client: Client) -> None:
    host = client.web.world.site_with(Behaviour.CALENDAR_TRAP).host
    target = "/calendar/2026/11"
    for _ in range(4):
        answer = await client.get(host, target)
        assert answer.status == 200
        nxt = re.search(r'href="(/calendar/[^"]+)">Next month', answer.text)
        assert nxt is not None
        target = nxt.group(1)
    assert target == "/calendar/2027/3"


async def test_cdn_misses_first_then_hits_with_age(client: Client) -> None:
    host = client.web.world.seed_hosts[0]
    path = f"/{host}/img/2.jpg"
    first = await client.get(CDN_HOST, path)
    second = await client.get(CDN_HOST, path)
    assert first.status == second.status == 200
    assert first.headers["X-Cache"] == "MISS" and "Age" not in first.headers
    assert second.headers["X-Cache"] == "HIT" and int(second.headers["Age"]) >= 0
    assert (await client.get(CDN_HOST, f"/{host}/img/99.jpg")).status == 404
    resized = f"/{host.split('.')[0]}/w_320/img/2.jpg"
    assert (await client.get(IMGSVC_HOST, resized)).headers["X-Cache"] == "MISS"
    assert (await client.get(IMGSVC_HOST, resized)).headers["X-Cache"] == "HIT"


async def test_store_serves_virtual_hosted_and_path_style(client: Client, web: SimWeb) -> None:
    bucket = next(iter(web.world.buckets))
    virtual = await client.get(f"{bucket}.{STORE_HOST}", "/img/1.jpg")
    path_style = await client.get(STORE_HOST, f"/{bucket}/img/1.jpg")
    assert virtual.status == path_style.status == 200
    assert virtual.body == path_style.body and virtual.headers["Server"] == "SimStore"
    missing = await client.get(STORE_HOST, "/no-such-bucket/img/1.jpg")
    assert missing.status == 404 and b"NoSuchBucket" in missing.body
    assert (await client.get(STORE_HOST, "/robots.txt")).status == 404
    buckets = [r.bucket for r in await logged(web)]
    # The endpoint's own robots.txt is no bucket called "robots.txt".
    assert buckets == [bucket, bucket, "no-such-bucket", None]


async def test_canary_answers_anything_and_logs_it(client: Client, web: SimWeb) -> None:
    canary = web.network.canary_address
    answer = await client.get("whatever.test", "/ssrf", address=canary)
    assert answer.status == 200 and b"canary" in answer.body
    await client.get(web.world.seed_hosts[0], "/")
    records = await logged(web)
    assert [r.canary for r in records] == [True, False]
    assert records[0].server == f"{canary}:{web.port}" and records[0].target == "/ssrf"


async def test_log_records_every_request_with_its_figures(client: Client, web: SimWeb) -> None:
    host = web.world.seed_hosts[1]
    await client.get(host, "/search?q=tea&page=2", ua="rude/1.0")
    await client.get(host.upper() + ".", "/nothing", address=web.address_of(host))
    first, second = await logged(web)
    assert (first.host, first.target, first.status, first.ua) == (
        host,
        "/search?q=tea&page=2",
        200,
        "rude/1.0",
    )
    assert first.start <= first.end and first.bytes > 1000 and first.method == "GET"
    assert second.host == host.upper() + "." and second.status == 404
    assert first.server == f"{web.address_of(host)}:{web.port}"


def test_links_carry_the_port_when_it_is_not_80(world: World) -> None:
    network = Network(100, 8080)
    site = world.site_with(Behaviour.SLOW)
    page = PageRenderer(world, network).render(site, "/", "").body.decode()
    links = re.findall(r'(?:href|src)="(http[^"]+)"', page)
    assert links and all(":8080/" in link for link in links)
    assert f"http://{site.host}:80/" not in page


async def test_seed_urls_name_every_seed_host_once(web: SimWeb) -> None:
    suffix = "" if web.port == 80 else f":{web.port}"
    assert web.seed_urls() == [f"http://{h}{suffix}/" for h in web.world.seed_hosts]
