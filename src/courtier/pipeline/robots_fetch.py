"""Fetching one robots.txt: the redirect hops RFC 9309 asks a crawler to follow.

Rules:
- Up to ``max_redirects`` hops are followed (RFC 9309: at least five), each through ``get``,
  which applies the SSRF guard to every host. A chain that does not end in time, or a
  ``Location`` that is no URL, ends at that 3xx answer (read as "unavailable": allow all).
- ``get`` returning None (the guard refused) ends the chain with None; the caller knows why.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from courtier.net.fetch import FetchResult
from courtier.url import UrlError, parse_url

REDIRECTS = frozenset({301, 302, 303, 307, 308})

Get = Callable[[str, str], Awaitable[FetchResult | None]]
"""(fetch URL, its host) -> the answer, or None when the guard refused the host."""


async def fetch_robots(get: Get, url: str, host: str, max_redirects: int) -> FetchResult | None:
    """The final answer for ``url`` (a robots.txt fetch URL) after its redirects."""
    result: FetchResult | None = None
    for _hop in range(max_redirects + 1):
        result = await get(url, host)
        if result is None or result.status not in REDIRECTS or not result.location:
            return result
        try:
            hop = parse_url(result.location, url)
        except UrlError:
            return result
        url, host = hop.fetch_url, hop.host
    return result
