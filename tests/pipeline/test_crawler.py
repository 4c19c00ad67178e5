"""The crawl engine against a small loopback web, judged from the server's log."""

from __future__ import annotations

import asyncio
import gzip
import itertools
import json
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest
from aiohttp import web

from courtier.config import Config, CrawlSection, FrontierSection, KeyLimits, LimitsSection
from courtier.frontier.base import SiteState
from courtier.frontier.sqlite_store import SqliteFrontier
from courtier.inputs import parse_seed_lines
from courtier.net.guard import Guard
from courtier.net.policy import AddressPolicy
from courtier.net.resolve import StaticResolver
from courtier.pipeline.engine import Engine as Crawler
from courtier.pipeline.stats import CrawlStats
from courtier.sinks.documents import read_documents
from courtier.url import host_of_site
from loopback import serving

INTERVAL = 0.2
TOLERANCE = 0.03
LEAKED_KEY = "AIza" + "aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xYzaB"  # a Google API key's shape
LEAKED_EMAIL = "jane@example.com"


@dataclass
class Web:
    port: int
    hits: list[tuple[float, str, str]] = field(default_factory=list)

    def paths(self, host: str) -> list[str]:
        return [path for _t, h, path in self.hits if h == host]

    def min_gap(self, host: str) -> float:
        times = [t for t, h, _p in self.hits if h == host]
        return min((b - a for a, b in itertools.pairwise(times)), default=1e9)


def _sitemap(root: str, entry: str, locs: list[str]) -> str:
    ns = "http://www.sitemaps.org/schemas/sitemap/0.9"
    items = "".join(f"<{entry}><loc>{loc}</loc></{entry}>" for loc in locs)
    return f'<?xml version="1.0" encoding="UTF-8"?><{root} xmlns="{ns}">{items}</{root}>'


def _page(*links: str) -> web.Response:
    body = "".join(f'<a href="{link}">x</a>' for link in links)
    return web.Response(
        text=f"<html><title>t</title><body>{body}</body></html>", content_type="text/html"
    )


@pytest.fixture
async def loopback_web() -> AsyncIterator[Web]:
    state = Web(port=0)

    async def handler(request: web.Request) -> web.StreamResponse:
        host = request.host.rsplit(":", 1)[0]
        path = request.path_qs
        state.hits.append((time.monotonic(), host, path))
        port = state.port
        if host == "a.test":
            if path == "/robots.txt":
                return web.Response(text="User-agent: *\nDisallow: /private\n")
            if path == "/":
                return _page(
                    "/p1",
                    "/p2?b=2&a=1",
                    "/private/secret",
                    f"http://B.TEST.:{port}/",
                    f"http://outside.test:{port}/landing",
                    "/redirect-out",
                    "mailto:someone@a.test",
                    "http://[::1",
                )
            if path == "/p1":
                return _page("/p2?a=1&b=2#section", "/p1", "/")
            if path == "/redirect-out":
                raise web.HTTPFound(f"http://outside.test:{port}/via-redirect")
            return _page("/")
        if host == "b.test":
            if path == "/robots.txt":
                raise web.HTTPNotFound()
            if path == "/":
                return _page(*(f"/chain/{i}" for i in range(12)))
            return _page()
        if host == "rising.test" and path != "/robots.txt":
            now = time.monotonic()
            recent = [t for t, h, _p in state.hits[:-1] if h == host and t > now - 4.0]
            if len(recent) >= 3:
                return web.Response(status=503, text="overloaded")
            await asyncio.sleep(0.02 + 0.06 * len(recent) ** 2)
            return _page(*(f"/r/{i}" for i in range(30)))
        if host == "maps.test":
            if path == "/robots.txt":
                return web.Response(
                    text=f"User-agent: *\nSitemap: http://maps.test:{port}/index.xml\n"
                )
            if path == "/index.xml":
                return web.Response(
                    text=_sitemap("sitemapindex", "sitemap", [f"http://maps.test:{port}/m.xml.gz"]),
                    content_type="application/xml",
                )
            if path == "/m.xml.gz":
                body = _sitemap(
                    "urlset", "url", [f"http://maps.test:{port}/hidden/{i}" for i in range(3)]
                )
                return web.Response(
                    body=gzip.compress(body.encode()), content_type="application/gzip"
                )
            return _page()
        if host == "news.test" and path != "/robots.txt":
            if path == "/":
                edition = len(state.paths("news.test"))
                return _page(f"/story/{edition}")
            return _page()
        if host == "deep.test" and path != "/robots.txt":
            return _page(*(f"{path.rstrip('/')}/{i}" for i in range(10)))
        if host == "cal.test" and path != "/robots.txt":
            return _page(*(f"/cal/{2000 + i // 12}/{i % 12 + 1}" for i in range(60)))
        if host == "pics.test" and path != "/robots.txt":
            if path == "/":
                return _page(*(f"/p/{i}.jpg" for i in range(6)))
            return _page()  # an HTML page at an image-looking URL
        if host.startswith("busy") and path == "/":
            return web.Response(status=503, text="busy", headers={"Retry-After": "2"})
        if host == "leaky.test":
            if path == "/robots.txt":
                raise web.HTTPNotFound()
            if path == "/":
                raise web.HTTPFound(f"/next?key={LEAKED_KEY}&contact={LEAKED_EMAIL}")
        if host == "down.test":
            if path == "/robots.txt":
                raise web.HTTPInternalServerError()
            return _page()
        return web.Response(status=418, text="should never be fetched")

    async with serving(handler) as state.port:
        yield state


