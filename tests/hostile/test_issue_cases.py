"""The cases of issue 12, each an end-to-end crawl judged from the servers' side, and the
bugs this suite found (marked xfail until fixed, with the reason).

Hosts that would push one another's origin into a pause (two sites answering 429/503 on one
address pause the address's whole origin, by design) live on listeners of their own
addresses (``HostileWeb.standard(alt=N)``).
"""

from __future__ import annotations

import itertools
import time
from dataclasses import replace
from pathlib import Path

import pytest
from hostile_web import (
    ALT_ADDRESSES,
    HOSTILE_ADDRESS,
    INTERVAL,
    NORMAL_ADDRESS,
    NOT_FOUND,
    RATE,
    TOLERANCE,
    Conn,
    Handler,
    HostileWeb,
    Request,
    config_for,
    crawl,
    documents_of,
    gap,
    html,
    http,
    normal_site,
    redirect,
    respond,
    robots,
    routes,
    sitemap_bombs,
    url,
)

from courtier.config import RobotsSection
from courtier.frontier.sqlite_store import SqliteFrontier

pytestmark = pytest.mark.timeout(60)


def _page_hits(web: HostileWeb, host: str) -> list[str]:
    return [p for p in web.paths(host) if p != "/robots.txt"]


# -- 2. Retry-After: ² ----------------------------------------------------------------------

GARBAGE_RETRY_AFTER = {
    "sup2": "²",
    "sup10": "¹⁰",
    "arabic": "١٠",
    "fullwidth": "１０",
    "exponent": "1e3",
    "inf": "inf",
    "nan": "nan",
    "negative": "-5",
    "fraction": "10.5",
    "hex": "0x10",
    "date": "Wed, 99 Foo 9999 99:99:99 GMT",
    "empty": "",
    "ctl": "1\x0b",
}


async def test_retry_after_that_is_no_number_pauses_the_site(tmp_path: Path):
    """429 with ``Retry-After: ²`` (and other values that are no delta-seconds): the site is
    paused for the default Retry-After (60 s), so it is asked exactly once in the run. (It
    raised inside the fetch task: no pause, 25 requests in 30 s.) A site saying
    ``Retry-After: 1`` is asked again, no sooner than a second later. Each site on an
    address of its own: sites of one origin answering 429 pause one another."""
    values = {**GARBAGE_RETRY_AFTER, "one": "1"}
    with HostileWeb.standard(alt=len(values)) as web:
        names, seeds = {}, []
        for i, (name, value) in enumerate(values.items()):
            host = f"ra-{name}.test"
            web.hosts[host] = routes(
                {"/robots.txt": NOT_FOUND},
                respond(http(429, b"slow down", headers=[("Retry-After", value)])),
            )
            names[host] = [ALT_ADDRESSES[i]]
            seeds.append(url(host, web.ports[f"alt-{i}"]))
        web.start()
        run = await crawl(tmp_path, seeds, names, duration=3.0)

    assert run.stats.internal_errors == 0
    garbage = [f"ra-{name}.test" for name in GARBAGE_RETRY_AFTER]
    asked = {host: _page_hits(web, host) for host in garbage}
    assert asked == {host: ["/"] for host in garbage}
    retried = [h for h in web.hits_of("ra-one.test") if h.target == "/"]
    assert 2 <= len(retried) <= 3, retried
    gaps = [gap(a, b) for a, b in itertools.pairwise(retried)]
    assert min(gaps) >= 1.0 - TOLERANCE, gaps


# -- 5. robots.txt answered 429 or 503 ------------------------------------------------------


def _robots_then_fine(status: int, retry_after: str | None, answers: int = 1):
    """robots.txt answers ``status`` the first ``answers`` times, then allows all."""
    asked = itertools.count()
    headers = [("Retry-After", retry_after)] if retry_after is not None else []

    async def handler(request: Request, conn: Conn) -> None:
        if request.target == "/robots.txt":
            if next(asked) < answers:
                await conn.send(http(status, b"go away", headers=headers))
            else:
                await conn.send(http(200, b"User-agent: *\nAllow: /\n", content_type="text/plain"))
        else:
            await conn.send(http(200, html("/a", "/b")))

    return handler


