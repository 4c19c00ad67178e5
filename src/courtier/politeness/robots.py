"""robots.txt as RFC 9309 says to read it, decided from what the fetch returned.

Rules (RFC 9309 section 2.3.1):
- 2xx: parse the first ``max_bytes`` of the body (protego does the matching).
- 3xx: the fetcher follows up to five hops; past that the file counts as unavailable.
- 4xx ("unavailable"): the crawler may access any resource.
- 5xx or no answer at all ("unreachable"): assume complete disallow, and try again later.
- A cached result is used for at most 24 hours.
``Crawl-delay`` is not in the RFC; we honour it as a start-to-start gap that only ever slows
a site down.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from protego import Protego


class RobotsStatus(Enum):
    PARSED = "parsed"
    ALLOW_ALL = "allow-all"  # 4xx or too many redirects
    DISALLOW_ALL = "disallow-all"  # 5xx or unreachable


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
        if self.parser is None:
            return None
        delay = self.parser.crawl_delay(user_agent_token)
        if delay is None:
            return None
        try:
            value = float(delay)
        except (TypeError, ValueError):
            return None
        return value if value > 0 else None

    def sitemaps(self) -> list[str]:
        return list(self.parser.sitemaps) if self.parser is not None else []


def rules_from_response(
    status: int | None,
    body: bytes,
    now: float,
    *,
    max_age: float,
    retry_unreachable: float,
    max_bytes: int,
) -> RobotsRules:
    """Turn one robots.txt outcome into rules. ``status`` None means no answer at all."""
    if status is None or status >= 500:
        return RobotsRules(RobotsStatus.DISALLOW_ALL, now + retry_unreachable, None, status)
    if 200 <= status < 300:
        text = body[:max_bytes].decode("utf-8", errors="replace")
        try:
            parser = Protego.parse(text)
        except Exception:  # protego is lenient; a failure here must still not stop the crawl
            return RobotsRules(RobotsStatus.ALLOW_ALL, now + max_age, None, status)
        return RobotsRules(RobotsStatus.PARSED, now + max_age, parser, status)
    # 4xx, and 3xx chains that did not end (the fetcher passes the final status).
    return RobotsRules(RobotsStatus.ALLOW_ALL, now + max_age, None, status)
