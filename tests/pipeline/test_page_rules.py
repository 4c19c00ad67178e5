"""What a page's answer means for the frontier: robots meta, scope patterns, a seed's
redirect into its own domain, a redirect out of it. Scripted web, fake time."""

from __future__ import annotations

from pathlib import Path

import pytest
from lane_harness import Lanes

from courtier.config import load
from courtier.frontier.base import LeasedUrl

PAGES = {
    "http://a.test/": b'<meta name="robots" content="nofollow,noindex"><a href="/x">x</a>',
    "http://b.test/": (
        b'<a href="/keep">k</a><a href="/skip.pdf">s</a>'
        b'<a rel="nofollow" href="http://out.test/">o</a><a href="http://vote.test/">v</a>'
    ),
    "http://c.test/": b"",
    "http://d.test/": b"",
}


def script(url: str) -> tuple[int, list[tuple[str, str]], bytes]:
    if url.endswith("/robots.txt"):
        return 404, [], b""
    if url == "http://c.test/":
        return 301, [("Location", "http://www.c.test/")], b""
    if url == "http://d.test/":
        return 302, [("Location", "http://elsewhere.test/landing")], b""
    return 200, [("Content-Type", "text/html")], PAGES.get(url, b"<title>t</title>")


@pytest.fixture
async def harness(tmp_path: Path):
    lanes = Lanes(
        load(None, ["limits.origin.rate=1000", r"scope.exclude=['\.pdf$']"]), tmp_path, script
    )
    lanes.start()
    yield lanes
    await lanes.close()


async def test_a_nofollow_page_records_its_links_but_follows_none(harness):
    lane = harness.site("a.test", ["/"])
    harness.pages.arm(lane)
    await harness.timer.advance(3.0)
    document = next(d for d in harness.documents if d["url"] == "http://a.test/")
    assert document["links"] == ["http://a.test/x"] and document["noindex"] is True
    assert document["robots"] == ["nofollow", "noindex"]
    assert harness.discovery.new_urls == [] and harness.stats.nofollow_pages == 1


async def test_patterns_and_rel_nofollow_shape_what_is_followed(harness):
    lane = harness.site("b.test", ["/"])
    harness.pages.arm(lane)
    await harness.timer.advance(3.0)
    queued = {u.fetch_url for u in harness.discovery.new_urls}
    assert queued == {"http://b.test/keep"}
    assert harness.stats.refused["scope-pattern"] == 1
    horizon = {h.site for h in harness.discovery.horizon}
    assert horizon == {"vote.test"}  # the rel=nofollow link gives no vote
    document = next(d for d in harness.documents if d["url"] == "http://b.test/")
    assert document["nofollow"] == ["http://out.test/"]


async def test_a_seed_redirecting_to_www_brings_that_host_in_and_elsewhere_is_reported(harness):
    for n, name in enumerate(("c.test", "d.test")):
        lane = harness.site(name, [])
        lane.queue.append(LeasedUrl(n + 1, f"http://{name}/", name, 0, 0))  # the seed's root
        harness.pages.arm(lane)
    await harness.timer.advance(3.0)
    assert "www.c.test" in harness.discovery.scope and "www.c.test" in harness.sites
    assert "same site owner" in harness.stats.adopted["www.c.test"]
    assert [u.fetch_url for u in harness.discovery.new_urls] == ["http://www.c.test/"]
    assert harness.stats.seed_redirects == {"d.test": "http://elsewhere.test/landing"}
    assert harness.stats.refused["redirect-out-of-scope"] == 1