async def test_robots_429_or_503_disallows_all_until_its_retry_after(tmp_path: Path):
    """robots.txt answered 429/503 is RFC 9309's "unreachable": nothing but robots.txt is
    asked, and robots.txt again only after the answer's Retry-After; then the site is
    crawled. Without Retry-After it is asked again after ``robots.retry_unreachable``
    (600 s: not in this run)."""
    hosts = {
        "robots-429.test": ("hostile", _robots_then_fine(429, "2")),
        "robots-503.test": ("alt-0", _robots_then_fine(503, "2")),
        "robots-429-always.test": ("alt-1", _robots_then_fine(429, "1", answers=1000)),
        "robots-503-bare.test": ("alt-2", _robots_then_fine(503, None, answers=1000)),
    }
    with HostileWeb.standard(alt=3) as web:
        addresses = {"hostile": HOSTILE_ADDRESS} | {
            f"alt-{i}": address for i, address in enumerate(ALT_ADDRESSES)
        }
        names = {}
        seeds = []
        for host, (listener, handler) in hosts.items():
            web.hosts[host] = handler
            names[host] = [addresses[listener]]
            seeds.append(url(host, web.ports[listener]))
        web.start()

        def retried_and_crawled() -> bool:
            crawled = all("/" in web.paths(h) for h in ("robots-429.test", "robots-503.test"))
            return crawled and len(web.hits_of("robots-429-always.test")) >= 3

        # Stopped once both sites are crawled and the always-429 one asked thrice (not at a
        # fixed 5 s): enough for every check below, the bare 503's 600 s included.
        run = await crawl(tmp_path, seeds, names, duration=15.0, until=retried_and_crawled)

    assert run.stats.internal_errors == 0
    for host in ("robots-429.test", "robots-503.test"):
        hits = web.hits_of(host)
        assert [h.target for h in hits[:2]] == ["/robots.txt", "/robots.txt"], hits
        assert gap(hits[0], hits[1]) >= 2.0 - TOLERANCE, host
        assert "/" in [h.target for h in hits[2:]], host  # crawled once allowed
    always = web.hits_of("robots-429-always.test")
    assert {h.target for h in always} == {"/robots.txt"}
    assert len(always) >= 3
    assert min(gap(a, b) for a, b in itertools.pairwise(always)) >= 1.0 - TOLERANCE
    assert web.paths("robots-503-bare.test") == ["/robots.txt"]


# -- 3. robots.txt redirects booked on the host they reach -----------------------------------


async def test_robots_redirects_are_booked_on_the_host_they_reach(tmp_path: Path):
    """20 hostile seeds whose robots.txt all redirect to an innocent host's robots.txt: the
    innocent host (a seed itself) is asked at its own rate, and its robots.txt once: every
    hop takes its rules from the one robots.txt cache (RFC 9309: the target's rules apply).
    (Each hop was fetched on the originating site's clock: 20 requests within 0.86 s; then
    on the innocent host's own clock, but its robots.txt was still fetched once per hop.)"""
    hops = [f"hop-{i}.test" for i in range(20)]
    with HostileWeb.standard() as web:
        target = url("innocent.test", web.ports["normal"], "/robots.txt")
        for host in hops:
            web.hosts[host] = routes({"/robots.txt": respond(redirect(target))})
        web.hosts["innocent.test"] = normal_site()
        names = {host: [HOSTILE_ADDRESS] for host in hops}
        names["innocent.test"] = [NORMAL_ADDRESS]
        seeds = [url(host, web.ports["hostile"]) for host in hops]
        seeds.append(url("innocent.test", web.ports["normal"]))
        web.start()
        run = await crawl(tmp_path, seeds, names, duration=4.0)

    assert run.stats.internal_errors == 0
    innocent = web.hits_of("innocent.test")
    robots_asked = web.paths("innocent.test").count("/robots.txt")
    assert robots_asked == 1, robots_asked
    # No second holds more than the innocent host's rate allows (GCRA's bound: r.W + 1),
    # counting what certainly started in it (from its earliest arrival to its stamp).
    # How close two of them may come is test_robots_redirect_hops_on_one_host_keep_its_interval
    busiest = max(
        sum(start <= h.earliest and h.at < start + 1.0 for h in innocent)
        for start in (h.earliest for h in innocent)
    )
    assert busiest <= RATE + 1, [round(h.at - innocent[0].at, 3) for h in innocent]


