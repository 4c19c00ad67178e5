from __future__ import annotations

import gzip
from datetime import UTC, datetime

import pytest

from courtier.frontier.sitemaps import (
    SitemapEntry,
    SitemapError,
    SitemapKind,
    SitemapLimits,
    parse_lastmod,
    parse_sitemap,
)

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def _urlset(*entries: str, ns: str = NS) -> bytes:
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset {ns}>{"".join(entries)}</urlset>'.encode()
    )


def _url(loc: str, lastmod: str | None = None) -> str:
    extra = f"<lastmod>{lastmod}</lastmod>" if lastmod is not None else ""
    return f"<url><loc>{loc}</loc>{extra}<changefreq>daily</changefreq></url>"


def _ts(*parts: int) -> float:
    return datetime(*parts, tzinfo=UTC).timestamp()  # type: ignore[misc]


def test_a_urlset_gives_its_urls_and_lastmod_times():
    body = _urlset(
        _url("http://a.test/", "2026-11-30"),
        _url(" http://a.test/b?x=1&amp;y=2 \n", "2026-11-30T06:08:25+01:00"),
        _url("http://a.test/c"),
    )
    sitemap = parse_sitemap(body)
    assert sitemap.kind is SitemapKind.URLSET
    assert sitemap.entries == (
        SitemapEntry("http://a.test/", _ts(2026, 11, 30)),
        SitemapEntry("http://a.test/b?x=1&y=2", _ts(2026, 11, 30, 5, 8, 25)),
        SitemapEntry("http://a.test/c", None),
    )
    assert sitemap.truncated is None and sitemap.skipped == 0


def test_a_sitemap_index_lists_child_sitemaps():
    body = (
        f"<sitemapindex {NS}><sitemap><loc>http://a.test/s1.xml.gz</loc>"
        "<lastmod>2026-01</lastmod></sitemap>"
        "<sitemap><loc>http://a.test/s2.xml</loc></sitemap></sitemapindex>"
    ).encode()
    sitemap = parse_sitemap(body)
    assert sitemap.kind is SitemapKind.INDEX
    assert sitemap.urls == ["http://a.test/s1.xml.gz", "http://a.test/s2.xml"]
    assert sitemap.entries[0].lastmod == _ts(2026, 1, 1)


def test_gzip_is_recognised_by_its_bytes_not_its_name():
    body = _urlset(_url("http://a.test/x"))
    assert parse_sitemap(gzip.compress(body)).urls == ["http://a.test/x"]


def test_namespaces_do_not_matter_and_nested_extension_locs_are_not_pages():
    body = _urlset(
        "<url><loc>http://a.test/p</loc><image:image><image:loc>http://a.test/i.jpg"
        "</image:loc></image:image></url>",
        ns='xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"',
    )
    assert parse_sitemap(body).urls == ["http://a.test/p"]


def test_a_text_sitemap_lists_one_url_per_line():
    body = b"\xef\xbb\xbfhttp://a.test/1\r\n\nhttps://a.test/2\nnot a url\n"
    sitemap = parse_sitemap(body)
    assert (sitemap.kind, sitemap.urls, sitemap.skipped) == (
        SitemapKind.TEXT,
        ["http://a.test/1", "https://a.test/2"],
        1,
    )


def test_entries_without_a_usable_loc_are_skipped_and_bad_lastmods_counted():
    body = _urlset(
        "<url><lastmod>2026-01-01</lastmod></url>",
        _url("   "),
        _url("http://a.test/ space"),
        _url("http://a.test/ok", "yesterday"),
        _url("http://a.test/feb", "2026-02-30"),
    )
    sitemap = parse_sitemap(body)
    assert sitemap.urls == ["http://a.test/ok", "http://a.test/feb"]
    assert (sitemap.skipped, sitemap.bad_lastmod) == (3, 2)
    assert [e.lastmod for e in sitemap.entries] == [None, None]


