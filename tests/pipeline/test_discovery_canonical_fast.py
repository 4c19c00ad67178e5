"""A page's declared canonical is crawled like a link when it is inside the seed, whatever the
page's nofollow, and only named when it is not."""

from __future__ import annotations

from courtier.content.parse import parse_page
from courtier.frontier.base import LeasedUrl
from courtier.frontier.surface import SurfacePolicy
from courtier.net.policy import AddressPolicy
from courtier.pipeline.feed.discovery import Discovery
from courtier.pipeline.lanes.site import SiteLane
from courtier.pipeline.stats import CrawlStats

SITE = "news.example"
ITEM = LeasedUrl(1, "https://news.example/item/5", SITE, 3, 0)


def discover(markup: str) -> Discovery:
    lane = SiteLane(SITE, SITE, "https")
    discovery = Discovery({SITE: lane}, {SITE}, CrawlStats(), AddressPolicy(), SurfacePolicy())
    discovery.page(lane, ITEM, parse_page(markup.encode(), ITEM.fetch_url))
    return discovery


def test_a_canonical_inside_the_seed_joins_the_frontier_as_a_link_of_the_page():
    discovery = discover('<link rel="canonical" href="/story/5">')
    [new] = discovery.new_urls
    assert (new.fetch_url, new.depth) == ("https://news.example/story/5", ITEM.depth + 1)


def test_nofollow_keeps_the_links_out_but_not_the_canonical():
    markup = (
        '<meta name="robots" content="nofollow"><link rel="canonical" href="/story/5">'
        '<a href="/item/6">next</a>'
    )
    assert [u.fetch_url for u in discover(markup).new_urls] == ["https://news.example/story/5"]


def test_a_canonical_off_the_seed_is_neither_crawled_nor_a_horizon_vote():
    discovery = discover('<link rel="canonical" href="https://elsewhere.example/a">')
    assert not discovery.new_urls and not discovery.horizon


def test_a_self_canonical_is_admitted_once():
    discovery = discover('<link rel="canonical" href="/item/5"><a href="/item/5">self</a>')
    assert [u.fetch_url for u in discovery.new_urls] == ["https://news.example/item/5"]
