"""The discovery-versus-refresh split of the whole crawl (``frontier.split``'s rules, once).

Rules:
- One target share for the crawl: the drain time of the crawl's backlog (URLs discovered and
  never fetched, over every site this worker holds) at the rate the crawl really emits
  requests, slid between the policy's floor and ceiling (``target_discovery_share``).
- One credit accumulator turns it into decisions, over every site's contested choice (a
  site holding both kinds of work): over any run, discovery decisions differ from the sum of
  the targets by under one decision, however the target moved as the backlog drained.
- The per-host guard stays: a site with only one kind of work is served that kind and the
  credit is left alone (an empty lane builds no debt), and fastlane and freshlane work goes
  before either (``next_url``).
- The backlog and the emit rate (each site's ``EmitRate``: what it really gets, on a busy
  shared origin far below its own interval) are summed over the lanes at most once a second
  (thousands of sites: a sum per request would cost more than the decision).
- ``shares`` (the stats, the metrics): the latest target and the realised share of the
  contested decisions, with the mean target over them to compare it with.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from courtier.frontier.split import Lane, SplitPolicy, SplitState, decide
from courtier.frontier.split import target_discovery_share as target_share

SUM_EVERY = 1.0
"""Seconds between two sums of the lanes' backlogs and rates."""


class CrawlSplit:
    def __init__(
        self, policy: SplitPolicy, lanes: Mapping[str, Any], shares: dict[str, float]
    ) -> None:
        self.policy = policy
        self.published = shares
        """Where ``shares`` is copied once a second (``CrawlStats.split``)."""
        self.lanes = lanes
        """The site lanes (each with a ``backlog``): summed for the crawl's backlog."""
        self.state = SplitState()
        self.backlog = 0
        self.rate = 0.0
        self.target = policy.floor
        self._summed_at = float("-inf")

    def decide(self, now: float, *, discovery_ready: bool, refresh_ready: bool) -> Lane | None:
        if discovery_ready and refresh_ready:
            summed = now - self._summed_at >= SUM_EVERY
            if summed:
                lanes = list(self.lanes.values())
                self.backlog = sum(lane.backlog for lane in lanes)
                self.rate = sum(lane.emit.rate(now) for lane in lanes)
                self._summed_at = now
            # Before any rate is measured (its first second), one request a second.
            self.target = target_share(self.backlog, self.rate or 1.0, self.policy)
            if summed:  # the target of the new sum, not the one before it
                self.published.update(self.shares())
        chosen, self.state = decide(
            self.state, self.target, discovery_ready=discovery_ready, refresh_ready=refresh_ready
        )
        if chosen is Lane.DISCOVERY:
            self.backlog = max(0, self.backlog - 1)
        return chosen

    def shares(self) -> dict[str, float]:
        """The latest target, the realised share of contested decisions and their mean
        target (0 before any contested decision), and the decisions."""
        state = self.state
        contested = state.discovery + state.refresh
        return {
            "target": round(self.target, 4),
            "realised": round(state.discovery / contested, 4) if contested else 0.0,
            "mean_target": round(state.target_total / contested, 4) if contested else 0.0,
            "contested": float(contested),
            "forced": float(state.forced),
        }
