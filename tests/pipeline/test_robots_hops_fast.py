"""robots.txt redirects on fake time, as the target's server sees them: a hop to another
host is a request to that host (its site key, its spacing, its one request in flight, its
origin), and a hop to a robots.txt whose answer the crawl already has, or is fetching, takes
it from the one robots.txt cache (RFC 9309: the target's rules apply to the source). A source
that takes them so saves the target's answer under its own name: a restart finds both."""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path

import pytest
from lane_harness import Lanes

from courtier.config import load
from courtier.frontier.base import StoredRobots
from courtier.frontier.sqlite_store import SqliteFrontier
from courtier.pipeline.answers.robots_fetch import rules_from_stored
from courtier.pipeline.recovery import adopt_robots, load_inherited

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


def saved_by_site(h: Lanes) -> dict[str, StoredRobots]:
    saved: dict[str, StoredRobots] = {}
    for stored in h.saved_robots:
        assert stored.site not in saved, f"{stored.site}'s robots.txt saved twice"
        saved[stored.site] = stored
    return saved


async def test_a_source_taking_a_seed_sites_rules_from_the_cache_saves_them_as_its_own(
    lanes,
) -> None:
    """The source's robots.txt answer is the redirect; its rules are the target's (from the
    cache, never fetched twice): what is saved under the source is the target's answer, so
    a restart rebuilds the same rules for it without asking either server."""
    h = lanes(redirecting({"a.test": "http://b.test/robots.txt"}), "limits.site.rate=1")
    a = h.site("a.test", ["/", "/private"], origin="o-a")
    b = h.site("b.test", ["/"], origin="o-b")
    h.fetcher.delays["http://b.test/robots.txt"] = 0.3  # the source's chain waits on it
    h.pages.arm(a)
    h.pages.arm(b)
    await h.timer.advance(5.0)
    assert [p for _t, p in seen_by(h, "b.test")] == ["/robots.txt", "/"]
    saved = saved_by_site(h)
    assert saved.keys() == {"a.test", "b.test"}
    source, target = saved["a.test"], saved["b.test"]
    assert (source.http_status, source.body) == (200, RULES)
    assert (source.fetched_at, source.expires_at) == (target.fetched_at, target.expires_at)
    rules = rules_from_stored(source, h.config)
    assert rules.allows("http://a.test/", "courtier")
    assert not rules.allows("http://a.test/private", "courtier")
    assert h.stats.internal_errors == 0


async def test_a_media_hosts_redirected_robots_txt_is_saved_under_the_media_host(lanes) -> None:
    media = "media-a.s3.simstore.test"
    h = lanes(redirecting({media: "http://b.test/robots.txt"}), "limits.site.rate=1")
    h.pages.arm(h.site("b.test", ["/"], origin="o-b"))
    h.media.offer(f"http://{media}/img/2.jpg", "b.test")
    await h.timer.advance(5.0)
    saved = saved_by_site(h)
    assert saved[media].body == saved["b.test"].body == RULES
    assert saved[media].expires_at == saved["b.test"].expires_at


async def test_a_restart_asks_neither_robots_txt_of_a_redirect_again(tmp_path: Path) -> None:
    """Run 1 crawls a source whose robots.txt redirects to a seed site's, and is killed; run
    2 reads the answers run 1 saved (as ``recovery`` does) and neither server is asked for
    its robots.txt again. A run 2 that knows only the target's answer (run 1 killed before
    the source's was saved, or a store from before the source's was saved at all) saves it
    for the source when the source's chain reaches it."""
    config = load(None, [*FAST, "limits.site.rate=1"])
    script = redirecting({"a.test": "http://b.test/robots.txt"})
    store = SqliteFrontier(tmp_path / "kept.sqlite3")

    async def run(name: str, adopted: set[str]) -> Lanes:
        """A run on the saved answers of the sites in ``adopted``."""
        (tmp_path / name).mkdir()
        h = Lanes(config, tmp_path / name, script)
        try:
            sites = {s: h.site(s, ["/", "/x"], origin=f"o-{s}") for s in ("a.test", "b.test")}
            inherited = load_inherited(store, h.timer.now())
            robots = {s: v for s, v in inherited.robots.items() if s in adopted}
            assert robots.keys() == adopted
            adopt_robots(replace(inherited, robots=robots), config, sites, h.site_lanes, h.media)
            h.start()
            for lane in sites.values():
                h.pages.arm(lane)
            await h.timer.advance(5.0)
            assert h.stats.internal_errors == 0
            return h
        finally:
            await h.close()

    first = await run("first", set())
    store.save_robots(first.saved_robots)
    assert {s.site for s in first.saved_robots} == {"a.test", "b.test"}

    again = await run("second", {"a.test", "b.test"})
    for host in ("a.test", "b.test"):
        assert "/robots.txt" not in [p for _t, p in seen_by(again, host)], host
    assert again.saved_robots == []

    only_target = await run("third", {"b.test"})
    paths = [p for _t, p in seen_by(only_target, "a.test")]
    assert paths[:1] == ["/robots.txt"] and paths.count("/robots.txt") == 1
    assert "/robots.txt" not in [p for _t, p in seen_by(only_target, "b.test")]
    [source] = only_target.saved_robots
    kept = {s.site: s for s in first.saved_robots}["b.test"]
    assert source.site == "a.test"
    assert (source.http_status, source.body, source.expires_at) == (200, RULES, kept.expires_at)
    store.close()
