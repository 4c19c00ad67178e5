"""What a parse hook's ``HookResult`` does to the page's links, in the parse worker.

Rules:
- ``drop`` first: a link, an image or the declared canonical whose canonical URL is one of
  the URLs named (resolved against the page's URL and canonicalised as a link is), or whose
  fetch URL a pattern finds (``re.Pattern.search``), is taken out of the page: the crawl's
  discovery never sees it, so it is never fetched (nor a horizon vote), and the document's
  ``links`` and ``images`` no longer list it. A named URL that is no http(s) URL matches
  nothing.
- ``add`` next: each URL is redacted as a page's text is (a key in it becomes a placeholder
  and the intake refuses it), resolved against the page's URL and canonicalised as a page's
  links are (``parse.make_link``, its trap pattern included), then appended to the page's
  links unless the page links it already or ``drop`` names it. From there it is a link like
  any other: the crawl's intake, scope (outside the seed: horizon, never fetched),
  robots.txt, depth and trap caps, a ``nofollow`` page keeping it out. One that is no http(s)
  URL is counted with the page's bad links and named in ``not_urls``.
- ``priority`` becomes the page's (``ParsedPage.priority``): every URL it brings to the
  frontier new takes it (``frontier.base.lead_of``).
- The document says what was done, under ``hook_links``: ``added`` and ``dropped`` (fetch
  URLs), ``priority`` and, when any, ``not_urls``; it has no ``hook_links`` when the result
  asked for none of the three (a plain dict of fields never does).
- Matching is not under the hook's own budget (a pattern runs in C, which no timer
  interrupts): a pattern that backtracks for ever is stopped by the pool's
  ``[crawl] parse_timeout``, as a hook stuck in C code is.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final

from courtier.content.hook import HookResult
from courtier.content.parse import Link, ParsedPage, make_link
from courtier.sinks.redact import RedactionPolicy, redact_url

MAX_SHOWN_CHARS: Final = 300
"""Characters of an added string that is no URL kept in ``not_urls``."""


def apply_hook_links(
    page: ParsedPage, result: HookResult, base_url: str, policy: RedactionPolicy
) -> None:
    """``result``'s ``drop``, ``add`` and ``priority`` applied to ``page`` (see the rules)."""
    if not (result.add or result.drop or result.priority):
        return
    drops = _Drops(result.drop, base_url)
    dropped: list[str] = []

    def kept(links: list[Link]) -> list[Link]:
        out = []
        for link in links:
            if drops.match(link):
                dropped.append(link.fetch_url)
            else:
                out.append(link)
        return out

    page.links = kept(page.links)
    page.images = kept(page.images)
    if page.canonical is not None and drops.match(page.canonical):
        dropped.append(page.canonical.fetch_url)
        page.canonical = None
    known = {link.canonical for link in page.links}
    added: list[str] = []
    not_urls: list[str] = []
    for href in result.add:
        link = make_link(redact_url(href, policy).text, base_url)
        if link is None:
            not_urls.append(href[:MAX_SHOWN_CHARS])
            continue
        if link.canonical in known:
            continue
        known.add(link.canonical)
        if drops.match(link):
            continue
        page.links.append(link)
        added.append(link.fetch_url)
    page.bad_links += len(not_urls)
    page.priority = result.priority
    record: dict[str, Any] = {"added": added, "dropped": dropped, "priority": result.priority}
    if not_urls:
        record["not_urls"] = not_urls
    page.fields["hook_links"] = record


class _Drops:
    """The links a ``drop`` names: canonical URLs, and patterns searched in fetch URLs."""

    def __init__(self, drop: Sequence[str | re.Pattern[str]], base_url: str) -> None:
        self.urls: set[str] = set()
        self.patterns: list[re.Pattern[str]] = []
        for item in drop:
            if isinstance(item, re.Pattern):
                self.patterns.append(item)
                continue
            link = make_link(item, base_url)
            if link is not None:
                self.urls.add(link.canonical)

    def match(self, link: Link) -> bool:
        if link.canonical in self.urls:
            return True
        return any(pattern.search(link.fetch_url) for pattern in self.patterns)
