"""PDFs and RSS/Atom feeds read in the parse worker (``content.pdf``, ``content.feeds``):
what they give, what a broken or hostile one gives (a per-document error, never a raise),
how a page's feeds are found, and ``/sitemap.xml`` where robots.txt names no sitemap."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from courtier.content.feeds import read_feed
from courtier.content.parse import parse_page
from courtier.content.pdf import read_pdf
from courtier.content.reading import ReadContext, read_page
from courtier.frontier.base import LeasedUrl
from courtier.frontier.surface import SurfacePolicy
from courtier.net.fetch import FetchResult
from courtier.net.policy import AddressPolicy
from courtier.pipeline.answers.fetching import Answer
from courtier.pipeline.answers.verdict import Verdict, decide, document
from courtier.pipeline.feed.discovery import Discovery
from courtier.pipeline.lanes.site import SiteLane
from courtier.pipeline.stats import CrawlStats
from courtier.simweb.documents import pdf_bytes
from courtier.sinks.redact import DEFAULT_POLICY, is_redacted
from key_samples import KEYS

URL = "http://docs.test/manuals/1.pdf"
LINES = ["Installing the lamp", "Step one: unpack it.", "Step two: plug it in.", "Page two."]
PDF = pdf_bytes("Lamp manual", LINES, ["/item/3", "https://other.test/x"])


def _pdf(body: bytes) -> dict[str, object]:
    return read_pdf(body, URL, DEFAULT_POLICY, "US").fields


def test_a_pdfs_text_title_and_link_annotations() -> None:
    page = read_pdf(PDF, URL, DEFAULT_POLICY, "US")
    assert page.title == "Lamp manual"
    assert page.fields["pdf_pages"] == 2
    text = page.fields["text"]
    assert isinstance(text, str)
    assert [line for line in LINES if line in text] == LINES
    assert [link.fetch_url for link in page.links] == [
        "http://docs.test/item/3",
        "https://other.test/x",
    ]
    assert page.fingerprint  # change detection: the file's digest


def test_a_pdf_needing_a_password_says_so_and_one_with_an_empty_password_is_read() -> None:
    from pypdf import PdfReader, PdfWriter

    def encrypted(user: str) -> bytes:
        writer = PdfWriter(clone_from=PdfReader(io.BytesIO(PDF)))
        writer.encrypt(user, owner_password="owner", algorithm="RC4-128")
        out = io.BytesIO()
        writer.write(out)
        return out.getvalue()

    assert _pdf(encrypted("secret")) == {"format": "pdf", "pdf_error": "encrypted"}
    assert "Step one: unpack it." in str(_pdf(encrypted(""))["text"])


@pytest.mark.parametrize("cut", [0, 9, len(PDF) // 3, len(PDF) // 2, len(PDF) - 30])
def test_a_truncated_or_broken_pdf_gives_its_document_an_error_not_a_raise(cut: int) -> None:
    fields = _pdf(PDF[:cut])
    assert fields["format"] == "pdf"
    assert "text" in fields or str(fields["pdf_error"]).startswith("unreadable")


def test_a_pdfs_secrets_are_redacted_in_its_text_title_and_links() -> None:
    _kind, template, secret = KEYS[0]
    body = pdf_bytes(f"Key {secret}", [template.format(secret)], [f"/api?key={secret}"])
    page = read_pdf(body, URL, DEFAULT_POLICY, "US")
    assert secret not in str(page.fields["text"]) and secret not in str(page.title)
    assert page.redactions
    assert all(secret not in link.fetch_url for link in page.links)


@settings(max_examples=150, deadline=None)
@given(
    st.binary(max_size=2000)
    | st.builds(lambda n, b: PDF[:n] + b, st.integers(0, 1500), st.binary(max_size=64))
)
def test_any_bytes_read_as_a_pdf_give_a_document(body: bytes) -> None:
    assert _pdf(body)["format"] == "pdf"


RSS = b"""<?xml version="1.0" encoding="iso-8859-1"?>
<rss version="2.0"><channel><title>Caf\xe9 news</title>
<item><link>http://docs.test/a</link></item>
<item><link>/relative/b</link><enclosure url="http://docs.test/c.mp3" type="audio/mpeg"/></item>
</channel></rss>"""
ATOM = b"""<feed xmlns="http://www.w3.org/2005/Atom"><title>Atom</title>
<entry><id>1</id><link rel="alternate" href="/x"/><link rel="enclosure" href="/y.pdf"/></entry>
</feed>"""


def _feed(body: bytes, kind: str = "application/rss+xml") -> tuple[list[str], dict[str, object]]:
    page = read_feed(body, "http://docs.test/feed", kind, DEFAULT_POLICY, "US")
    return [link.fetch_url for link in page.links], {"title": page.title, **page.fields}


def test_rss_and_atom_entry_links_resolved_against_the_feed() -> None:
    links, fields = _feed(RSS)
    assert links == ["http://docs.test/a", "http://docs.test/relative/b", "http://docs.test/c.mp3"]
    assert fields == {
        "title": "Café news",
        "format": "feed",
        "feed_version": "rss20",
        "feed_entries": 2,
    }
    links, fields = _feed(ATOM, "application/atom+xml")
    assert links == ["http://docs.test/x", "http://docs.test/y.pdf"]
    assert fields["feed_version"] == "atom10"


def test_a_body_naming_a_local_file_or_url_is_never_opened(tmp_path: Path) -> None:
    secret = tmp_path / "feed.xml"
    secret.write_bytes(b"<rss version='2.0'><channel><item><link>http://leak.test/</link>")
    links, fields = _feed(str(secret).encode())
    assert links == [] and "feed_error" in fields
    links, fields = _feed(b"http://127.0.0.1:9/feed.xml")
    assert links == [] and "feed_error" in fields


def test_external_entities_are_not_resolved(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET")
    body = (
        f'<?xml version="1.0"?><!DOCTYPE rss [<!ENTITY x SYSTEM "file://{secret}">]>'
        "<rss version='2.0'><channel><title>t &x;</title>"
        "<item><link>http://docs.test/ok</link></item></channel></rss>"
    ).encode()
    links, fields = _feed(body)
    assert "TOP-SECRET" not in str(fields["title"])
    assert links == ["http://docs.test/ok"]


def test_a_feed_link_carrying_a_key_keeps_its_placeholder_and_the_body_is_redacted() -> None:
    _kind, _template, secret = KEYS[0]
    body = f"<rss version='2.0'><channel><item><link>http://docs.test/a?key={secret}</link>"
    page = read_feed(
        (body + "</item></channel></rss>").encode(),
        "http://docs.test/feed",
        "application/rss+xml",
        DEFAULT_POLICY,
        "US",
    )
    assert [is_redacted(link.fetch_url) for link in page.links] == [True]
    assert page.payload is not None and secret.encode() not in page.payload


@settings(max_examples=150, deadline=None)
@given(
    st.binary(max_size=2000)
    | st.builds(lambda n, b: RSS[:n] + b, st.integers(0, 300), st.binary(max_size=64))
)
def test_any_bytes_read_as_a_feed_give_a_document(body: bytes) -> None:
    _links, fields = _feed(body)
    assert fields["format"] == "feed"


def test_a_pages_feeds_named_in_its_head_are_links() -> None:
    page = parse_page(
        b'<head><link rel="alternate" type="application/rss+xml" href="/feed.rss">'
        b'<link rel="Alternate Feed" type="application/atom+xml" href="/a.atom">'
        b'<link rel="alternate" type="text/html" href="/other"></head><a href="/p">p</a>',
        "http://docs.test/",
    )
    assert [link.fetch_url for link in page.links] == [
        "http://docs.test/p",
        "http://docs.test/feed.rss",
        "http://docs.test/a.atom",
    ]


def _result(content_type: str, body: bytes = b"") -> FetchResult:
    return FetchResult(URL, 200, content_type, body=body)


@pytest.mark.parametrize(
    "kind", ["application/pdf", "application/rss+xml; charset=utf-8", "application/atom+xml"]
)
def test_pdfs_and_feeds_are_parsed_and_their_fields_reach_the_document(kind: str) -> None:
    answer = Answer(URL, _result(kind))
    assert decide(answer, attempts=0, suspended=False, sitemap=False) is Verdict.PARSE_PAGE
    body = PDF if kind == "application/pdf" else RSS
    page = read_page(body, URL, ReadContext(kind))
    record = document(_result(kind, body), url=URL, site="docs.test", page=page)
    assert record["format"] == ("pdf" if kind == "application/pdf" else "feed")
    assert record["links"] == [link.fetch_url for link in page.links]


def _discovery(fallback: bool) -> tuple[Discovery, SiteLane]:
    lane = SiteLane("docs.test", "docs.test", "http")
    stats = CrawlStats()
    discovery = Discovery(
        {"docs.test": lane},
        {"docs.test"},
        stats,
        AddressPolicy(),
        SurfacePolicy(),
        sitemap_fallback=fallback,
    )
    return discovery, lane


def test_sitemap_xml_is_queued_after_the_home_pages_links_only_when_robots_txt_names_none() -> None:
    home = parse_page(b"<a href='/a'>a</a><a href='/b'>b</a>", "http://docs.test/")
    root = LeasedUrl(1, "http://docs.test/", "docs.test", 0, 0)
    deeper = LeasedUrl(2, "http://docs.test/a", "docs.test", 1, 0)
    discovery, lane = _discovery(True)
    discovery.queue_sitemaps(lane, [])
    assert discovery.new_urls == []  # not before the home page is read
    discovery.page(lane, deeper, home)
    assert "http://docs.test/sitemap.xml" not in [u.fetch_url for u in discovery.new_urls]
    discovery.new_urls.clear()
    discovery.page(lane, root, home)
    assert [(u.fetch_url, u.depth) for u in discovery.new_urls][-1] == (
        "http://docs.test/sitemap.xml",
        1,
    )
    assert "http://docs.test/sitemap.xml" in discovery.sitemaps  # read as a sitemap
    discovery.new_urls.clear()
    discovery.page(lane, root, home)  # once
    assert discovery.new_urls == []
    discovery, lane = _discovery(True)
    discovery.queue_sitemaps(lane, ["http://docs.test/map.xml"])
    discovery.page(lane, root, home)
    urls = [u.fetch_url for u in discovery.new_urls]
    assert urls[0] == "http://docs.test/map.xml" and "http://docs.test/sitemap.xml" not in urls
    discovery, lane = _discovery(False)
    discovery.queue_sitemaps(lane, [])
    discovery.page(lane, root, home)
    assert "http://docs.test/sitemap.xml" not in [u.fetch_url for u in discovery.new_urls]


def test_a_page_with_bytes_its_encoding_cannot_read_is_still_redacted_and_parsed() -> None:
    # Lone surrogates (``decode``: surrogateescape) once made the key scan raise: the page
    # was kept unparsed and its feed or PDF neighbours' readers failed the same way.
    _kind, template, secret = KEYS[0]
    body = f"<title>caf\udce9</title><p>{template.format(secret)}</p><a href='/x'>x</a>"
    raw = body.encode("utf-8", "surrogateescape")
    page = read_page(raw, "http://docs.test/", ReadContext("text/html; charset=utf-8"))
    assert [link.fetch_url for link in page.links] == ["http://docs.test/x"]
    assert page.payload is not None and secret.encode() not in page.payload
    assert b"caf\xe9" in page.payload  # the unreadable byte is kept as it came


def test_x_robots_tag_applies_to_a_pdf() -> None:
    context = ReadContext("application/pdf", "courtier", ("noindex, nofollow",))
    page = read_page(PDF, URL, context)
    assert page.robots >= {"noindex", "nofollow"}
    record = document(_result("application/pdf", PDF), url=URL, site="docs.test", page=page)
    assert record["noindex"] is True and record["format"] == "pdf"


async def test_a_pdf_or_a_feed_is_never_a_render_candidate() -> None:
    from courtier.content.parse import ParsedPage
    from courtier.pipeline.lanes.rendering import Rendering

    # Even with [render] mode = "always": the guard comes before the rules (and anything
    # else the lane holds), so a bare instance is enough to show it.
    rendering = Rendering.__new__(Rendering)
    for kind in ("pdf", "feed"):
        page = ParsedPage()
        page.fields["format"] = kind
        result = await rendering.consider(None, None, None, page, lambda: None)  # type: ignore[arg-type]
        assert result == (page, None)
