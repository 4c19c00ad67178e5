"""The URLs a sitemap lists, read in a parse worker (``parse_sitemap_links``).

An entry holding an e-mail address is never fetched nor stored; at most the sitemaps
protocol's own limit of entries is read from one file; each entry's ``<lastmod>`` is kept
for its canonical URL.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from courtier.content.parse import Link, ParsedPage, new_link, resolve_into
from courtier.frontier.sitemaps import SitemapError, SitemapKind, parse_sitemap
from courtier.net.spool import Body, body_bytes
from courtier.sinks.redact import redact_url

_MAX_SITEMAP_LINKS = 50_000  # the sitemaps protocol's own limit per file


@dataclass(slots=True)
class ParsedSitemap:
    index: bool = False
    """A sitemap index: its links are further sitemaps."""
    links: list[Link] = field(default_factory=list)
    bad_links: int = 0
    error: str | None = None
    """Why the sitemap could not be read to the end (what was read is still in ``links``)."""
    lastmod: dict[str, float] = field(default_factory=dict)
    """Canonical URL -> the ``<lastmod>`` its entry gives (Unix time)."""

    def __reduce__(self) -> tuple[Callable[..., ParsedSitemap], tuple[object, ...]]:
        links = list(map(tuple, self.links))  # as ParsedPage's: up to 50,000 of them
        return _rebuild_sitemap, (self.index, links, self.bad_links, self.error, self.lastmod)


def _rebuild_sitemap(
    index: bool,
    links: list[tuple[object, ...]],
    bad_links: int,
    error: str | None,
    lastmod: dict[str, float],
) -> ParsedSitemap:
    return ParsedSitemap(index, list(map(new_link, links)), bad_links, error, lastmod)


def parse_sitemap_links(content: Body, base_url: str) -> ParsedSitemap:
    """The URLs a sitemap (or sitemap index, gzip or not) lists, canonicalised."""
    result = ParsedSitemap()
    try:
        sitemap = parse_sitemap(body_bytes(content))
    except SitemapError as exc:
        sitemap, result.error = exc.partial, str(exc)[:300]
    result.index = sitemap.kind is SitemapKind.INDEX
    seen: set[str] = set()
    placeholder = ParsedPage()
    for entry in sitemap.entries[:_MAX_SITEMAP_LINKS]:
        if ("@" in entry.loc or "%40" in entry.loc) and redact_url(entry.loc).changed:
            placeholder.bad_links += 1  # an address in a URL: never fetched, never stored
            continue
        found = len(result.links)
        resolve_into(entry.loc, base_url, seen, result.links, placeholder)
        if entry.lastmod is not None and len(result.links) > found:
            result.lastmod[result.links[-1].canonical] = entry.lastmod
    result.bad_links = placeholder.bad_links + sitemap.skipped
    return result
