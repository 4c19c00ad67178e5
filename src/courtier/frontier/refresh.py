"""Adaptive refresh: how long until a page is fetched again.

Rules:
- Each page carries a refresh interval, bounded by its importance class: an ordinary page
  lives between one day and six months; a page among the most retrieved (from a supplied
  feed of retrieval counts) and a page an operator flagged critical get a shorter floor and
  ceiling, so they are never left alone for long.
- After each successful fetch the content fingerprint is compared with the last one: a change
  multiplies the interval by ``shrink`` (< 1), no change by ``grow`` (> 1); the result is
  clamped to the class's bounds. A change means the page moves faster than we look, so we look
  more often; a run of unchanged fetches backs off geometrically towards the ceiling.
- The first fetch has nothing to compare with and starts at the class's initial interval.
- A failed fetch says nothing about the content: it does not touch the interval (retries are
  the backoff policy's business).
- A page that moves up a class (flagged critical) is pulled into the new bounds at once; one
  that moves down keeps its interval until its next fetch widens it.

All functions are pure; times are seconds on whatever clock the caller uses.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

HOUR = 3600.0
DAY = 24 * HOUR
MONTH = 30 * DAY


class Importance(Enum):
    ORDINARY = "ordinary"
    POPULAR = "popular"  # among the most retrieved pages of a supplied feed
    CRITICAL = "critical"  # flagged by an operator


@dataclass(frozen=True, slots=True)
class IntervalBounds:
    floor: float
    ceiling: float
    initial: float

    def __post_init__(self) -> None:
        values = (self.floor, self.ceiling, self.initial)
        if not all(math.isfinite(v) and v > 0 for v in values):
            raise ValueError(f"refresh bounds must be positive and finite: {values}")
        if not self.floor <= self.initial <= self.ceiling:
            raise ValueError(f"need floor <= initial <= ceiling, got {values}")

    def clamp(self, interval: float) -> float:
        return min(self.ceiling, max(self.floor, interval))


@dataclass(frozen=True, slots=True)
class RefreshPolicy:
    ordinary: IntervalBounds = IntervalBounds(floor=DAY, ceiling=6 * MONTH, initial=7 * DAY)
    popular: IntervalBounds = IntervalBounds(floor=6 * HOUR, ceiling=MONTH, initial=DAY)
    critical: IntervalBounds = IntervalBounds(floor=HOUR, ceiling=7 * DAY, initial=6 * HOUR)
    shrink: float = 0.5
    grow: float = 1.5

    def __post_init__(self) -> None:
        if not 0.0 < self.shrink < 1.0:
            raise ValueError(f"shrink must lie strictly between 0 and 1, got {self.shrink}")
        if not 1.0 < self.grow < math.inf:
            raise ValueError(f"grow must be finite and greater than 1, got {self.grow}")

    def bounds(self, importance: Importance) -> IntervalBounds:
        if importance is Importance.CRITICAL:
            return self.critical
        if importance is Importance.POPULAR:
            return self.popular
        return self.ordinary


@dataclass(frozen=True, slots=True)
class RefreshState:
    """What the frontier keeps per page for refresh decisions."""

    fingerprint: str | None
    interval: float
    next_due: float
    unchanged_fetches: int = 0


def after_fetch(
    previous: RefreshState | None,
    fingerprint: str,
    fetched_at: float,
    importance: Importance = Importance.ORDINARY,
    policy: RefreshPolicy = RefreshPolicy(),
) -> RefreshState:
    """The page's refresh state after a successful fetch whose content had ``fingerprint``."""
    bounds = policy.bounds(importance)
    if previous is None or previous.fingerprint is None:
        return RefreshState(fingerprint, bounds.initial, fetched_at + bounds.initial, 0)
    if fingerprint == previous.fingerprint:
        interval = bounds.clamp(previous.interval * policy.grow)
        unchanged = previous.unchanged_fetches + 1
    else:
        interval = bounds.clamp(previous.interval * policy.shrink)
        unchanged = 0
    return RefreshState(fingerprint, interval, fetched_at + interval, unchanged)


def reclassify(
    state: RefreshState,
    importance: Importance,
    policy: RefreshPolicy = RefreshPolicy(),
    now: float | None = None,
) -> RefreshState:
    """Pull a page's interval under a stricter class's ceiling (e.g. just flagged critical).

    The next due time moves earlier when the new ceiling demands it (never before ``now``
    when given); a page that becomes less important keeps its schedule until its next fetch.
    """
    ceiling = policy.bounds(importance).ceiling
    if state.interval <= ceiling:
        return state
    last_fetch = state.next_due - state.interval
    next_due = last_fetch + ceiling
    if now is not None:
        next_due = max(next_due, now)
    return RefreshState(state.fingerprint, ceiling, next_due, state.unchanged_fetches)


def importance_of(critical: bool, retrievals: int | None, threshold: int | None) -> Importance:
    """The class of a page: flagged critical, else popular when its retrieval count reaches
    the threshold of the most-retrieved set, else ordinary."""
    if critical:
        return Importance.CRITICAL
    if retrievals is not None and threshold is not None and retrievals >= threshold > 0:
        return Importance.POPULAR
    return Importance.ORDINARY


def popular_threshold(retrieval_counts: Sequence[int], top_fraction: float) -> int | None:
    """The retrieval count a page needs to be in the top ``top_fraction`` of the feed.

    None when the feed is empty or nobody retrieved anything. Ties at the threshold are all in.
    """
    if not 0.0 < top_fraction <= 1.0:
        raise ValueError(f"top_fraction must lie in (0, 1], got {top_fraction}")
    positive = sorted((count for count in retrieval_counts if count > 0), reverse=True)
    if not positive:
        return None
    keep = max(1, math.floor(len(retrieval_counts) * top_fraction))
    return positive[min(keep, len(positive)) - 1]
