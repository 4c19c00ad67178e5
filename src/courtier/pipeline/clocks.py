"""Limit clocks that outlive a run.

A stop followed by a quick restart must not let a site or an origin start early: the next
run would otherwise begin with empty GCRA state and ask again at once, just after the last
run's final request or inside a Retry-After window. At the end of a run the engine writes,
per limit key, the wall-clock time before which nothing may start on it; at the start of
the next it takes those floors back. The table lives in the crawl's store file.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from pathlib import Path

_SCHEMA = """
CREATE TABLE IF NOT EXISTS limit_clocks (
    key TEXT PRIMARY KEY,
    not_before REAL NOT NULL
) WITHOUT ROWID
"""


def save_clocks(path: Path, not_before: Mapping[str, float], now: float) -> None:
    """Record the floors still in the future (wall-clock seconds); forget the past ones."""
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA busy_timeout = 5000")
        db.execute(_SCHEMA)
        db.execute("DELETE FROM limit_clocks WHERE not_before <= ?", (now,))
        db.executemany(
            "INSERT INTO limit_clocks (key, not_before) VALUES (?, ?) ON CONFLICT (key) "
            "DO UPDATE SET not_before = max(not_before, excluded.not_before)",
            [(key, when) for key, when in not_before.items() if when > now],
        )
    db.close()


def load_clocks(path: Path, now: float) -> dict[str, float]:
    """The floors recorded by earlier runs that still lie in the future."""
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA busy_timeout = 5000")
        db.execute(_SCHEMA)
        rows = db.execute("SELECT key, not_before FROM limit_clocks WHERE not_before > ?", (now,))
        result = {str(key): float(when) for key, when in rows}
    db.close()
    return result
