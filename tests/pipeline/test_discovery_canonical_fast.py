"""A page's declared canonical is crawled like a link when it is inside the seed, whatever the
page's nofollow, and only named when it is not; the canonical, fetched after its copy, is the
original (``keeping.Keeper.copied``)."""

from __future__ import annotations

from courtier.config import Config
from courtier.content.parse import ParsedPage, parse_page
from courtier.content.reading import read_page
from courtier.frontier.base import LeasedUrl
from courtier.frontier.surface import SurfacePolicy
from courtier.net.fetch import FetchResult
from courtier.net.policy import AddressPolicy
from courtier.pipeline.feed.discovery import Discovery
from courtier.pipeline.keeping.keeper import Keeper
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


STORY = "https://news.example/story/5"
ARTICLE = (
    "<article><h1>The story</h1><p>" + " ".join(f"word{n}" for n in range(120)) + "</p></article>"
)


def _read(keeper: Keeper, url: str, markup: str) -> ParsedPage:
    """The page as the parse worker reads it for the crawl (text and all)."""
    body = markup.encode()
    return read_page(body, url, keeper.context(FetchResult(url, 200, "text/html", body), SITE))


def test_a_canonical_named_only_by_its_copies_is_crawled_and_is_no_copy_of_them():
    """A story no page links, named canonical by its copy: the copy brings it into the
    frontier, and its document names the story as what it copies; the story, fetched
    later with the same text, is the original, not a copy of its own copy."""
    keeper = Keeper(Config(), CrawlStats(), None, None)
    copy = _read(keeper, ITEM.fetch_url, f'<link rel="canonical" href="/story/5">{ARTICLE}')
    lane = SiteLane(SITE, SITE, "https")
    discovery = Discovery({SITE: lane}, {SITE}, CrawlStats(), AddressPolicy(), SurfacePolicy())
    discovery.page(lane, ITEM, copy)
    assert [u.fetch_url for u in discovery.new_urls] == [STORY]
    assert keeper.copied(ITEM.fetch_url, copy) == {
        "canonical": STORY,
        "duplicate_of": STORY,
        "duplicate": "canonical",
    }
    story = _read(keeper, STORY, f'<link rel="canonical" href="/story/5">{ARTICLE}')
    assert keeper.copied(STORY, story) == {"canonical": STORY}
