"""robots.txt redirects on fake time, as the target's server sees them: a hop to another
host is a request to that host (its site key, its spacing, its one request in flight, its
origin), and a hop to a robots.txt whose answer the crawl already has, or is fetching, takes
it from the one robots.txt cache (RFC 9309: the target's rules apply to the source)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from lane_harness import Lanes

from courtier.config import load

FAST = ["limits.origin.rate=1000", "limits.cdn.rate=1000", "limits.cdn-miss.rate=1000"]
RULES = b"User-agent: *\nDisallow: /private\n"


def redirecting(moves: dict[str, str], status: int = 301):
    """A web whose robots.txt of each host in ``moves`` redirects to the URL given."""

    def script(url: str) -> tuple[int, list[tuple[str, str]], bytes]:
        host = url.split("/")[2]
        if url.endswith("/robots.txt"):
            if host in moves:
                return status, [("Location", moves[host])], b""
            return 200, [("Content-Type", "text/plain")], RULES
        return 200, [("Content-Type", "text/html")], b"<html><title>t</title></html>"

    return script


@pytest.fixture
async def lanes(tmp_path: Path):
    made: list[Lanes] = []

    def make(script, *overrides: str) -> Lanes:
        harness = Lanes(load(None, [*FAST, *overrides]), tmp_path, script)
        harness.start()
        made.append(harness)
        return harness

    yield make
    for harness in made:
        await harness.close()


def at(send: tuple[float, str]) -> float:
    return send[0]


def seen_by(h: Lanes, host: str) -> list[tuple[float, str]]:
    """(when its headers went out, path) of every request ``host``'s server received."""
    return [
        (t, "/" + u.split("/", 3)[3])
        for t, u in sorted(h.fetcher.sends, key=at)
        if u.split("/")[2] == host
    ]


def assert_spaced(h: Lanes, host: str, interval: float) -> None:
    sends = seen_by(h, host)
    gaps = [round(b - a, 3) for (a, _p), (b, _q) in itertools.pairwise(sends)]
    assert all(gap >= interval - 1e-9 for gap in gaps), (host, sends)


async def test_a_robots_txt_redirect_to_a_seed_sites_robots_txt_is_taken_from_the_cache(
    lanes,
) -> None:
    """The target's server sees its robots.txt once, every request an interval apart; the
    source obeys the target's rules."""
    h = lanes(redirecting({"a.test": "http://b.test/robots.txt"}), "limits.site.rate=1")
    a = h.site("a.test", ["/", "/private"], origin="o-a")
    b = h.site("b.test", ["/", "/x", "/private"], origin="o-b")
    for host in ("a.test", "b.test"):
        h.fetcher.delays[f"http://{host}/robots.txt"] = 0.05
    h.pages.arm(a)
    h.pages.arm(b)
    await h.timer.advance(10.0)
    assert [p for _t, p in seen_by(h, "b.test")] == ["/robots.txt", "/", "/x"]
    assert_spaced(h, "b.test", 1.0)
    assert [p for _t, p in seen_by(h, "a.test")] == ["/robots.txt", "/"]  # b's rules
    assert h.stats.internal_errors == 0


async def test_a_robots_txt_redirect_to_the_www_twin_books_on_the_owners_clock(lanes) -> None:
    """bare and www. are one owner on one ``site:`` clock: the hop to www.'s robots.txt is
    neither a second fetch of it nor a request closer than the interval to www.'s own."""
    h = lanes(redirecting({"c.test": "http://www.c.test/robots.txt"}), "limits.site.rate=1")
    bare = h.site("c.test", ["/"], origin="o-c")
    www = h.site("www.c.test", ["/", "/y"], origin="o-c")
    for host in ("c.test", "www.c.test"):
        h.fetcher.delays[f"http://{host}/robots.txt"] = 0.05
    h.pages.arm(www)
    h.pages.arm(bare)
    await h.timer.advance(10.0)
    assert_spaced(h, "www.c.test", 1.0)
    assert [p for _t, p in seen_by(h, "www.c.test")] == ["/robots.txt", "/", "/y"]
    assert h.stats.internal_errors == 0