def test_the_url_count_limit_keeps_the_first_entries_and_says_why_it_stopped():
    body = _urlset(*(_url(f"http://a.test/{i}") for i in range(10)))
    sitemap = parse_sitemap(body, SitemapLimits(max_urls=4))
    assert sitemap.urls == [f"http://a.test/{i}" for i in range(4)]
    assert sitemap.truncated == "more than 4 entries"
    exact = parse_sitemap(body, SitemapLimits(max_urls=10))
    assert len(exact.entries) == 10 and exact.truncated is None


def test_a_gzip_bomb_costs_the_byte_limit_and_no_more():
    body = _urlset(*(_url(f"http://a.test/{i}") for i in range(200)))
    bomb = gzip.compress(body + b"<!--" + b" " * 20_000_000 + b"-->")
    limit = len(body) // 2
    sitemap = parse_sitemap(bomb, SitemapLimits(max_bytes=limit))
    assert sitemap.truncated == f"decompressed body exceeds {limit} bytes"
    assert 0 < len(sitemap.entries) < 200
    assert sitemap.urls == [f"http://a.test/{i}" for i in range(len(sitemap.entries))]
    plain = parse_sitemap(body, SitemapLimits(max_bytes=limit))
    assert plain.urls == sitemap.urls and plain.truncated == f"body exceeds {limit} bytes"


def test_malformed_xml_raises_a_clear_error_that_keeps_what_was_read():
    body = _urlset(_url("http://a.test/1"), _url("http://a.test/2")).replace(
        b"</urlset>", b"<url><loc>http://a.test/3</loc></url"
    )
    with pytest.raises(SitemapError, match=r"malformed sitemap XML at line \d+, column \d+") as err:
        parse_sitemap(body)
    assert err.value.partial.urls == ["http://a.test/1", "http://a.test/2"]
    assert err.value.partial.kind is SitemapKind.URLSET


def test_corrupt_or_cut_gzip_raises_and_keeps_what_was_read():
    packed = gzip.compress(_urlset(*(_url(f"http://a.test/{i}") for i in range(3000))))
    with pytest.raises(SitemapError, match="gzip data ends early") as err:
        parse_sitemap(packed[: len(packed) // 2])
    assert len(err.value.partial.entries) > 100
    with pytest.raises(SitemapError, match="corrupt gzip"):
        parse_sitemap(packed[:20] + b"\x00" * 40 + packed[60:])


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"<html><body>Not found</body></html>", "root element <html>"),
        (b"<!DOCTYPE html><html></html>", "DOCTYPE"),
        (
            b'<?xml version="1.0"?><!DOCTYPE u [<!ENTITY a "aaaa">]><urlset>&a;</urlset>',
            "DOCTYPE",
        ),
        (b"<urlset><url><loc>x</loc></url>", "malformed sitemap XML"),
        (b"  <", "malformed sitemap XML"),
    ],
)
def test_input_that_is_not_a_sitemap_is_refused_with_a_reason(body: bytes, message: str):
    with pytest.raises(SitemapError, match=message):
        parse_sitemap(body)


def test_an_empty_body_is_an_empty_text_sitemap():
    assert parse_sitemap(b"").entries == ()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026", _ts(2026, 1, 1)),
        ("2026-11", _ts(2026, 11, 1)),
        ("2026-11-30T06:08Z", _ts(2026, 11, 30, 6, 8)),
        ("2026-11-30T06:08:25.5-02:30", _ts(2026, 11, 30, 8, 38, 25) + 0.5),
        ("2026-11-30 06:08:25", _ts(2026, 11, 30, 6, 8, 25)),
        ("2026-13-01", None),
        ("30/11/2026", None),
        ("2026-11-30T06:08+25:00", None),
    ],
)
def test_lastmod_reads_w3c_datetimes(text: str, expected: float | None):
    assert parse_lastmod(text) == expected