async def test_robots_redirect_hops_on_one_host_keep_its_interval(tmp_path: Path):
    """A robots.txt that redirects to itself, on a host whose first DNS answers are slow (a
    cold cache): from the server's side, every request is an interval after the last."""
    with HostileWeb.standard() as web:
        web.hosts["loop.test"] = routes({"/robots.txt": respond(redirect("/robots.txt", 301))})
        web.start()
        run = await crawl(
            tmp_path,
            [url("loop.test", web.ports["hostile"])],
            {"loop.test": [HOSTILE_ADDRESS]},
            duration=2.5,
            delays={"loop.test": [0.15, 0.15]},
        )
    assert run.stats.internal_errors == 0
    assert len(web.paths("loop.test")) >= 3
    assert web.min_gap("loop.test") >= INTERVAL - TOLERANCE, web.times("loop.test")


# -- 4, 6, 8: sitemaps of other hosts, Crawl-delay 1e308, UTF-16 robots.txt ----------------

ROBOTS_RULES = "User-agent: *\nDisallow: /secret\n"
BOMS = {
    "utf16le": b"\xff\xfe" + ROBOTS_RULES.encode("utf-16-le"),
    "utf16be": b"\xfe\xff" + ROBOTS_RULES.encode("utf-16-be"),
    "utf8bom": b"\xef\xbb\xbf" + ROBOTS_RULES.encode(),
}
CRAWL_DELAYS = {"1e308": "1e308", "301": "301", "inf": "inf", "nan": "nan", "one": "1"}


def _crawl_delay_site(value: str, web: HostileWeb) -> Handler:
    async def handler(request: Request, conn: Conn) -> None:
        if request.target == "/robots.txt":
            text = "User-agent: *\nAllow: /\n"
            if not web.flag(f"fixed-{value}"):
                text += f"Crawl-delay: {value}\n"
            await conn.send(http(200, text.encode(), content_type="text/plain"))
        else:
            await conn.send(http(200, html("/a", "/b", "/c")))

    return handler


class RobotsWorld:
    """One crawl (and a second on the same store) of the robots.txt content cases."""

    def __init__(self, web: HostileWeb) -> None:
        self.web = web
        port, nport = web.ports["hostile"], web.ports["normal"]
        self.names: dict[str, list[str]] = {}
        self.seeds: list[str] = []
        for name, body in BOMS.items():
            self._add(
                f"{name}.test",
                routes(
                    {"/robots.txt": robots(body)},
                    respond(http(200, html("/secret/1", "/public/1"))),
                ),
            )
        for name, value in CRAWL_DELAYS.items():
            self._add(f"delay-{name}.test", _crawl_delay_site(value, web))
        evil = f"http://evil.test:{port}"
        victim, friend = f"http://victim.test:{nport}", f"http://friend.test:{nport}"
        own_sitemap = _sitemap(
            [f"{victim}/injected/{i}" for i in range(10)]
            + [f"{friend}/injected/{i}" for i in range(5)]
            + [f"{evil}/own/{i}" for i in range(3)]
        )
        shared_sitemap = _sitemap(
            [f"{friend}/shared/{i}" for i in range(3)]
            + [f"{victim}/injected-shared/{i}" for i in range(4)]
        )
        self._add(
            "evil.test",
            routes(
                {
                    "/robots.txt": robots(f"User-agent: *\nAllow: /\nSitemap: {evil}/map.xml\n"),
                    "/map.xml": respond(http(200, own_sitemap, content_type="application/xml")),
                    "/shared.xml": respond(
                        http(200, shared_sitemap, content_type="application/xml")
                    ),
                },
                respond(http(200, html())),
            ),
        )
        self._add("sitemap-bomb.test", sitemap_bombs(port))
        self._add("victim.test", normal_site(), "normal")
        self._add(
            "friend.test",
            routes(
                {"/robots.txt": robots(f"User-agent: *\nSitemap: {evil}/shared.xml\n")},
                respond(http(200, html())),
            ),
            "normal",
        )

    def _add(self, host: str, handler: Handler, listener: str = "hostile") -> None:
        self.web.hosts[host] = handler
        address = HOSTILE_ADDRESS if listener == "hostile" else NORMAL_ADDRESS
        self.names[host] = [address]
        self.seeds.append(url(host, self.web.ports[listener]))


