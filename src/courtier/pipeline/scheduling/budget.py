"""What a crawl may spend, and what it has: the budgets that end a crawl by themselves.

Rules:
- The budgets (``[crawl] max_requests``, ``max_pages``, ``max_bytes``; 0: none) count what
  the store has recorded over every run on it (``FrontierStore.spent``) plus what this run
  has spent since: the same command run again after a stop at a budget spends nothing more.
  This run's spend is added to the store's from time to time and when it stops (``saving``,
  ``saved``); on a store several workers share, what the others spent counts from the save
  that brought it in.
- A request is spent when it starts (``take``: before its DNS, its guard, its answer), so
  the crawl never starts the request that would pass ``max_requests`` or ``max_pages``: the
  servers see at most the budget. A page is the start of a request for a frontier URL (a
  page, a sitemap, a redirect's target, a refresh, a retry); robots.txt, media and renders'
  requests are requests, not pages.
- Bytes are known only as answers arrive (the summary's ``bytes``, bodies as received):
  once they reach ``max_bytes`` nothing new starts; requests in flight then may pass it by
  what they bring (at most ``crawl.max_in_flight`` bodies of ``fetch.max_body_bytes``).
- A budget spent ends the crawl (``ended``, with the budget's name); nothing new starts
  from then on.
- ``max_pages_per_site`` caps the URLs of one site fetched at least once (the store's count
  when the run began, plus the new URLs this run starts there): a full site is given no new
  URL, its fetched pages are still refreshed, and the crawl goes on.

Pure: numbers in, decisions out; the engine reads the store and the counters.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Budgets:
    max_requests: int = 0
    max_pages: int = 0
    max_bytes: int = 0
    max_pages_per_site: int = 0

    @property
    def ends_crawl(self) -> bool:
        """A budget that ends the crawl when spent is set."""
        return bool(self.max_requests or self.max_pages or self.max_bytes)


@dataclass(frozen=True, slots=True)
class Spend:
    requests: int = 0
    pages: int = 0
    bytes: int = 0

    def __add__(self, other: Spend) -> Spend:
        return Spend(
            self.requests + other.requests, self.pages + other.pages, self.bytes + other.bytes
        )

    def __sub__(self, other: Spend) -> Spend:
        return Spend(
            self.requests - other.requests, self.pages - other.pages, self.bytes - other.bytes
        )

    def as_dict(self) -> dict[str, int]:
        return {"requests": self.requests, "pages": self.pages, "bytes": self.bytes}

    @classmethod
    def of(cls, amounts: Mapping[str, int]) -> Spend:
        return cls(
            int(amounts.get("requests", 0)),
            int(amounts.get("pages", 0)),
            int(amounts.get("bytes", 0)),
        )


class Budget:
    def __init__(
        self,
        budgets: Budgets,
        recorded: Spend | None = None,
        site_pages: Mapping[str, int] | None = None,
        *,
        run_bytes: Callable[[], int] = lambda: 0,
        ended: Callable[[str], object] = lambda _reason: None,
    ) -> None:
        """``recorded``: the store's spend when the run began; ``site_pages``: each site's
        URLs fetched by then; ``run_bytes()``: body bytes this run has received so far;
        ``ended(reason)`` is called once a budget is spent (again on each refused start)."""
        self.budgets = budgets
        self.others = recorded or Spend()
        """What the store holds that this run did not add (earlier runs, other workers)."""
        self.run_bytes = run_bytes
        self.ended = ended
        self._requests = 0
        self._pages = 0
        self._saved = Spend()
        """This run's spend already added to the store."""
        self.site_pages: dict[str, int] = dict(site_pages or {})

    # -- what is spent ------------------------------------------------------------------

    @property
    def run(self) -> Spend:
        """What this run has spent."""
        return Spend(self._requests, self._pages, self.run_bytes())

    @property
    def total(self) -> Spend:
        """What the crawl has spent, every run together."""
        return self.others + self.run

    def exhausted(self) -> str | None:
        """The first budget spent (``max_requests``, ``max_pages``, ``max_bytes``), or None."""
        budgets, total = self.budgets, self.total
        if budgets.max_requests and total.requests >= budgets.max_requests:
            return "max_requests"
        if budgets.max_pages and total.pages >= budgets.max_pages:
            return "max_pages"
        if budgets.max_bytes and total.bytes >= budgets.max_bytes:
            return "max_bytes"
        return None

    def take(self, *, page: bool) -> bool:
        """A request (a page's, with ``page``) may start now: spent, True. False: a budget
        is spent, nothing is taken (and ``ended`` hears which)."""
        reason = self.exhausted()
        if reason is not None:
            self.ended(reason)
            return False
        self._requests += 1
        self._pages += page
        reason = self.exhausted()
        if reason is not None:
            self.ended(reason)  # this start was the last one
        return True

    # -- a site's pages -----------------------------------------------------------------

    def site_full(self, site: str) -> bool:
        """The site has ``max_pages_per_site`` URLs fetched: no new URL of it starts."""
        cap = self.budgets.max_pages_per_site
        return bool(cap) and self.site_pages.get(site, 0) >= cap

    def new_page(self, site: str) -> None:
        """A URL of ``site`` never fetched before starts now."""
        self.site_pages[site] = self.site_pages.get(site, 0) + 1

    # -- keeping it in the store --------------------------------------------------------

    def saving(self) -> Spend:
        """What to add to the store's spend now (this run's since the last save)."""
        return self.run - self._saved

    def saved(self, added: Spend, totals: Spend) -> None:
        """``added`` (from ``saving``) is in the store, whose spend is now ``totals``."""
        self._saved = self._saved + added
        self.others = totals - self._saved
