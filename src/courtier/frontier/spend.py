"""What a crawl has spent of its budgets, kept in its store: the tables' SQL for both backends.

Rules:
- One row per measure (``requests``, ``pages``, ``bytes``: ``MEASURES``), each a total over
  every run and every worker on the store. A run adds what it spent since its last save
  (``add_spent``), so saves from several workers of a fleet add up, and a run saved twice
  adds nothing twice.
- A site's pages are not kept here: they are the site's URLs fetched at least once (done,
  or failed after a request), counted in ``urls`` (``fetched_per_site``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

MEASURES: Final = ("requests", "pages", "bytes")

SQLITE_TABLE: Final = """CREATE TABLE IF NOT EXISTS crawl_spend (
    measure TEXT PRIMARY KEY, amount INTEGER NOT NULL) WITHOUT ROWID"""
POSTGRES_TABLE: Final = """CREATE TABLE IF NOT EXISTS crawl_spend (
    measure text PRIMARY KEY, amount bigint NOT NULL)"""
SELECT: Final = "SELECT measure, amount FROM crawl_spend"
SQLITE_ADD: Final = (
    "INSERT INTO crawl_spend (measure, amount) VALUES (?, ?) ON CONFLICT (measure) "
    "DO UPDATE SET amount = amount + excluded.amount"
)
POSTGRES_ADD: Final = (
    "INSERT INTO crawl_spend (measure, amount) VALUES (%s, %s) ON CONFLICT (measure) "
    "DO UPDATE SET amount = crawl_spend.amount + excluded.amount"
)
FETCHED: Final = (
    # Fetched at least once: a fetch time, and not refused (robots.txt, the guard: no request).
    "SELECT site, COUNT(*) FROM urls WHERE fetched_at IS NOT NULL AND status <> 3"
)


def rows(amounts: Mapping[str, int]) -> list[tuple[str, int]]:
    """The rows ``add_spent`` adds: the known measures above 0, in their order."""
    unknown = set(amounts) - set(MEASURES)
    if unknown:
        raise ValueError(f"unknown spend measures: {sorted(unknown)}")
    return [(m, int(amounts[m])) for m in MEASURES if int(amounts.get(m, 0)) > 0]


def totals(found: Iterable[tuple[Any, Any]]) -> dict[str, int]:
    """Every measure's total (0 when never saved) from the table's rows."""
    spent = dict.fromkeys(MEASURES, 0)
    for measure, amount in found:
        if measure in spent:
            spent[str(measure)] = int(amount)
    return spent
