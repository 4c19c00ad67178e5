"""The one door every URL the crawl may fetch passes: page links, images for the media
lanes, sitemap and feed entries, and the redirects of pages, media and robots.txt.

Rules:
- A URL holding a redaction placeholder (the parser replaced a secret or a personal
  address in it) is never fetched, whatever wants it: refused as ``secret-in-url``.
- A redirect is followed within its budget of hops (``MAX_REDIRECTS`` for pages and media;
  robots.txt's own, ``[robots] max_redirects``), never to a Location that carries a secret
  (following it would hand the secret to whoever it points at: ``secret-in-url``), and
  only to a Location that is a URL (``invalid-location``).
- Every refusal is counted in ``stats.refused`` under its reason, once per URL offered.
"""

from __future__ import annotations

from collections import Counter

from courtier.sinks.redact import DEFAULT_POLICY, RedactionPolicy, is_redacted, redact_url
from courtier.url import Url, UrlError, parse_url

MAX_REDIRECTS = 5
"""Hops after a page's or an image's first request."""


class UrlIntake:
    def __init__(self, refused: Counter[str], redaction: RedactionPolicy = DEFAULT_POLICY) -> None:
        self.refused = refused
        self.redaction = redaction

    def admits(self, fetch_url: str) -> bool:
        """``fetch_url`` may be fetched (as far as its text goes; scope is the caller's)."""
        if is_redacted(fetch_url):
            self.refused["secret-in-url"] += 1
            return False
        return True

    def redirect(
        self, location: str, base: str, hops: int, budget: int = MAX_REDIRECTS
    ) -> Url | None:
        """Where a redirect from ``base`` leads, as hop ``hops + 1``; None: not followed."""
        if hops >= budget:
            self.refused["redirect-limit"] += 1
            return None
        if redact_url(location, self.redaction).changed:
            self.refused["secret-in-url"] += 1
            return None
        try:
            target = parse_url(location, base)
        except UrlError:
            self.refused["invalid-location"] += 1
            return None
        if not self.admits(target.fetch_url):
            return None
        return target