def _sitemap(locs: list[str]) -> bytes:
    entries = "".join(f"<url><loc>{loc}</loc></url>" for loc in locs)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'
    ).encode()


@pytest.fixture(scope="module")
def robots_world(tmp_path_factory: pytest.TempPathFactory):
    """Run 1 (3.5 s), then the robots.txt of delay-1e308.test fixed and run 2 (2.5 s) on
    the same store. robots.txt answers live 3 s here, so run 2 asks again rather than reuse run
    1's."""
    import asyncio

    tmp = tmp_path_factory.mktemp("robots")
    config = config_for(robots=replace(RobotsSection(), max_age=3.0))
    with HostileWeb.standard() as web:
        world = RobotsWorld(web)
        web.start()
        first = asyncio.run(crawl(tmp, world.seeds, world.names, duration=3.5, config=config))
        floors_after_first = _floors(first.store_path)
        hits_first = len(web.hits)
        # A crawl whose work runs out ends early: wait until run 1's robots.txt answers have
        # expired, or run 2 would start with them (and find the site still refused).
        time.sleep(max(0.0, _last_robots_expiry(first.store_path) - time.time() + 0.2))
        web.set_flag("fixed-1e308")
        second = asyncio.run(crawl(tmp, world.seeds, world.names, duration=2.5, config=config))
    yield web, first, second, floors_after_first, hits_first


def _last_robots_expiry(store_path: Path) -> float:
    store = SqliteFrontier(store_path)
    try:
        return max((r.expires_at for r in store.load_robots(time.time()).values()), default=0.0)
    finally:
        store.close()


def _floors(store_path: Path) -> dict[str, float]:
    store = SqliteFrontier(store_path)
    try:
        return store.load_clock_floors(time.time())
    finally:
        store.close()


def test_robots_world_crawls_without_crashing(robots_world):
    _web, first, second, *_ = robots_world
    assert first.stats.internal_errors == 0
    assert second.stats.internal_errors == 0


def test_utf16_robots_txt_with_bom_is_obeyed(robots_world):
    web, *_ = robots_world
    for name in BOMS:
        paths = web.paths(f"{name}.test")
        assert "/public/1" in paths, (name, paths)
        assert not any(p.startswith("/secret") for p in paths), (name, paths)


def test_crawl_delay_1e308_suspends_the_site_instead_of_freezing_it(robots_world):
    web, first, second, floors, hits_first = robots_world
    run1 = web.hits[:hits_first]
    for name in ("1e308", "301"):
        host = f"delay-{name}.test"
        assert {h.target for h in run1 if h.host == host} == {"/robots.txt"}, host
    assert first.stats.refused["crawl-delay-too-long"] == 2
    # Nothing the server said is stored as a time further ahead than the crawl's maxima.
    limit = time.time() + config_for().politeness.max_retry_after
    assert all(when <= limit for when in floors.values()), floors
    assert not any(key.endswith(f"delay-1e308.test:{web.ports['hostile']}") for key in floors)
    # Its robots.txt fixed, the next run on the same store crawls it, from the start.
    run2 = [h for h in web.hits[hits_first:] if h.host == "delay-1e308.test"]
    pages = [h for h in run2 if h.target != "/robots.txt"]
    assert pages, [h.target for h in run2]
    assert pages[0].at - second.started < 2.0


def test_a_crawl_delay_within_the_maximum_is_honoured(robots_world):
    """Crawl-delay: 1, in both runs and across the restart between them."""
    web, *_ = robots_world
    assert web.min_gap("delay-one.test") >= 1.0 - TOLERANCE
    assert len(_page_hits(web, "delay-one.test")) >= 2


