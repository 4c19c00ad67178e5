"""Discovery takes a link's trap pattern from the parse worker: the same verdicts as computing
it on the loop, and the loop's own computation when its policy is not the default."""

from __future__ import annotations

from courtier.content.parse import Link, ParsedPage, parse_page
from courtier.frontier.base import LeasedUrl
from courtier.frontier.surface import SurfacePolicy
from courtier.frontier.traps import PatternCounter, TrapPolicy
from courtier.net.policy import AddressPolicy
from courtier.pipeline.feed.discovery import Discovery
from courtier.pipeline.lanes.site import SiteLane
from courtier.pipeline.stats import CrawlStats

_SITE = "shop.example"


def _discovery() -> tuple[Discovery, SiteLane]:
    lane = SiteLane(_SITE, _SITE, "https")
    stats = CrawlStats()
    discovery = Discovery({_SITE: lane}, {_SITE}, stats, AddressPolicy(), SurfacePolicy())
    return discovery, lane


def _calendar_page() -> ParsedPage:
    months = "".join(
        f"<a href='/calendar/{year}/{month}'>m</a>"
        for year in range(1990, 2030)
        for month in range(1, 13)
    )
    items = "".join(f"<a href='/item/{n}'>i</a>" for n in range(50))
    return parse_page(
        f"{months}{items}<a href='https://other.example/'>o</a>".encode(), "https://shop.example/"
    )


def _without_patterns(page: ParsedPage) -> ParsedPage:
    bare = parse_page(b"", "https://shop.example/")
    bare.links = [Link(link.canonical, link.fetch_url, link.site) for link in page.links]
    return bare


def test_worker_patterns_give_the_verdicts_of_the_loop() -> None:
    page = _calendar_page()
    assert all(link.pattern for link in page.links)
    item = LeasedUrl(1, "https://shop.example/", _SITE, 0, 0)
    fast, lane = _discovery()
    fast.page(lane, item, page)
    slow, other_lane = _discovery()
    slow.page(other_lane, item, _without_patterns(page))
    assert fast.traps.counts() == slow.traps.counts()
    assert fast.new_urls == slow.new_urls and fast.horizon == slow.horizon
    assert fast.stats.trap_capped == slow.stats.trap_capped == 480 - 30  # the calendar's cap
    assert len(fast.new_urls) == 30 + 50


def test_a_counter_with_another_policy_computes_patterns_itself() -> None:
    discovery, lane = _discovery()
    discovery.traps = PatternCounter(TrapPolicy(volatile_pattern_cap=5))
    assert not discovery.traps.default_policy
    discovery.page(lane, LeasedUrl(1, "https://shop.example/", _SITE, 0, 0), _calendar_page())
    assert discovery.stats.trap_capped == 480 - 5