async def run_until(crawler: Crawler, done: Callable[[], bool]) -> CrawlStats:
    """Run ``crawler``, stopped from code once ``done()`` (looked at every 50 ms): its
    duration is then only the limit, for a test that waits for something to happen."""

    async def stop_when_done() -> None:
        while not done():  # noqa: ASYNC110 (what a test waits for is no event of the engine's)
            await asyncio.sleep(0.05)
        crawler.stop()

    watcher = asyncio.create_task(stop_when_done())
    try:
        return await crawler.run()
    finally:
        watcher.cancel()


def make_crawler(
    tmp_path: Path,
    web_: Web,
    duration: float,
    origin_rate: float = 1000.0,
    hosts: tuple[str, ...] = ("a.test", "b.test", "down.test"),
    interval: float = INTERVAL,
    frontier: FrontierSection | None = None,
    overrides: tuple[str, ...] = (),
) -> Crawler:
    # All sites of this web share 127.0.0.1, hence one origin: a generous origin rate keeps
    # these tests about the site rules; the origin test below sets a real one.
    config = Config(
        crawl=replace(CrawlSection(), flush_interval=0.05),
        limits=replace(
            LimitsSection(),
            site=KeyLimits(1.0 / interval, slot_width=0.05),
            origin=KeyLimits(origin_rate, slot_width=0.05),
            overrides=overrides,
        ),
        frontier=frontier or FrontierSection(),
    )
    policy = AddressPolicy(allow=["127.0.0.1/32"])
    names = [*hosts, "outside.test"]
    guard = Guard(policy, StaticResolver({name: ["127.0.0.1"] for name in names}))
    seeds, errors = parse_seed_lines([f"http://{host}:{web_.port}/" for host in hosts] + ["# c"])
    assert not errors
    return Crawler(
        config,
        store_path=tmp_path / "frontier.sqlite3",
        out_dir=tmp_path,
        guard=guard,
        address_allowed=lambda address: policy.check(address).allowed,
        seeds=seeds,
        duration=duration,
    )


async def test_crawl_stays_in_the_seed_obeys_robots_and_spaces_requests(tmp_path, loopback_web):
    a_pages = {"/robots.txt", "/", "/p1", "/p2?b=2&a=1", "/redirect-out"}
    crawler = make_crawler(tmp_path, loopback_web, duration=20.0)

    def all_in() -> bool:
        urls = {d["url"] for d in read_documents(tmp_path)}
        a_test = f"http://a.test:{loopback_web.port}"
        return (
            a_pages <= set(loopback_web.paths("a.test"))
            and "/" in loopback_web.paths("b.test")
            and crawler.stats.refused.get("robots", 0) >= 1
            and {f"{a_test}/", f"{a_test}/p1", f"{a_test}/redirect-out"} <= urls
        )

    # Stopped once every page of a.test and b.test's home page are in (not at a fixed 4 s).
    stats = await run_until(crawler, all_in)

    assert loopback_web.paths("outside.test") == []
    assert "/private/secret" not in loopback_web.paths("a.test")
    assert loopback_web.paths("down.test") == ["/robots.txt"]  # robots 500: nothing else
    for host in ("a.test", "b.test"):
        assert loopback_web.min_gap(host) >= INTERVAL - TOLERANCE, host
    # Query order, fragment and host spelling do not produce second fetches.
    a_paths = loopback_web.paths("a.test")
    assert len(a_paths) == len(set(a_paths))
    assert sorted(a_paths) == sorted(a_pages)
    assert "/" in loopback_web.paths("b.test")
    assert stats.internal_errors == 0
    assert stats.refused["robots"] == 1
    assert stats.bad_links >= 2  # mailto: and the broken IPv6 literal

    store = SqliteFrontier(tmp_path / "frontier.sqlite3")
    horizon = dict(store.horizon_sites())
    assert horizon.get(f"outside.test:{loopback_web.port}") == 2  # the link and the redirect
    assert f"outside.test:{loopback_web.port}" in store.sites_in_state(SiteState.HORIZON)
    port = loopback_web.port
    edges = {(e.src, e.dst) for e in store.host_links()}
    assert (f"a.test:{port}", f"b.test:{port}") in edges  # seed-to-seed links count for ranking
    store.close()

    documents = list(read_documents(tmp_path))
    by_url = {d["url"]: d for d in documents}
    home = by_url[f"http://a.test:{loopback_web.port}/"]
    assert home["status"] == 200 and home["title"] == "t"
    assert by_url[f"http://a.test:{loopback_web.port}/redirect-out"]["status"] == 302