def test_sitemaps_speak_only_for_their_own_host(robots_world):
    web, first, *_ = robots_world
    assert not any("injected" in p for p in web.paths("victim.test"))
    assert not any("injected" in p for p in web.paths("friend.test"))
    assert any(p.startswith("/own/") for p in web.paths("evil.test"))
    # ... or for a host whose own robots.txt names the sitemap.
    assert any(p.startswith("/shared/") for p in web.paths("friend.test"))
    assert first.stats.refused["sitemap-other-host"] >= 10 + 5 + 4


def test_sitemap_bombs_are_read_within_their_limits(robots_world):
    """Sitemaps of 1 GiB (gzip: 1 MB on the wire), one of spaces and one of the same entry
    50,000 times over, and an index that lists itself: read up to the protocol's limits
    (50 MiB, 50,000 entries) in a parse worker, without a crash; the one URL listed 50,000
    times is asked at most once."""
    web, first, *_ = robots_world
    paths = web.paths("sitemap-bomb.test")
    assert any(p.endswith(".xml.gz") for p in paths), paths
    assert paths.count("/listed") <= 1
    assert paths.count("/index.xml") <= 2  # once per run at most, though it lists itself
    assert first.stats.internal_errors == 0


# -- bugs found by the hostile suite --------------------------------------------------------


async def test_header_bytes_that_are_no_utf8_reach_the_documents(tmp_path: Path):
    with HostileWeb.standard() as web:
        web.hosts["bytes.test"] = routes(
            {
                "/robots.txt": NOT_FOUND,
                "/": respond(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=\xff\xfe\r\n"
                    b"Content-Length: 24\r\nConnection: close\r\n\r\n<a href='/moved'>x</a>.."
                ),
                "/moved": respond(redirect(b"/\xff\xfe\x80")),
            }
        )
        web.start()

        def fetched() -> set[str]:
            return {record["url"].rpartition("/")[2] for record in documents_of(tmp_path)}

        run = await crawl(
            tmp_path,
            [url("bytes.test", web.ports["hostile"])],
            {"bytes.test": [HOSTILE_ADDRESS]},
            # Stopped once both documents are in (15 s is only the limit): a crawl of a fixed
            # 2 s fell short of /moved on a loaded machine.
            duration=15.0,
            until=lambda: {"", "moved"} <= fetched(),
        )
    assert "/moved" in web.paths("bytes.test")
    assert {"", "moved"} <= fetched(), fetched()
    assert run.stats.internal_errors == 0


async def test_a_server_that_hangs_up_is_asked_once_per_slot(tmp_path: Path):
    with HostileWeb.standard() as web:
        web.hosts["hangup.test"] = routes({"/robots.txt": NOT_FOUND}, respond(b""))
        web.start()
        run = await crawl(
            tmp_path,
            [url("hangup.test", web.ports["hostile"])],
            {"hangup.test": [HOSTILE_ADDRESS]},
            duration=15.0,  # the limit: it stops once the page was asked twice (or slots ran)
            until=lambda: web.paths("hangup.test").count("/") >= 2,
        )
    assert run.stats.internal_errors == 0
    assert "/" in web.paths("hangup.test")
    assert web.min_gap("hangup.test") >= INTERVAL - TOLERANCE, web.times("hangup.test")


async def test_a_charset_that_lies_does_not_crash_the_parse(tmp_path: Path):
    body = html("/after") + b"  "  # UTF-8, odd length
    assert len(body) % 2 == 1
    with HostileWeb.standard() as web:
        web.hosts["liar.test"] = routes(
            {
                "/robots.txt": NOT_FOUND,
                "/": respond(http(200, body, content_type="text/html; charset=utf-16")),
            },
            respond(http(200, html())),
        )
        web.start()
        run = await crawl(
            tmp_path,
            [url("liar.test", web.ports["hostile"])],
            {"liar.test": [HOSTILE_ADDRESS]},
            duration=15.0,  # the limit: it stops once the page was asked
            until=lambda: "/" in web.paths("liar.test"),
        )
    assert "/" in web.paths("liar.test")
    assert run.stats.internal_errors == 0
