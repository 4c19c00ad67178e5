"""Page parsing: links, title and fingerprint from one parse; hostile pages stay cheap.

The hostile-web cases: a 500 KB page of 100,000 nested ``<div>`` took two minutes (lexbor's
tree building is quadratic in nesting depth, and the page was parsed twice). ``nesting_cut``
estimates the nesting before parsing and ``parse_page`` parses only up to ``MAX_DEPTH``.
"""

from __future__ import annotations

import time

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from selectolax.lexbor import LexborHTMLParser

from courtier.content.nesting import MAX_DEPTH, nesting_cut
from courtier.content.parse import parse_page
from courtier.frontier.fingerprint import html_fingerprint

BASE = "https://shop.example/garden/spades"

ORDINARY = b"""<!doctype html>
<html><head><title> Garden tools  </title>
<script>for (var i = 0; i<n; i++) { s += "<div>" + i; }</script>
<style>p > a { color: red }</style></head>
<body class="cookies-not-set">
<header><a href="/">Home</a> <a href="/tools">Tools</a></header>
<nav class="menu"><a href="/a">A</a><a href="/b">B</a></nav>
<!-- <div><div><div> in a comment -->
<main><article><h1>The best spades</h1>
<p>We dug <a href="spade?id=1#top">one bed</a> with <a href="HTTP://Shop.Example:443/x">x</a>.
<p>Unclosed paragraphs<p>and items<ul><li>one<li>two</ul>
<img src="/img/a.jpg"><img src="/img/a.jpg"><img src="data:image/png;base64,AAAA">
<a href="javascript:void(0)">js</a> <a href="mailto:a@b.example">mail</a>
<a href="spade?id=1">again</a> <a href="https://other.example/">elsewhere</a>
<svg viewBox="0 0 9 9"><path d="M0 0"/><path d="M1 1"/></svg>
</article></main>
<footer><a href="/help">Help</a></footer>
</body></html>"""


def deep(depth: int, before: bytes = b"", tag: bytes = b"div") -> bytes:
    return before + b"<" + tag + b">" + (b"<" + tag + b">") * (depth - 1)


def test_an_ordinary_page_gives_title_links_images_and_its_fingerprint() -> None:
    page = parse_page(ORDINARY, BASE)
    assert page.title == "Garden tools"
    assert page.truncated is None
    links = [link.canonical for link in page.links]
    assert "https://shop.example/" in links and "https://shop.example/help" in links
    assert "https://shop.example/garden/spade?id=1" in links
    assert "https://other.example/" in links
    assert len(links) == len(set(links))
    assert [image.canonical for image in page.images] == ["https://shop.example/img/a.jpg"]
    assert page.bad_links == 3  # javascript:, mailto:, data:
    # One parse serves links and fingerprint: the same fingerprint as parsing it on its own.
    assert page.fingerprint == html_fingerprint(ORDINARY)


def test_base_href_and_an_unparseable_base() -> None:
    page = parse_page(b'<base href="https://cdn.example/x/"><a href="y">y</a>', BASE)
    assert [link.canonical for link in page.links] == ["https://cdn.example/x/y"]
    page = parse_page(b'<base href="http://[bad"><a href="y">y</a>', BASE)
    assert page.bad_links == 1
    assert [link.canonical for link in page.links] == ["https://shop.example/garden/y"]


def test_what_one_query_finds_is_read_as_the_page_orders_it() -> None:
    """Title, base, robots meta, links and images come from one selector query: the first
    title and the first ``<base href>`` win wherever they are (a late base applies to the
    links before it, as in a browser), links and images keep document order apart."""
    page = parse_page(
        b'<a href="a1">1</a><img src="i1"><area href="a2"><title> First </title>'
        b'<base href="https://cdn.example/x/"><img src="i2"><a href="a3" rel="NoFollow">3</a>'
        b'<base href="https://other.example/"><title>Second</title>'
        b'<meta name="robots" content="noindex"><svg><a href="a4">4</a></svg>',
        BASE,
        token="courtier",
    )
    assert page.title == "First"
    assert [link.canonical for link in page.links] == [
        f"https://cdn.example/x/{name}" for name in ("a1", "a2", "a3", "a4")
    ]
    assert [image.canonical for image in page.images] == [
        "https://cdn.example/x/i1",
        "https://cdn.example/x/i2",
    ]
    assert page.nofollow == {"https://cdn.example/x/a3"}
    assert "noindex" in page.robots