async def test_two_sites_redirecting_to_one_robots_txt_fetch_it_once(lanes) -> None:
    """Two sources whose robots.txt both redirect to a third site's, answered before the
    target's own lane asks: one fetch of it serves all three."""
    target = "http://t.test/robots.txt"
    h = lanes(redirecting({"s1.test": target, "s2.test": target}), "limits.site.rate=1")
    sources = [h.site(f"s{n}.test", ["/", "/private"], origin=f"o-s{n}") for n in (1, 2)]
    t = h.site("t.test", ["/"], origin="o-t")
    h.fetcher.delays[target] = 0.3
    for lane in sources:
        h.pages.arm(lane)
    await h.timer.advance(0.1)
    h.pages.arm(t)
    await h.timer.advance(10.0)
    assert [p for _t, p in seen_by(h, "t.test")] == ["/robots.txt", "/"]
    assert_spaced(h, "t.test", 1.0)
    for n in (1, 2):
        assert [p for _t, p in seen_by(h, f"s{n}.test")] == ["/robots.txt", "/"]
    assert h.stats.internal_errors == 0


async def test_a_hop_waits_for_the_targets_request_in_flight(lanes) -> None:
    """One request in flight per site: a hop to a site whose page is still being answered
    starts after that answer, never beside it."""
    h = lanes(redirecting({"a.test": "http://b.test/robots-copy.txt"}), "limits.site.rate=10")
    b = h.site("b.test", ["/slow"], origin="o-b")
    h.fetcher.delays["http://b.test/slow"] = 3.0
    h.pages.arm(b)
    await h.timer.advance(0.5)  # b.test's robots.txt is in, its slow page is out
    a = h.site("a.test", ["/"], origin="o-a")
    h.pages.arm(a)
    await h.timer.advance(10.0)
    sends = dict((p, t) for t, p in seen_by(h, "b.test"))
    assert sends["/robots-copy.txt"] >= sends["/slow"] + 3.0
    assert h.stats.internal_errors == 0


async def test_robots_txt_files_redirecting_in_a_loop_end_at_the_budget(lanes) -> None:
    """Two sites whose robots.txt redirect to each other's: neither chain waits on the other
    for ever; each host is asked at its own pace, the loop ends at the hop budget (RFC 9309:
    unavailable, so allowed) and both sites are crawled."""
    moves = {"a.test": "http://b.test/robots.txt", "b.test": "http://a.test/robots.txt"}
    h = lanes(redirecting(moves), "limits.site.rate=1")
    sites = [h.site(host, ["/"], origin=f"o-{host}") for host in moves]
    for lane in sites:
        h.pages.arm(lane)
    await h.timer.advance(30.0)
    for host in moves:
        assert_spaced(h, host, 1.0)
        assert [p for _t, p in seen_by(h, host)][-1] == "/"
    robots = [p for host in moves for _t, p in seen_by(h, host) if p == "/robots.txt"]
    assert len(robots) <= 2 * (1 + 5)
    assert h.stats.internal_errors == 0


async def test_a_robots_txt_redirecting_to_itself_is_asked_at_the_sites_pace(lanes) -> None:
    h = lanes(redirecting({"loop.test": "/robots.txt"}), "limits.site.rate=1")
    h.pages.arm(h.site("loop.test", ["/"], origin="o-loop"))
    await h.timer.advance(30.0)
    assert [p for _t, p in seen_by(h, "loop.test")] == ["/robots.txt"] * 6 + ["/"]
    assert_spaced(h, "loop.test", 1.0)
    assert h.stats.internal_errors == 0


async def test_a_media_hosts_robots_txt_redirect_to_a_seed_site_takes_its_rules(lanes) -> None:
    media = "media-a.s3.simstore.test"
    h = lanes(redirecting({media: "http://b.test/robots.txt"}), "limits.site.rate=1")
    b = h.site("b.test", ["/", "/x"], origin="o-b")
    h.pages.arm(b)
    h.media.offer(f"http://{media}/private/1.jpg", "b.test")
    h.media.offer(f"http://{media}/img/2.jpg", "b.test")
    await h.timer.advance(10.0)
    assert [p for _t, p in seen_by(h, "b.test")] == ["/robots.txt", "/", "/x"]
    assert_spaced(h, "b.test", 1.0)
    assert [p for _t, p in seen_by(h, media)] == ["/robots.txt", "/img/2.jpg"]  # b's rules
    assert h.stats.internal_errors == 0
