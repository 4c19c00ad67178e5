"""Page-level robots directives: ``<meta name="robots">`` and the ``X-Robots-Tag`` header.

Rules (Google's and Bing's documented reading, which sites write for):
- Directives are comma-separated and case-insensitive; ``none`` is ``noindex, nofollow``;
  ``all`` and unknown directives add nothing.
- ``<meta name="robots">`` speaks to every crawler, ``<meta name="TOKEN">`` (our robots.txt
  product token, ``fetch.user_agent_token``) to us alone; other crawlers' names are ignored.
- An ``X-Robots-Tag`` value may start with a crawler's name and a colon
  (``X-Robots-Tag: googlebot: nofollow``): it then applies only when that name is our token.
  Directives with values of their own (``unavailable_after: DATE``, ``max-snippet: 20``)
  are not crawler names.
- What the crawl does with them: ``nofollow`` - the page's links are recorded in its
  document but not followed (neither queued nor counted as horizon votes); ``noindex`` - the
  document is marked. A ``rel="nofollow"`` link is recorded with the attribute and gives no
  horizon vote.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

NOFOLLOW: Final = "nofollow"
NOINDEX: Final = "noindex"
_KNOWN: Final = frozenset({NOFOLLOW, NOINDEX, "noarchive", "nosnippet", "noimageindex"})
_VALUED: Final = frozenset(
    {"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"}
)


def directives(content: str) -> frozenset[str]:
    """The directives of one ``content`` value (or header value without a crawler name)."""
    found: set[str] = set()
    for part in content.split(","):
        word = part.strip().lower().split(":", 1)[0].strip()
        if word == "none":
            found |= {NOINDEX, NOFOLLOW}
        elif word in _KNOWN:
            found.add(word)
    return frozenset(found)


def meta_applies(name: str, token: str) -> bool:
    """Does ``<meta name=NAME>`` speak to us?"""
    lowered = name.strip().lower()
    return lowered == "robots" or (bool(token) and lowered == token.lower())


def header_directives(values: Iterable[str], token: str) -> frozenset[str]:
    """The directives of ``X-Robots-Tag`` header values that apply to crawler ``token``."""
    found: set[str] = set()
    for value in values:
        head, colon, rest = value.partition(":")
        name = head.strip().lower()
        crawler = name and not any(c in name for c in " ,") and name not in _VALUED | _KNOWN
        if colon and crawler:
            if token and name == token.lower():
                found |= directives(rest)
            continue  # another crawler's
        found |= directives(value)
    return frozenset(found)