def test_a_repeated_bad_reference_counts_each_time() -> None:
    page = parse_page(b'<a href="http://[x">1</a><a href="http://[x">2</a>', BASE)
    assert page.bad_links == 2 and page.links == []


def test_the_100000_deep_page_is_cut_at_the_depth_limit_and_parses_fast() -> None:
    body = deep(100_000, before=b"<title>Deep</title><a href='/kept'>k</a>")
    started = time.process_time()
    page = parse_page(body, BASE)
    elapsed = time.process_time() - started
    assert elapsed < 5.0  # it took two minutes; about 10 ms now
    assert page.truncated == "depth"
    assert page.title == "Deep"
    assert [link.canonical for link in page.links] == ["https://shop.example/kept"]
    cut = nesting_cut(body)
    assert cut is not None
    assert page.fingerprint == html_fingerprint(body[:cut])


def test_a_20_mb_hostile_page_is_bounded() -> None:
    body = deep(4_000_000, before=b"<a href='/kept'>k</a>")
    assert len(body) > 20_000_000
    started = time.process_time()
    page = parse_page(body, BASE)
    assert time.process_time() - started < 5.0
    assert page.truncated == "depth" and len(page.links) == 1


@pytest.mark.slow
def test_a_20_mb_ordinary_page_is_bounded() -> None:
    card = (
        b'<div class="card"><a href="/item/%d"><img src="/img/%d.jpg"></a><h3>Spade %d</h3>'
        b"<p>Ash handle, steel blade, 30 November 2026.</p></div>\n"
    )
    body = b"<html><title>Big</title><body><main>" + b"".join(
        card % (i, i, i) for i in range(160_000)
    )
    assert len(body) > 20_000_000
    started = time.process_time()
    page = parse_page(body, BASE)
    assert time.process_time() - started < 10.0
    assert page.truncated is None
    assert len(page.links) == 5000 and len(page.images) == 5000  # _MAX_REFERENCES each


@pytest.mark.parametrize(
    ("markup", "expected"),
    [
        (b"<div>" * MAX_DEPTH, None),
        (b"<div>" * (MAX_DEPTH + 1), MAX_DEPTH * 5),
        (b"<DIV class=x>" * 600, MAX_DEPTH * 13),
        (b"<div/>" * 600, MAX_DEPTH * 6),  # HTML has no self-closing div
        (b"<b>x" * 600, MAX_DEPTH * 4),
        (b"a < b <div>" * 600, MAX_DEPTH * 11 + 6),  # "< " is text: the div still counts
        (b"<div><span><p>x</p></span>" * 600, 26 * (MAX_DEPTH - 1) + 5),  # at the 512th span
    ],
)
def test_deep_markup_is_cut_where_it_goes_past_the_limit(markup: bytes, expected: int) -> None:
    assert nesting_cut(markup) == expected


