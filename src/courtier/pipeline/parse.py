"""Page parsing, run in worker processes so it never holds the fetch loop.

``parse_page`` is top-level and picklable. It returns plain data (links already
canonicalised, counts of what was skipped) and touches no metrics or stores: the parent
records what it returns.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from selectolax.lexbor import LexborHTMLParser

from courtier.frontier.fingerprint import html_fingerprint
from courtier.frontier.sitemaps import SitemapError, SitemapKind, parse_sitemap
from courtier.url import UrlError, parse_url


@dataclass(frozen=True, slots=True)
class Link:
    canonical: str
    fetch_url: str
    site: str


@dataclass(slots=True)
class ParsedPage:
    title: str | None = None
    links: list[Link] = field(default_factory=list)
    images: list[Link] = field(default_factory=list)
    bad_links: int = 0
    """References that are not crawlable http(s) URLs (other schemes, malformed hosts)."""
    fingerprint: str | None = None
    """Boilerplate-stripped content fingerprint (adaptive refresh compares it)."""


_LINK_SELECTOR = "a[href], area[href]"
_MAX_REFERENCES = 5000
_MAX_SITEMAP_LINKS = 50_000  # the sitemaps protocol's own limit per file


def _resolve(raw: str, base: str, seen: set[str], out: list[Link], page: ParsedPage) -> None:
    try:
        url = parse_url(raw.strip(), base)
    except UrlError:
        page.bad_links += 1
        return
    if url.canonical in seen:
        return
    seen.add(url.canonical)
    out.append(Link(url.canonical, url.fetch_url, url.site))


def parse_page(body: bytes, base_url: str) -> ParsedPage:
    """Title, outgoing links, image references and content fingerprint of an HTML page."""
    page = ParsedPage(fingerprint=html_fingerprint(body))
    tree = LexborHTMLParser(body)
    title = tree.css_first("title")
    if title is not None:
        page.title = title.text(strip=True)[:500] or None
    base = base_url
    base_node = tree.css_first("base[href]")
    if base_node is not None:
        href = base_node.attributes.get("href")
        if href:
            try:
                base = parse_url(href.strip(), base_url).fetch_url
            except UrlError:
                page.bad_links += 1
    seen: set[str] = set()
    for node in tree.css(_LINK_SELECTOR)[:_MAX_REFERENCES]:
        href = node.attributes.get("href")
        if href:
            _resolve(href, base, seen, page.links, page)
    for node in tree.css("img[src]")[:_MAX_REFERENCES]:
        src = node.attributes.get("src")
        if src:
            _resolve(src, base, seen, page.images, page)
    return page


@dataclass(slots=True)
class ParsedSitemap:
    index: bool = False
    """A sitemap index: its links are further sitemaps."""
    links: list[Link] = field(default_factory=list)
    bad_links: int = 0
    error: str | None = None
    """Why the sitemap could not be read to the end (what was read is still in ``links``)."""


def parse_sitemap_links(body: bytes, base_url: str) -> ParsedSitemap:
    """The URLs a sitemap (or sitemap index, gzip or not) lists, canonicalised."""
    result = ParsedSitemap()
    try:
        sitemap = parse_sitemap(body)
    except SitemapError as exc:
        sitemap, result.error = exc.partial, str(exc)[:300]
    result.index = sitemap.kind is SitemapKind.INDEX
    seen: set[str] = set()
    placeholder = ParsedPage()
    for entry in sitemap.entries[:_MAX_SITEMAP_LINKS]:
        _resolve(entry.loc, base_url, seen, result.links, placeholder)
    result.bad_links = placeholder.bad_links + sitemap.skipped
    return result