async def test_a_redirects_location_is_redacted_in_documents_jsonl(tmp_path, loopback_web):
    # robots.txt, then "/" an interval later: 3 s leave room for a slow start under load
    await make_crawler(tmp_path, loopback_web, duration=3.0, hosts=("leaky.test",)).run()
    documents = list(read_documents(tmp_path))
    text = json.dumps(documents, ensure_ascii=False)
    assert LEAKED_KEY not in text and LEAKED_EMAIL not in text
    assert "jane%40example.com" not in text
    homes = [d for d in documents if d["url"] == f"http://leaky.test:{loopback_web.port}/"]
    assert len(homes) == 1, text
    (home,) = homes
    assert home["status"] == 302
    assert home["location"] == "/next?key=[REDACTED:google-api-key]&contact=[REDACTED:email]"


async def test_a_stopped_crawl_resumes_without_refetching(tmp_path, loopback_web):
    def chain() -> list[str]:
        return [p for p in loopback_web.paths("b.test") if p.startswith("/chain/")]

    # Stopped from code once two of the 12 chain links (found by parsing "/") are fetched:
    # at a fixed 2 s, a loaded machine (a parse worker slow to start) stopped it before any.
    first_run = make_crawler(tmp_path, loopback_web, duration=20.0)
    await run_until(first_run, lambda: len(chain()) >= 2)
    first = loopback_web.paths("b.test")
    assert 2 < len(first) < 14, first  # stopped part-way through the chain
    second_run = make_crawler(tmp_path, loopback_web, duration=20.0)
    await run_until(second_run, lambda: len(set(chain())) == 12)
    pages = [p for p in loopback_web.paths("b.test") if p != "/robots.txt"]
    assert sorted(pages) == sorted(["/", *(f"/chain/{i}" for i in range(12))])
    per_path: dict[str, int] = defaultdict(int)
    for path in pages:
        per_path[path] += 1
    assert max(per_path.values()) == 1
    # The second run started at once, yet kept the spacing the first run had left on its clocks.
    assert loopback_web.min_gap("b.test") >= INTERVAL - TOLERANCE


def test_site_keys_split_into_hosts():
    assert host_of_site("a.test") == "a.test"
    assert host_of_site("a.test:8080") == "a.test"
    assert host_of_site("[2001:db8::1]:8080") == "2001:db8::1"
    assert host_of_site("::1") == "::1"


async def test_sites_on_one_address_share_the_origin_budget(tmp_path, loopback_web):
    rate = 10.0  # cost units per second for the shared origin
    stats = await make_crawler(tmp_path, loopback_web, duration=3.0, origin_rate=rate).run()
    starts = sorted(t for t, host, _p in loopback_web.hits)
    costs = {"/robots.txt": 1}
    units = [costs.get(p, 4 if p in ("/",) else 2) for _t, _h, p in sorted(loopback_web.hits)]
    # Every 1 s window holds at most the budget plus one request's cost (GCRA's bound).
    for i, start in enumerate(starts):
        window = sum(u for t, u in zip(starts[i:], units[i:], strict=True) if t < start + 1.0)
        assert window <= rate * 1.0 + 4, (start, window)
    assert stats.slots >= len(loopback_web.hits)
    assert stats.missed_slots <= 1