SLOPPY_BUT_SHALLOW = {
    "balanced blocks": b"<div><section><p>x</p></section></div>" * 2000,
    "unclosed paragraphs": b"<p>text" * 3000,
    "unclosed list items and cells": b"<ul>"
    + b"<li>x" * 2000
    + b"</ul><table>"
    + b"<tr><td>x" * 2000,
    "unclosed links and headings": b"<a href=/x>x" * 2000 + b"<h2>x" * 2000,
    "void elements": b"<br><img src=x><input><meta charset=utf-8><hr><wbr>" * 1000,
    "xhtml voids": b"<br/><img src=x /><link rel=x/>" * 1000,
    "tags in scripts": b"<script>if (a<b && c<d) { x = '<div><div>'; }</script>" * 1000,
    "upper-case script end": b"<SCRIPT>a<b; '<div>'</SCRIPT>" * 1000 + b"<div></div>" * 1000,
    "tags in comments and raw text": (
        b"<!-- <div><div> -->" * 1000 + b"<textarea><div><div></textarea>" * 1000
    ),
    "inline svg icons": b"<button><svg><path d='M0'/><path d='M1'/></svg>Add</button>" * 2000,
    "unclosed tables": b"<table>x" * 2000,
    "stray end tags": b"</div></span>" * 2000 + b"<div>" * 100,
    "text with less-than signs": b"a < b, 3<4, 1 <= 2; " * 5000,
    "less-than signs in attributes": (
        b"<img alt='i<n' title=\"a<b\"><button onclick='if (i<n) go()'>Go</button>" * 2000
    ),
}


@pytest.mark.parametrize("name", sorted(SLOPPY_BUT_SHALLOW))
def test_sloppy_but_shallow_markup_is_not_cut(name: str) -> None:
    assert nesting_cut(SLOPPY_BUT_SHALLOW[name]) is None


def test_the_scan_carries_its_state_across_blocks() -> None:
    mb = 1 << 20
    # Nesting that goes past the limit only across a block boundary.
    body = b"<div>" * 300 + b"x" * mb + b"<div>" * 300
    assert nesting_cut(body) == 1500 + mb + 212 * 5
    # A script that spans a block boundary hides its tags in both blocks.
    body = b"<script>" + b"<div>" * (mb // 5) + b"</script>" + b"<div>" * 10
    assert nesting_cut(body) is None


def _tree_depth(markup: bytes) -> int:
    """The depth of lexbor's element tree (``html`` is 1)."""
    tree = LexborHTMLParser(markup)
    deepest, stack = 0, [(tree.root, 1)]
    while stack:
        node, depth = stack.pop()
        if node is None:
            continue
        deepest = max(deepest, depth)
        child = node.child
        while child is not None:
            if child.is_element_node:
                stack.append((child, depth + 1))
            child = child.next
    return deepest


_PIECES = st.sampled_from(
    [b"<div>", b"</div>", b"<span class=a>", b"</span>", b"<p>", b"</p>", b"<li>", b"<ul>",
     b"</ul>", b"<b>", b"</b>", b"<a href=x>", b"</a>", b"<br>", b"<img src=x>", b"text",
     b"<section>", b"</section>", b"<em>", b"</em>", b"<!-- <div> -->", b"<td>", b"<tr>",
     b"<script>1<2</script>", b"<svg><g/></svg>"]
)  # fmt: skip


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.lists(_PIECES, max_size=120))
@example([b"<section>", b"<div>", b"<div>", b"<div>", b"</section>", *[b"<div>"] * 4]).xfail(
    reason="an end tag that closes several open elements (</section> over open <div>s) is "
    "counted as closing one: the estimate is then deeper than the tree, so such a page is "
    "cut a little early (found by this test; the linear scan has no element stack)"
)
def test_the_estimate_does_not_exceed_the_real_depth_on_ordinary_tag_soup(
    pieces: list[bytes],
) -> None:
    markup = b"<html><body>" + b"".join(pieces)
    real = _tree_depth(markup)  # html, body and the elements below
    # The deepest estimate that still cuts nothing: never more than the real depth.
    estimate = next(d for d in range(0, 200) if nesting_cut(markup, d) is None)
    assert estimate <= real


@settings(max_examples=100, deadline=None)
@given(st.lists(_PIECES, max_size=60), st.integers(0, 3))
def test_parse_page_never_raises_and_agrees_with_html_fingerprint(
    pieces: list[bytes], junk: int
) -> None:
    markup = b"<title>t</title>" + b"".join(pieces) + b"\xff\xfe\x00"[:junk]
    page = parse_page(markup, BASE)
    assert page.truncated is None
    assert page.fingerprint == html_fingerprint(markup)
