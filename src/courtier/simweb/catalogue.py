"""What every page renderer of the simulated web shares: the answer and a seed site's catalogue.

Rules:
- A `Page` is one answer: status, body, content type and the headers the page itself carries.
- A seed site's catalogue is `n_items` detail pages split over `n_lists` listings. The numbering
  lives here only, so that the plain pages, the single-page apps' API and their plain-HTML twin
  list the same items: listing N holds the items `listing_items(params, N)`, item N belongs to
  listing `listing_of(params, N)` and names the items `related_items(params, N, rng)`.
- `related_items` draws from the rng it is given and leaves it where a plain item page goes on
  drawing from, so refactoring the numbering here changes no page by a byte.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from courtier.simweb.world import WorldParams

HTML = "text/html; charset=utf-8"
TEXT = "text/plain; charset=utf-8"
JPEG = "image/jpeg"
XML = "application/xml"
JSON = "application/json"
JAVASCRIPT = "application/javascript"
CSS = "text/css"


@dataclass(frozen=True)
class Page:
    status: int
    body: bytes
    content_type: str
    headers: tuple[tuple[str, str], ...] = ()


def listing_items(params: WorldParams, n: int) -> range:
    """The items listing `n` (1-based) holds: an equal share each, the last one what is left."""
    per = -(-params.n_items // params.n_lists)
    return range((n - 1) * per + 1, min(n * per, params.n_items) + 1)


def listing_of(params: WorldParams, n: int) -> int:
    """The listing an item's "back to the catalogue" link leads to."""
    return 1 + (n - 1) * params.n_lists // params.n_items


def related_items(params: WorldParams, n: int, rng: random.Random) -> list[int]:
    """The items item `n` links as related, sorted: its two neighbours by rule and one drawn."""
    p = params
    return sorted({1 + (n % p.n_items), 1 + ((n + 6) % p.n_items), rng.randint(1, p.n_items)})