async def test_a_site_with_limits_of_its_own_is_crawled_at_them(tmp_path, loopback_web):
    """``[limits] overrides``: a site that asked to be crawled slower gets its own spacing,
    from its first request on, and keeps it after its answers were good; the others keep
    theirs."""
    crawler = make_crawler(
        tmp_path, loopback_web, duration=20.0, overrides=("site:a.test => rate=2",)
    )
    # Stopped once both sites were asked often enough to show their spacing (a loaded
    # machine takes longer to get there; an idle one waits for nothing).
    await run_until(
        crawler,
        lambda: len(loopback_web.paths("a.test")) >= 4 and len(loopback_web.paths("b.test")) >= 4,
    )
    assert len(loopback_web.paths("a.test")) >= 4
    assert loopback_web.min_gap("a.test") >= 0.5 - TOLERANCE
    assert loopback_web.min_gap("b.test") < 0.5 - TOLERANCE


async def test_several_sites_of_one_origin_pushing_back_pause_the_whole_origin(
    tmp_path, loopback_web
):
    hosts = ("busy1.test", "busy2.test", "b.test")
    stats = await make_crawler(tmp_path, loopback_web, duration=3.5, hosts=hosts).run()
    assert stats.origin_pauses >= 1
    refusals = sorted(t for t, h, p in loopback_web.hits if h.startswith("busy") and p == "/")
    second = refusals[1]
    # (requests already on their way when the pause began may still land just after it)
    during = [(t, h, p) for t, h, p in loopback_web.hits if second + 0.1 < t < second + 1.9]
    assert during == []  # b.test shares the origin: it waits too


async def test_a_site_whose_latency_rises_with_load_is_slowed_before_it_errors(
    tmp_path, loopback_web
):
    crawler = make_crawler(
        tmp_path, loopback_web, duration=9.0, hosts=("rising.test",), interval=1.0
    )
    stats = await crawler.run()
    assert stats.by_status.get("5xx", 0) == 0
    assert stats.latency_slowdowns["site"] >= 1
    assert len(loopback_web.paths("rising.test")) >= 4


async def test_a_page_served_at_an_image_url_is_charged_as_a_page(tmp_path, loopback_web):
    crawler = make_crawler(
        tmp_path, loopback_web, duration=20.0, origin_rate=2.0, hosts=("pics.test",)
    )
    # Stopped once three such pages were corrected (a loaded machine takes longer than 6 s).
    stats = await run_until(crawler, lambda: crawler.stats.cost_corrections >= 3)
    assert stats.cost_corrections >= 2
    starts = [t for t, h, p in loopback_web.hits if h == "pics.test" and p.startswith("/p/")]
    # Booked as images (1 unit: 0.5 s apart at 2 units/s), charged as pages (2 units) after
    # the answer: from the second on, they start 1 s apart.
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert gaps and min(gaps) >= 0.95, gaps


async def test_an_endless_calendar_costs_its_pattern_cap_not_every_month(tmp_path, loopback_web):
    crawler = make_crawler(tmp_path, loopback_web, duration=15.0, hosts=("cal.test",))
    stats = await run_until(crawler, lambda: crawler.stats.trap_capped > 0)  # "/" parsed
    assert stats.trap_capped == 60 - 30  # /cal/{year}/{n}: the volatile cap is 30
    store = SqliteFrontier(tmp_path / "frontier.sqlite3")
    # the root, the pattern's cap, and /sitemap.xml (robots.txt names none)
    assert sum(store.counts()[k] for k in ("queued", "leased", "done")) <= 1 + 30 + 1
    store.close()


async def test_sitemaps_listed_in_robots_feed_discovery_through_an_index_and_gzip(
    tmp_path, loopback_web
):
    crawler = make_crawler(tmp_path, loopback_web, duration=15.0, hosts=("maps.test",))
    hidden = {"/hidden/0", "/hidden/1", "/hidden/2"}
    stats = await run_until(crawler, lambda: hidden <= set(loopback_web.paths("maps.test")))
    paths = loopback_web.paths("maps.test")
    assert {"/index.xml", "/m.xml.gz", *hidden} <= set(paths)
    assert stats.sitemap_links == 4  # one child sitemap, three pages


async def test_a_freshlane_source_is_refetched_and_its_new_links_follow_quickly(
    tmp_path, loopback_web
):
    port = loopback_web.port
    fresh = FrontierSection(freshlane=(f"http://news.test:{port}/",), freshlane_interval=1.0)
    crawler = make_crawler(
        tmp_path, loopback_web, duration=20.0, hosts=("news.test",), frontier=fresh
    )

    def editions() -> list[int]:
        paths = loopback_web.paths("news.test")
        return [i + 1 for i, p in enumerate(paths) if p == "/"]  # the handler's numbering

    def three_editions_and_two_stories() -> bool:
        paths = loopback_web.paths("news.test")
        return len(editions()) >= 3 and all(f"/story/{e}" in paths for e in editions()[:2])

    await run_until(crawler, three_editions_and_two_stories)
    paths = loopback_web.paths("news.test")
    assert paths.count("/") >= 3
    editions = editions()
    for edition in editions[:-1]:  # each edition's story is fetched before the crawl ends
        assert f"/story/{edition}" in paths, (edition, paths)


