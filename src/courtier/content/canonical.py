"""The canonical URL a page declares: ``<link rel="canonical">`` and the ``Link`` header.

Rules (after RFC 6596 and what search engines document):
- The HTTP header (``Link: <URL>; rel="canonical"``) wins over the markup: it is set by the
  server, and is the only way a non-HTML body can declare one.
- In the markup, only ``<link>`` elements count; several that disagree declare nothing
  (a template that adds its own beside the page's: neither can be trusted).
- A relative target is resolved against the page's base (its ``<base href>``).
- A target that is no crawlable http(s) URL declares nothing. Whether it is inside the seed
  is the crawl's question (``feed.discovery``), not this module's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Final, TypeVar

if TYPE_CHECKING:
    from selectolax.lexbor import LexborHTMLParser

T = TypeVar("T")
Resolve = Callable[[str, str], T | None]
"""Resolves a reference against a base (``parse.make_link``), None for no crawlable URL."""

_LINK_VALUE: Final = re.compile(r"<([^>]*)>((?:\s*;\s*[^;,<]*)*)")
_REL: Final = re.compile(r"""\brel\s*=\s*(?:"([^"]*)"|([^\s;,"]+))""", re.IGNORECASE)
MAX_HEADER_CHARS: Final = 8192


def declared_in_markup(tree: LexborHTMLParser, base: str, resolve: Resolve[T]) -> T | None:
    """The canonical of a parsed page's ``<link rel="canonical" href>``, resolved."""
    hrefs = set()
    for node in tree.tags("link"):
        attributes = node.attributes
        rel, href = attributes.get("rel"), attributes.get("href")
        if rel and href and "canonical" in rel.lower().split():
            hrefs.add(href.strip())
    if len(hrefs) != 1:
        return None
    href = hrefs.pop()
    return resolve(href, base) if href else None


def declared_in_headers(values: Iterable[str], base: str, resolve: Resolve[T]) -> T | None:
    """The canonical of a response's ``Link`` header values (the first that declares one)."""
    for value in values:
        for match in _LINK_VALUE.finditer(value[:MAX_HEADER_CHARS]):
            for rel in _REL.finditer(match.group(2)):
                tokens = (rel.group(1) or rel.group(2) or "").lower().split()
                if "canonical" in tokens:
                    href = match.group(1).strip()
                    return resolve(href, base) if href else None
    return None
