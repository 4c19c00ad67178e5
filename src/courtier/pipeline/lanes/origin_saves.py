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

from collections.abc import Callable

from courtier.frontier.base import FrontierStore
from courtier.origins.cluster import Assignment
from courtier.origins.evidence import Evidence
from courtier.origins.infer import InferenceResult

Written = tuple[str, float, tuple[Evidence, ...], float | None]
"""What a site's row holds: origin, confidence, evidence, re-check time."""


class OriginSaves:
    def __init__(self, mine: Callable[[], set[str]] | None = None) -> None:
        """``mine``: the hosts whose rows this worker writes (a fleet: those of the sites it
        holds, so each site's row, and each change logged, is written by one worker, not by
        every worker that inferred it); None: every host."""
        self.mine = mine
        self._written: dict[str, Written] = {}
        """Each site's assignment (``provisional`` aside: it is not stored) and re-check
        time as last written."""

    def __call__(self, store: FrontierStore, result: InferenceResult, now: float) -> None:
        """Write what changed (on the store's thread)."""
        assignments = result.assignments
        if self.mine is not None:
            mine = self.mine()
            assignments = {site: a for site, a in assignments.items() if site in mine}
            for site in self._written.keys() - mine:  # given back: its next holder writes it
                del self._written[site]
        due: dict[str, tuple[Assignment, Written]] = {}
        recheck_at = result.recheck_at
        for site, a in assignments.items():
            written = (a.origin, a.confidence, a.evidence, recheck_at.get(site))
            if self._written.get(site) != written:
                due[site] = (a, written)
        if not due:
            return
        store.save_origins([a for a, _ in due.values()], now, recheck_at)
        for site, (_, written) in due.items():
            self._written[site] = written
