"""robots.txt as RFC 9309 says to read it, decided from what the fetch returned.

Rules (RFC 9309 section 2.3.1):
- 2xx: parse the first ``max_bytes`` of the body (protego does the matching). The body is
  UTF-8 (RFC 9309 2.3); a UTF-8 byte-order mark is dropped, and a UTF-16 LE/BE byte-order
  mark means the file is UTF-16 (its rules must not be lost to a wrong decode). Undecodable
  bytes become U+FFFD. ``max_bytes`` counts raw bytes, before decoding.
- 3xx: the fetcher follows up to five hops; past that the file counts as unavailable.
- 4xx except 429 ("unavailable"): the crawler may access any resource.
- 429, 5xx, no answer at all, or a status that is no HTTP answer (below 200, above 599)
  ("unreachable"): assume complete disallow, and ask again after ``retry_unreachable``, or
  after the answer's Retry-After when there was one (at least 0, at most
  ``max_retry_after``). A server that says "too many requests" gave no permission.
- A cached result is used for at most 24 hours.
``Crawl-delay`` is not in the RFC; we honour it as a start-to-start gap that only ever slows
a site down. ``RobotsRules.crawl_delay`` gives a finite, positive delay or None; a delay
longer than the crawl is willing to honour is judged by ``crawl_delay_verdict``: the engine
suspends such a site (reason ``crawl-delay-too-long``) rather than freezing it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

from protego import Protego

CRAWL_DELAY_TOO_LONG = "crawl-delay-too-long"
_UTF8_BOM = b"\xef\xbb\xbf"
_UTF16_LE_BOM = b"\xff\xfe"
_UTF16_BE_BOM = b"\xfe\xff"


class RobotsStatus(Enum):
    PARSED = "parsed"
    ALLOW_ALL = "allow-all"  # 4xx or too many redirects
    DISALLOW_ALL = "disallow-all"  # 429, 5xx or unreachable


@dataclass(frozen=True, slots=True)
class RobotsRules:
    status: RobotsStatus
    expires_at: float
    parser: Protego | None = None
    http_status: int | None = None

    def allows(self, url: str, user_agent_token: str) -> bool:
        if self.status is RobotsStatus.ALLOW_ALL:
            return True
        if self.status is RobotsStatus.DISALLOW_ALL or self.parser is None:
            return False
        return bool(self.parser.can_fetch(url, user_agent_token))

    def crawl_delay(self, user_agent_token: str) -> float | None:
        """The Crawl-delay for the token in seconds: finite and > 0, or None. A huge finite
        value is returned as it is (see ``crawl_delay_verdict``)."""
        if self.parser is None:
            return None
        delay = self.parser.crawl_delay(user_agent_token)
        if delay is None:
            return None
        try:
            value = float(delay)
        except (TypeError, ValueError, OverflowError):
            return None
        return value if math.isfinite(value) and value > 0 else None

    def sitemaps(self) -> list[str]:
        return list(self.parser.sitemaps) if self.parser is not None else []


def crawl_delay_verdict(delay: float | None, maximum: float) -> tuple[float | None, str | None]:
    """(delay to apply, None) when a site's Crawl-delay is at most ``maximum`` seconds, or
    (None, ``"crawl-delay-too-long"``) when it asks for more: the engine suspends such a
    site with that reason. No delay, or a non-positive or NaN one, is (None, None)."""
    if delay is None or math.isnan(delay) or delay <= 0:
        return None, None
    if delay <= maximum:
        return delay, None
    return None, CRAWL_DELAY_TOO_LONG


def decode_robots(raw: bytes) -> str:
    """robots.txt bytes as text: UTF-8 unless a UTF-16 byte-order mark says otherwise."""
    if raw.startswith(_UTF8_BOM):
        return raw[len(_UTF8_BOM) :].decode("utf-8", errors="replace")
    if raw.startswith(_UTF16_LE_BOM):
        return raw[len(_UTF16_LE_BOM) :].decode("utf-16-le", errors="replace")
    if raw.startswith(_UTF16_BE_BOM):
        return raw[len(_UTF16_BE_BOM) :].decode("utf-16-be", errors="replace")
    return raw.decode("utf-8", errors="replace")


def rules_from_response(
    status: int | None,
    body: bytes,
    now: float,
    *,
    max_age: float,
    retry_unreachable: float,
    max_bytes: int,
    retry_after: float | None = None,
    max_retry_after: float = 24 * 3600.0,
) -> RobotsRules:
    """Turn one robots.txt outcome into rules. ``status`` None means no answer at all;
    ``retry_after`` is the answer's Retry-After in seconds (used only when unreachable)."""
    if status is None or status < 200 or status >= 500 or status == 429:
        wait = retry_unreachable
        if retry_after is not None and not math.isnan(retry_after):
            wait = min(max(retry_after, 0.0), max_retry_after)
        return RobotsRules(RobotsStatus.DISALLOW_ALL, now + wait, None, status)
    if 200 <= status < 300:
        text = decode_robots(body[: max(max_bytes, 0)])
        try:
            parser = Protego.parse(text)
        except Exception:  # protego is lenient; a failure here must still not stop the crawl
            return RobotsRules(RobotsStatus.ALLOW_ALL, now + max_age, None, status)
        return RobotsRules(RobotsStatus.PARSED, now + max_age, parser, status)
    # 4xx but 429, and 3xx chains that did not end (the fetcher passes the final status).
    return RobotsRules(RobotsStatus.ALLOW_ALL, now + max_age, None, status)
