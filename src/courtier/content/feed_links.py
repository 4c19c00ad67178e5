"""The feeds an HTML page names in its ``<head>`` (``<link rel="alternate" type=...>``): links
of the page, read as feeds when fetched (``feeds.read_feed``).

Looked for only on pages whose bytes hold ``+xml`` in any case (both feed types do; a MIME
type's case does not matter, and ``application/RSS+XML`` is written too): one byte search of
each page, not a CSS query of each page's tree.
"""

from __future__ import annotations

import re
from typing import Final

from selectolax.lexbor import LexborHTMLParser

FEED_TYPES: Final = ("application/rss+xml", "application/atom+xml")
_PLUS_XML: Final = re.compile(rb"\+[xX][mM][lL]")


def feed_references(tree: LexborHTMLParser, body: bytes) -> list[str]:
    """The ``href`` of each ``<link rel="alternate">`` whose type is RSS or Atom, in the
    ``tree`` of ``body``."""
    found: list[str] = []
    if _PLUS_XML.search(body) is None:
        return found
    for node in tree.css('link[rel~="alternate" i][href]'):
        attributes = node.attributes
        kind = (attributes.get("type") or "").strip().lower()
        href = attributes.get("href")
        if kind in FEED_TYPES and href:
            found.append(href)
    return found