async def test_surface_mode_caps_the_depth_of_a_site_whose_frontier_outgrows_a_level(
    tmp_path, loopback_web
):
    surface = FrontierSection(surface_levels=("5:1",))
    crawler = make_crawler(
        tmp_path, loopback_web, duration=15.0, hosts=("deep.test",), frontier=surface
    )
    # Two level-1 pages parsed, the ten depth-2 links of each refused.
    stats = await run_until(crawler, lambda: crawler.stats.depth_capped >= 20)
    paths = [p for p in loopback_web.paths("deep.test") if p != "/robots.txt"]
    assert stats.surface_sites == 1
    assert paths and max(p.count("/") for p in paths if p != "/") == 1  # depth 1 at most
    assert stats.depth_capped > 0


async def test_a_restart_keeps_the_retry_after_window_of_the_last_run(tmp_path, loopback_web):
    def refusals() -> list[float]:
        return [t for t, h, p in loopback_web.hits if h == "busy1.test" and p == "/"]

    # Stopped once "/" was refused (503, Retry-After: 2), not at a fixed 1.5 s.
    first = make_crawler(tmp_path, loopback_web, duration=15.0, hosts=("busy1.test",))
    await run_until(first, lambda: bool(refusals()))
    refused = refusals()
    assert refused, loopback_web.hits
    stats = await make_crawler(tmp_path, loopback_web, duration=2.5, hosts=("busy1.test",)).run()
    assert stats.restored_clocks >= 1
    window_end = refused[-1] + 2.0  # Retry-After: 2
    inside = [
        (t, p)
        for t, h, p in loopback_web.hits
        if h == "busy1.test" and refused[-1] < t < window_end - 0.05
    ]
    assert inside == []


async def test_a_restart_starts_no_site_before_its_interval(tmp_path, loopback_web):
    hosts = ("a.test", "b.test", "maps.test", "deep.test")
    first = make_crawler(tmp_path, loopback_web, duration=1.6, hosts=hosts, interval=2.0)
    await first.run()
    ended = {
        host: max(t for t, h, _p in loopback_web.hits if h == host)
        for host in hosts
        if host in {h for _t, h, _p in loopback_web.hits}
    }
    assert len(ended) >= 2
    count = len(loopback_web.hits)
    second = make_crawler(tmp_path, loopback_web, duration=3.0, hosts=hosts, interval=2.0)
    stats = await second.run()
    # Every host the first run asked has its site clock back (a host it never reached in
    # its 1.6 s, under load, has none to restore).
    assert stats.restored_clocks >= len(ended)
    for host in ended:
        later = [t for t, h, _p in loopback_web.hits[count:] if h == host]
        # Every such host has pages left, and is asked again within the second run: the
        # gap is measured, not vacuous. Start-up takes well under the 2 s interval: only
        # the saved clocks keep this gap.
        assert later, host
        assert later[0] - ended[host] >= 2.0 - TOLERANCE, host


async def test_a_site_paused_in_the_store_gets_no_request_when_the_crawl_restarts(
    tmp_path, loopback_web
):
    """``courtier site pause`` between two runs: the restarted crawl reads the pause before
    any lane starts, so the paused site gets nothing, not even its robots.txt, while the
    other site of the seed is crawled."""
    from courtier.frontier.controls import ControlAction, SiteControl

    hosts = ("deep.test", "cal.test")
    first = make_crawler(tmp_path, loopback_web, duration=15.0, hosts=hosts)
    await run_until(first, lambda: len(loopback_web.paths("deep.test")) >= 3)
    site = f"deep.test:{loopback_web.port}"
    store = SqliteFrontier(tmp_path / "frontier.sqlite3")
    try:
        now = time.time()
        action = ControlAction("site pause", site, {}, "courtier site pause", "me", now)
        store.record_control(action, SiteControl(site).paused_at(now, None, "asked"))
    finally:
        store.close()
    count = len(loopback_web.hits)
    second = make_crawler(tmp_path, loopback_web, duration=15.0, hosts=hosts)

    def cal_crawled() -> bool:
        return len([h for _t, h, _p in loopback_web.hits[count:] if h == "cal.test"]) >= 4

    await run_until(second, cal_crawled)
    assert cal_crawled()
    assert [p for _t, h, p in loopback_web.hits[count:] if h == "deep.test"] == []
