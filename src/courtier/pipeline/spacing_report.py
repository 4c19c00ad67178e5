"""Achieved start-to-start spacing against the allowed one, per key type: so a key that is
used at half its allowance shows in every crawl's summary instead of hiding in the ceiling.

Rules:
- Each start leaves, on each of its keys, the spacing the key then allows before the next
  one: its cost times the key's interval as booked (an unweighted key, a site, counts one
  request), so Crawl-delay, backoff and latency slowdowns are in the allowance, not in the
  shortfall.
- A site is judged as its server sees it: the gap between two starts of the same lane (the
  same host) against the lane's own site interval, whichever ``site:`` key it books on (two
  hosts wrongly sharing one site clock each show twice their allowance). A shared key (an
  origin, a CDN's misses) is judged on the key: the gap since the key's previous start, by
  any lane, against what that start allowed.
- A start is judged on the constraint that should have set it: its site, or the shared key
  whose allowance after its previous start ends last (a page whose origin was busy with the
  site's images, or with its platform's other tenants, is the origin's start, not a short
  one of its site's). It is judged only when its work was booked by the time that
  constraint allowed it (``READY_SLACK`` of the allowance late at most): the lane was
  waiting, so any gap past the allowance is the crawl's own doing. A site with nothing to
  fetch, a lane held by its own pause or an image found late is not a shortfall.
- Keys with burst tolerance (buckets) may start back to back by design: they are not judged.
- Per key type: how many starts were judged, their achieved/allowed ratio (median, p90; a
  histogram in hundredths, so a long crawl keeps a fixed size) and the mean gap and
  allowance.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from courtier.politeness.gcra import Limit

READY_SLACK = 0.1
"""A booking this share of the allowance after it was due still counts as waiting for it
(a lane books when its own spacing lets it, a turn of the loop after the key does)."""
MAX_RATIO = 5.0
"""Ratios are kept in hundredths up to this (a 20x gap counts as 5x in the histogram)."""


@dataclass(slots=True)
class KeyTypeSpacing:
    starts: int = 0
    gap_total: float = 0.0
    allowed_total: float = 0.0
    ratios: Counter[int] = field(default_factory=Counter)
    """Hundredths of achieved/allowed -> starts."""

    def add(self, gap: float, allowed: float) -> None:
        self.starts += 1
        self.gap_total += gap
        self.allowed_total += allowed
        self.ratios[round(min(MAX_RATIO, gap / allowed) * 100)] += 1

    def quantile(self, q: float) -> float:
        if not self.starts:
            return 0.0
        wanted, seen = q * self.starts, 0
        for hundredths in sorted(self.ratios):
            seen += self.ratios[hundredths]
            if seen >= wanted:
                return hundredths / 100
        return MAX_RATIO

    def as_dict(self) -> dict[str, Any]:
        n = max(1, self.starts)
        return {
            "starts": self.starts,
            "median_ratio": self.quantile(0.5),
            "p90_ratio": self.quantile(0.9),
            "mean_gap_s": round(self.gap_total / n, 3),
            "mean_allowed_s": round(self.allowed_total / n, 3),
        }


class SpacingReport:
    def __init__(self) -> None:
        self._last: dict[str, tuple[float, float]] = {}
        """Shared key, or ``lane <name>`` -> (its last start, when it allows the next)."""
        self.by_type: dict[str, KeyTypeSpacing] = {}

    def started(
        self, lane: str, limits: Iterable[Limit], cost: float, booked_at: float, now: float
    ) -> None:
        """A request of ``lane`` booked at ``booked_at`` on ``limits`` at ``cost`` started
        ``now``."""
        last_of = self._last
        binding: tuple[str, float, float] | None = None  # (kind, last start, allowed until)
        for limit in limits:
            key, params = limit.key, limit.params
            if params.burst > 0:
                continue
            kind = key.partition(":")[0]
            mark = f"lane {lane}" if kind == "site" else key
            charge = (cost if params.weighted else 1.0) * params.interval
            last = last_of.get(mark)
            if last is None:
                last_of[mark] = (now, now + charge)
                continue
            if binding is None or last[1] > binding[2]:
                binding = (kind, *last)
            # A shared key's allowance runs on from whichever start used it last (GCRA over
            # the starts); a lane's from its own previous start.
            until = now + charge if kind == "site" else max(last[1], now) + charge
            last_of[mark] = (now, until)
        if binding is None:
            return
        kind, previous, until = binding
        allowed = until - previous
        if allowed > 0 and booked_at <= until + allowed * READY_SLACK:
            tally = self.by_type.get(kind)
            if tally is None:
                tally = self.by_type[kind] = KeyTypeSpacing()
            tally.add(now - previous, allowed)

    def as_dict(self) -> dict[str, dict[str, Any]]:
        return {kind: tally.as_dict() for kind, tally in sorted(self.by_type.items())}


def describe(report: dict[str, dict[str, Any]]) -> str:
    """One line for a summary: ``site x1.00 (p90 x1.04, 1,234 starts), origin ...``."""
    parts = [
        f"{kind} x{row['median_ratio']:.2f} (p90 x{row['p90_ratio']:.2f}, {row['starts']:,} starts)"
        for kind, row in report.items()
        if row["starts"]
    ]
    return ", ".join(parts) or "no key was waited on"
