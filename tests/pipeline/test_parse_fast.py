"""The parse worker's link cache, the links' precomputed trap patterns, and compact pickling."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from courtier.content import parse
from courtier.content.parse import (
    LINK_CACHE_SIZE,
    Link,
    ParsedPage,
    canonical_link,
    make_link,
    parse_page,
)
from courtier.content.sitemap_links import parse_sitemap_links
from courtier.frontier.traps import url_pattern
from courtier.url import MAX_URL_LENGTH, parse_url

_BASES = [
    "https://shop.example/garden/spades",
    "https://shop.example/other/dir/",
    "http://shop.example:8080/a/b?c=1#d",
    "https://u:p@shop.example./x",
    "http://[::1]:8080/dir/page",
    "http://127.1/x",
    "https://BÜCHER.example:443/x",
    "https://other.example/",
    "file:///etc/passwd",
    "not a url",
]
_REFERENCES = st.one_of(
    st.sampled_from(
        [
            "/",
            "/x",
            "x",
            "../x",
            "?q=1",
            "#top",
            "//evil.example/x",
            "/\\evil.example/",
            "/\t/evil.example/",
            "https://a.example/b?utm_source=x&b=1",
            "http://A.example:80/",
            "/item/17?ref=grid&pos=17",
            "/calendar/2026/11/30",
            "mailto:a@b.example",
            " /x ",
            "HTTP://a.example/",
            "http:x",
            "/a/./b/../c",
            "https://xn--p1ai/",
            "/é?é=1",
        ]
    ),
    st.text(alphabet="/.?#&=%2eEab:@;+\\ \t", max_size=12),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(_REFERENCES, st.sampled_from(_BASES)), min_size=1, max_size=30))
def test_the_cache_never_changes_a_link(pairs: list[tuple[str, str]]) -> None:
    # Warm the cache with every pair under every base first, so that a key that forgot part
    # of its base would hand one base's answer to another.
    for raw, _ in pairs:
        for base in _BASES:
            parse._BaseKeys(base).link(raw.strip())
    for raw, base in pairs:
        assert parse._BaseKeys(base).link(raw.strip()) == make_link(raw.strip(), base)


_PLAIN_PATHS = st.builds(
    lambda path, tail: "/" + path + tail,
    st.text(alphabet="ab1/.;=%2eE_-~:@!$&()*+,", max_size=16),
    st.sampled_from(["", "?", "?b=1&a=2", "?utm_source=x&a=%7e", "?a&a=&&", "#f", "?x=1#f?y"]),
).filter(lambda raw: raw[1:2] not in parse._NOT_SECOND)  # "//x" names a host: never asked


@settings(max_examples=500, deadline=None)
@given(_PLAIN_PATHS)
def test_a_plain_paths_tails_are_those_of_its_link(raw: str) -> None:
    # ``_tails_of`` makes a plain reference's tails directly: they must be what the link
    # made under any origin has after that origin.
    base = "https://shop.example/dir/page"
    link = make_link(raw, base)
    tails = parse._tails_of(raw)
    if link is None:
        assert tails is None
        return
    assert tails is not None
    prefix = "https://shop.example"
    assert (prefix + tails[0], prefix + tails[1]) == (link.canonical, link.fetch_url)
    assert ("shop.example" + tails[2], tails[3]) == (link.pattern, link.volatile)


def test_path_absolute_links_share_one_entry_across_sites() -> None:
    parse._path_tails.cache_clear()
    first = parse._BaseKeys("https://shop.example/a/b").link("/x?b=1&a=2")
    again = parse._BaseKeys("https://shop.example/c/d?e").link("/x?b=1&a=2")
    other = parse._BaseKeys("http://other.example:8080/a/b").link("/x?b=1&a=2")
    assert first == again == make_link("/x?b=1&a=2", "https://shop.example/")
    assert other == make_link("/x?b=1&a=2", "http://other.example:8080/")
    assert other is not None and other.canonical == "http://other.example:8080/x?a=2&b=1"
    assert other.site == "other.example:8080" and other.pattern == "other.example/x?a&b"
    info = parse._path_tails.cache_info()
    assert (info.misses, info.hits) == (1, 2)


def test_a_path_too_long_under_its_origin_is_decided_as_without_the_cache() -> None:
    # Fits after the cache's own stand-in origin, so the tails are cached; too long after
    # a longer origin.
    path = "/" + "a" * (MAX_URL_LENGTH - len(parse._TAIL_PREFIX) - 1)
    short, long = "http://s.example/", "http://a-much-longer-host-name.example/"
    for base in (short, long, short):
        assert parse._BaseKeys(base).link(path) == make_link(path, base)
    assert parse._BaseKeys(short).link(path) is not None
    assert parse._BaseKeys(long).link(path) is None


def test_the_caches_are_bounded() -> None:
    parse.clear_link_caches()
    assert canonical_link.cache_info().maxsize == LINK_CACHE_SIZE
    assert parse._path_tails.cache_info().maxsize == LINK_CACHE_SIZE
    keys = parse._BaseKeys("https://shop.example/dir/")
    for n in range(LINK_CACHE_SIZE + 100):
        keys.link(f"/item/{n}")
        keys.link(f"item/{n}")
    assert canonical_link.cache_info().currsize == LINK_CACHE_SIZE
    assert parse._path_tails.cache_info().currsize == LINK_CACHE_SIZE
    # The oldest were forgotten, and are made again, the same.
    assert keys.link("/item/0") == make_link("/item/0", "https://shop.example/")
    assert keys.link("item/0") == make_link("item/0", "https://shop.example/dir/")
    parse.clear_link_caches()


def test_a_page_parses_the_same_with_a_cold_and_a_warm_cache() -> None:
    body = (
        b"<title>t</title><a href='/a?utm_source=x&b=2&a=1'>a</a><a href='b/c'>b</a>"
        b"<a href='https://Other.Example:443/x#f'>o</a><a href='/calendar/2026/11/30'>c</a>"
        b"<a href='mailto:x@y.example'>m</a><img src='/img/1.jpg'><a href='//cdn.example/z'>z</a>"
    )
    parse.clear_link_caches()
    cold = parse_page(body, "https://shop.example/dir/page")
    warm = parse_page(body, "https://shop.example/dir/page")
    assert cold == warm and canonical_link.cache_info().hits > 0
    elsewhere = parse_page(body, "https://shop.example:8443/dir/page")
    assert [link.site for link in elsewhere.links][:2] == ["shop.example:8443"] * 2


@settings(max_examples=200, deadline=None)
@given(_REFERENCES, st.sampled_from(_BASES))
def test_a_link_carries_the_pattern_the_loop_would_compute(raw: str, base: str) -> None:
    link = make_link(raw.strip(), base)
    if link is not None:
        pattern = url_pattern(link.canonical)
        assert (link.pattern, link.pattern_host, link.volatile) == (
            pattern.key,
            pattern.host,
            pattern.volatile,
        )


@pytest.mark.parametrize(
    "raw",
    ["https://shop.example/a?b=1", "http://shop.example:8080/x", "http://[::1]:8080/y",
     "http://[::1]/z", "https://127.0.0.1:443/", "https://xn--bcher-kva.example/"],
)  # fmt: skip
def test_a_link_gives_back_its_url_without_parsing(raw: str) -> None:
    link = make_link(raw, None)
    assert link is not None and link.url() == parse_url(link.fetch_url)


def test_pages_and_sitemaps_cross_the_process_boundary_as_they_were() -> None:
    body = b"<a href='/a'>a</a><a href='/b' rel='nofollow'>b</a><img src='/c.jpg'>"
    page = parse_page(body, "https://shop.example/")
    page.payload, page.redactions, page.encoding_source = b"x", {"email": 1}, "meta"
    again = pickle.loads(pickle.dumps(page, pickle.HIGHEST_PROTOCOL))
    assert isinstance(again, ParsedPage) and again == page
    assert all(type(link) is Link for link in again.links + again.images)
    assert again.links[0].pattern == "shop.example/a"
    sitemap = parse_sitemap_links(
        b'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        b"<url><loc>https://shop.example/p/1</loc><lastmod>2026-11-30</lastmod></url></urlset>",
        "https://shop.example/sitemap.xml",
    )
    restored = pickle.loads(pickle.dumps(sitemap, pickle.HIGHEST_PROTOCOL))
    assert restored == sitemap and type(restored.links[0]) is Link
    assert restored.links[0].pattern == "shop.example/p/{n}"


def _one_query(tree):
    """The selection as one CSS query did it: the reference for ``parse._select``."""
    kinds = {"title": [], "base": [], "meta": [], "a": [], "area": [], "img": []}
    query = "title, base[href], meta[name][content], a[href], area[href], img[src]"
    for node in tree.css(query):
        kinds["a" if node.tag == "area" else node.tag].append(node)
    return kinds["title"], kinds["base"], kinds["meta"], kinds["a"], kinds["img"]


def _fields(page: ParsedPage) -> tuple:
    return (
        page.title, page.links, page.images, page.robots, page.nofollow, page.bad_links,
        page.fingerprint,
    )  # fmt: skip


_MARKUP = st.lists(
    st.sampled_from(
        ["<a href=/x>x</a>", "<a>no</a>", "<a href>e</a>", "<a href=''>", "<area href=/m>",
         "<A HREF=/U rel=NOFOLLOW>u</A>", "<img src=/i.png>", "<img>", "<img src>",
         "<base href=/b/>", "<base>", "<base target=_top>", "<title>T</title>", "<title>",
         "<meta name=robots content=noindex>", "<meta name=robots>", "<meta content=nofollow>",
         "<meta name=courtier content=nofollow>", "<svg><a href=/s>s</a><title>st</title>",
         "</svg>", "<math><a href=/m>", "</math>", "<template><a href=/t>", "</template>",
         "<a href='/q?a=&amp;b'>", "<img src=//cdn.test/x.png>", "<a href=http://o.test/>",
         "<p>", "</p>", "text", "<a href=\"javascript:x\">"]
    ),
    max_size=30,
).map("".join)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(_MARKUP)
def test_the_selection_by_name_parses_as_the_one_query_did(html: str) -> None:
    import unittest.mock

    body = html.encode()
    page = parse_page(body, "https://a.test/dir/page", token="courtier")
    with unittest.mock.patch.object(parse, "_select", _one_query):
        reference = parse_page(body, "https://a.test/dir/page", token="courtier")
    assert _fields(page) == _fields(reference)


def test_anchors_without_a_link_do_not_count_towards_the_cap(monkeypatch) -> None:
    monkeypatch.setattr(parse, "_MAX_REFERENCES", 3)
    body = b"<a>0</a><a name=n>1</a>" + b"".join(b"<a href=/%d>x</a>" % i for i in range(5))
    body += b"<img><img src=/i1.png><img src=/i2.png><img src=/i3.png><img src=/i4.png>"
    page = parse_page(body, "https://a.test/")
    assert [link.canonical for link in page.links] == [f"https://a.test/{i}" for i in range(3)]
    assert [link.canonical for link in page.images] == [
        f"https://a.test/i{i}.png" for i in (1, 2, 3)
    ]


def test_the_first_base_with_an_href_is_the_base() -> None:
    body = b"<base target=_top><base href=/b/><base href=/c/><a href=x>x</a>"
    page = parse_page(body, "https://a.test/dir/page")
    assert [link.canonical for link in page.links] == ["https://a.test/b/x"]
