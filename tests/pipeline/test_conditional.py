"""Conditional refresh and one clock per site owner, on fake time with a scripted web."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from lane_harness import Lanes

from courtier.config import load
from courtier.frontier.base import LeasedUrl, UrlLane

FAST = ["limits.origin.rate=1000", "limits.site.rate=2"]
ETAG = '"abc"'
MODIFIED = "Wed, 21 Oct 2015 07:28:00 GMT"


def script(url: str) -> tuple[int, list[tuple[str, str]], bytes]:
    if url.endswith("/robots.txt"):
        return 404, [], b""
    if url.endswith("/unchanged"):
        return 304, [("ETag", ETAG)], b""
    return 200, [("Content-Type", "text/html"), ("ETag", '"new"')], b"<title>changed</title>"


@pytest.fixture
async def harness(tmp_path: Path):
    lanes = Lanes(load(None, FAST), tmp_path, script)
    lanes.start()
    yield lanes
    await lanes.close()


def refresh(site: str, path: str, n: int) -> LeasedUrl:
    url = f"http://{site}{path}"
    return LeasedUrl(n, url, site, 1, 0, UrlLane.REFRESH, ETAG, MODIFIED, "sha1:X", 1.0)


async def test_a_refresh_sends_its_validators_and_a_304_is_unchanged_and_cheap(harness):
    lane = harness.site("a.test", [], origin="o1")
    lane.queue.extend([refresh("a.test", "/unchanged", 1), refresh("a.test", "/changed", 2)])
    harness.pages.arm(lane)
    await harness.timer.advance(5.0)
    sent = dict(harness.fetcher.sent_headers)
    expected = {"If-None-Match": ETAG, "If-Modified-Since": MODIFIED}
    assert sent["http://a.test/unchanged"] == expected == sent["http://a.test/changed"]
    assert sent["http://a.test/robots.txt"] == {}  # nothing else is conditional
    costs = {event.url: event.context.cost for event in harness.events}
    image = harness.config.costs.image
    assert costs["http://a.test/unchanged"] == costs["http://a.test/changed"] == image
    documents = {d["url"]: d for d in harness.documents}
    assert documents["http://a.test/unchanged"]["unchanged"] is True
    assert "unchanged" not in documents["http://a.test/changed"]
    assert harness.stats.not_modified == 1
    # The changed page turned out to be a page: it is charged the difference afterwards.
    assert harness.stats.cost_corrections == 1


async def test_www_and_the_bare_host_book_on_one_site_clock(harness):
    bare = harness.site("a.test", [f"/b{n}" for n in range(4)])
    www = harness.site("www.a.test", [f"/w{n}" for n in range(4)])
    harness.pages.arm(bare)
    harness.pages.arm(www)
    await harness.timer.advance(10.0)
    starts = sorted(harness.starts("a.test") + harness.starts("www.a.test"))
    assert len(starts) == 8
    assert all(b - a >= 0.5 for a, b in itertools.pairwise(starts))  # 2/s for the owner
    keys = {event.url: event.context.keys for event in harness.events}
    assert "site:a.test" in keys["http://www.a.test/w0"]


async def test_www_and_the_bare_host_on_one_origin_share_its_site_clock(harness):
    bare = harness.site("a.test", [f"/b{n}" for n in range(4)], origin="addr:10.0.0.1")
    www = harness.site("www.a.test", [f"/w{n}" for n in range(4)], origin="addr:10.0.0.1")
    harness.pages.arm(bare)
    harness.pages.arm(www)
    await harness.timer.advance(10.0)
    starts = sorted(harness.starts("a.test") + harness.starts("www.a.test"))
    assert len(starts) == 8
    assert all(b - a >= 0.5 for a, b in itertools.pairwise(starts))  # one server, one clock


async def test_www_and_the_bare_host_on_two_origins_keep_a_site_clock_each(harness):
    """Two servers each take the site rate: on one clock, each host's booking waited a whole
    interval for the other's, and its pages went out two intervals apart."""
    bare = harness.site("a.test", [f"/b{n}" for n in range(6)], origin="site:a.test")
    www = harness.site("www.a.test", [f"/w{n}" for n in range(6)], origin="site:www.a.test")
    harness.pages.arm(bare)
    harness.pages.arm(www)
    await harness.timer.advance(10.0)
    interval = 0.5 + harness.config.politeness.start_margin
    for host in ("a.test", "www.a.test"):
        starts = harness.starts(host)
        assert len(starts) == 6
        assert all(b - a < interval + 0.01 for a, b in itertools.pairwise(starts)), host
    pages = [e for e in harness.events if not e.url.endswith("/robots.txt")]
    assert max(e.context.wait for e in pages) < 0.01
    keys = {event.url: event.context.keys for event in harness.events}
    assert keys["http://www.a.test/w0"][0] == "site:www.a.test"
    assert keys["http://a.test/b0"][0] == "site:a.test"
