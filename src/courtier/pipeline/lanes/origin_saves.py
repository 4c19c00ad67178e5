"""Writing the crawl's origins to the store: only what changed since the last write.

The origins are inferred again whenever new evidence arrives (every site's first answers in
the first minute of a crawl) and when DNS answers expire; each inference gives every site's
assignment, and writing all of them each time made the origin map a large part of what a
worker on PostgreSQL spent beyond one on SQLite (``bench/bench_rebook.py --store sqlite
postgresql --workers 2``). A site is written when its origin, confidence, evidence or
re-check time changed since its last write, so a site's ``checked_at`` says when its
assignment was last found different or re-checked, and a write that fails is tried again
with the next inference.
"""

from __future__ import annotations

import dataclasses

from courtier.frontier.base import FrontierStore
from courtier.origins.cluster import Assignment
from courtier.origins.infer import InferenceResult


class OriginSaves:
    def __init__(self) -> None:
        self._written: dict[str, tuple[Assignment, float | None]] = {}
        """Each site's assignment (``provisional`` aside: it is not stored) and re-check
        time as last written."""

    def __call__(self, store: FrontierStore, result: InferenceResult, now: float) -> None:
        """Write what changed (on the store's thread)."""
        due = {}
        for site, assignment in result.assignments.items():
            written = (
                dataclasses.replace(assignment, provisional=False),
                result.recheck_at.get(site),
            )
            if self._written.get(site) != written:
                due[site] = (assignment, written)
        if not due:
            return
        store.save_origins([a for a, _ in due.values()], now, result.recheck_at)
        for site, (_, written) in due.items():
            self._written[site] = written
