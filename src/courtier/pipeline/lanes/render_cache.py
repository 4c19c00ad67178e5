"""Scripts and stylesheets kept across renders, so a hundred renders of one site do not
fetch its bundle a hundred times.

Rules:
- Only a 200 answer to a script or stylesheet request is kept, and not when it says
  ``no-store``. It is used without asking again until it is stale: its ``max-age`` (or
  ``s-maxage``) from when it was fetched, capped by the crawl's ``cache_seconds``;
  ``no-cache`` makes it stale at once.
- A stale entry is asked for again with its validators (``If-None-Match``,
  ``If-Modified-Since``); a 304 makes it fresh again, anything else replaces it.
- The cache holds at most ``max_bytes`` of bodies (least recently used go first); a body
  larger than an eighth of that is not kept.
- Times are the crawl's clock (the ``Timer``), passed in.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass
from typing import Final

from courtier.net.headers import etag, http_date

_MAX_AGE: Final = re.compile(r"(?i)(?:^|[,\s])s?-?max-?age\s*=\s*\"?(\d{1,10})")


@dataclass(slots=True)
class CachedAsset:
    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes
    fresh_until: float

    def header(self, name: str) -> str | None:
        lower = name.lower()
        return next((v for k, v in self.headers if k.lower() == lower), None)

    def validators(self) -> dict[str, str]:
        """The conditional headers that ask whether it changed."""
        sent: dict[str, str] = {}
        tag = etag(self.header("ETag"))
        if tag is not None:
            sent["If-None-Match"] = tag
        modified = self.header("Last-Modified")
        if modified is not None and http_date(modified) is not None:
            sent["If-Modified-Since"] = modified
        return sent


def freshness(headers: tuple[tuple[str, str], ...], cap: float) -> float | None:
    """Seconds an answer with ``headers`` may be used without asking; None: not kept."""
    control = ",".join(v for k, v in headers if k.lower() == "cache-control").lower()
    if "no-store" in control:
        return None
    if "no-cache" in control:
        return 0.0
    match = _MAX_AGE.search(control)
    return min(cap, float(match.group(1))) if match else cap


class AssetCache:
    def __init__(self, max_bytes: int, max_seconds: float) -> None:
        self.max_bytes = max_bytes
        self.max_seconds = max_seconds
        self._entries: OrderedDict[str, CachedAsset] = OrderedDict()
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, url: str) -> CachedAsset | None:
        entry = self._entries.get(url)
        if entry is not None:
            self._entries.move_to_end(url)
        return entry

    def store(
        self, url: str, status: int, headers: tuple[tuple[str, str], ...], body: bytes, now: float
    ) -> None:
        self.drop(url)
        seconds = freshness(headers, self.max_seconds)
        if status != 200 or seconds is None or len(body) > self.max_bytes // 8:
            return
        self._entries[url] = CachedAsset(status, headers, body, now + seconds)
        self._bytes += len(body)
        while self._bytes > self.max_bytes and self._entries:
            _, old = self._entries.popitem(last=False)
            self._bytes -= len(old.body)

    def revalidated(self, url: str, headers: tuple[tuple[str, str], ...], now: float) -> None:
        """A 304 said the entry still holds: fresh again for as long as the 304 allows
        (its own headers, else the entry's)."""
        entry = self._entries.get(url)
        if entry is None:
            return
        seconds = freshness(headers or entry.headers, self.max_seconds)
        entry.fresh_until = now + (seconds or 0.0)

    def drop(self, url: str) -> None:
        old = self._entries.pop(url, None)
        if old is not None:
            self._bytes -= len(old.body)
