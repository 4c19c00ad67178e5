"""RSS and Atom feeds read in a parse worker as link sources (``read_feed``), with feedparser.

Rules:
- feedparser is handed the body as a stream, never a string: given a string it fetches a URL
  or opens a local file of that name, and a body is whatever a server chose to send. It
  resolves no external entity (it strips a DOCTYPE's entity declarations but simple string
  ones, and turns external entities off in its XML parser): nothing is fetched or opened.
- The body is decoded (``decode``) and redacted (``courtier.sinks.redact``) first, like a
  page: the entry links come from the redacted text (a link carrying a key keeps its
  placeholder, which the crawl's intake never fetches) and the redacted body is what the
  WARC keeps.
- Each entry's links (``link`` and every ``links[].href``; enclosures too) are links of the
  document, resolved against the feed's URL; they go to the crawl's one intake like a page's
  links, so scope, robots.txt and booking apply.
- A body feedparser cannot read as a feed (``bozo`` with no entries) gives ``feed_error``.
- Feed types: ``FEED_TYPES``; feeds served as ``text/xml`` or ``application/xml`` are not
  told from other XML by their type, and are kept unparsed.
"""

from __future__ import annotations

import io
from typing import Any, Final

from courtier.content.decode import decode, encode_back, parse_text
from courtier.content.parse import ParsedPage, resolve_into
from courtier.sinks.redact import RedactionPolicy, redact

FEED_TYPES: Final = ("application/rss+xml", "application/atom+xml")
MAX_ENTRIES: Final = 10_000
MAX_LINKS: Final = 20_000


def read_feed(
    body: bytes, base_url: str, content_type: str, policy: RedactionPolicy, region: str
) -> ParsedPage:
    """The ``ParsedPage`` of a feed: its title, its entries' links, and in ``fields`` its
    version (``rss20``, ``atom10``...) and number of entries."""
    import feedparser

    decoded = decode(body, content_type)
    redacted = redact(decoded.text, policy, region)
    page = ParsedPage(encoding=decoded.encoding)
    page.encoding_source = decoded.source
    page.fields["format"] = "feed"
    if redacted.changed:
        page.payload = encode_back(redacted.text, decoded, body)
        page.redactions = dict(redacted.counts)
    text = parse_text(redacted.text)  # UTF-8; bytes it could not read pass as they were
    try:
        parsed = feedparser.parse(
            io.BytesIO(text),
            response_headers={"content-type": "application/xml; charset=utf-8"},
            resolve_relative_uris=False,
            sanitize_html=False,
        )
    except Exception as exc:  # feedparser on hostile input: the document says so
        page.fields["feed_error"] = f"unreadable: {type(exc).__name__}"
        return page
    entries: list[Any] = list(parsed.get("entries") or [])
    if parsed.get("bozo") and not entries:
        why = parsed.get("bozo_exception")
        page.fields["feed_error"] = "unreadable" + (
            f": {' '.join(str(why).split())[:200]}" if why else ""
        )
        return page
    page.fields["feed_version"] = parsed.get("version") or "unknown"
    page.fields["feed_entries"] = len(entries)
    title = (parsed.get("feed") or {}).get("title")
    if isinstance(title, str) and title.strip():
        page.title = title.strip()[:500]
    seen: set[str] = set()
    for entry in entries[:MAX_ENTRIES]:
        for href in _hrefs(entry):
            if len(page.links) >= MAX_LINKS:
                return page
            resolve_into(href, base_url, seen, page.links, page)
    return page


def _hrefs(entry: Any) -> list[str]:
    found: list[str] = []
    link = entry.get("link")
    if isinstance(link, str) and link:
        found.append(link)
    for item in entry.get("links") or ():
        href = item.get("href") if hasattr(item, "get") else None
        if isinstance(href, str) and href and href != link:
            found.append(href)
    return found
