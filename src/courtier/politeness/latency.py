"""Latency feedback: a key slows down when its server's answers slow down, before errors start.

Rules (one ``LatencyState`` per site and per origin):
- The baseline is the lowest latency seen, drifting slowly towards higher answers, so a server
  that has become slower for good is adopted within about ``1 / baseline_drift`` answers. The
  current latency is an exponentially weighted average (``smoothing``).
- Congestion means ``current > baseline * ratio`` and ``current - baseline > min_rise``: both,
  so a 2 ms server going to 5 ms is not "congested" and a 2 s server going to 2.1 s is not
  either.
- On congestion the key's rate factor is multiplied by ``decrease``, at most once per
  ``cooldown`` seconds: answers to requests sent at the old rate must not cut it twice.
- Otherwise every answer adds ``increase`` to the factor, up to 1: multiplicative decrease,
  additive recovery, as in TCP congestion control.
- The factor never goes below ``floor``: latency slows a site down, it never stops it.
The key's interval is its base interval divided by the factor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LatencyParams:
    ratio: float = 2.0
    min_rise: float = 0.05
    decrease: float = 0.5
    increase: float = 0.05
    floor: float = 0.05
    smoothing: float = 0.5
    baseline_drift: float = 0.01
    cooldown: float = 5.0

    def __post_init__(self) -> None:
        if not (0 < self.decrease < 1 and 0 < self.floor <= 1 and 0 < self.smoothing <= 1):
            raise ValueError("latency feedback: decrease, floor and smoothing must be in (0, 1]")
        if self.ratio < 1 or self.min_rise < 0 or self.increase < 0 or self.cooldown < 0:
            raise ValueError("latency feedback: ratio >= 1 and non-negative rise/increase/cooldown")


@dataclass(frozen=True, slots=True)
class LatencyState:
    baseline: float | None = None
    current: float | None = None
    factor: float = 1.0
    """Share of the key's configured rate it may use now (1: all of it)."""
    last_decrease: float = -math.inf
    decreases: int = 0

    def congested(self, params: LatencyParams) -> bool:
        if self.baseline is None or self.current is None:
            return False
        return _congested(self.baseline, self.current, params)


def _congested(baseline: float, current: float, params: LatencyParams) -> bool:
    return current > baseline * params.ratio and current - baseline > params.min_rise


def observe(state: LatencyState, latency: float, now: float, params: LatencyParams) -> LatencyState:
    """The state after one answer that took ``latency`` seconds (request sent to headers).
    (Built once, not replaced step by step: a site and its origin observe every answer.)"""
    if not math.isfinite(latency) or latency < 0:
        return state
    if state.baseline is None or state.current is None:
        return LatencyState(latency, latency, state.factor, state.last_decrease, state.decreases)
    baseline = min(latency, state.baseline + (latency - state.baseline) * params.baseline_drift)
    current = state.current + (latency - state.current) * params.smoothing
    factor, last_decrease, decreases = state.factor, state.last_decrease, state.decreases
    if _congested(baseline, current, params):
        if now - last_decrease >= params.cooldown:
            factor, last_decrease, decreases = (
                max(params.floor, factor * params.decrease),
                now,
                decreases + 1,
            )
    else:
        factor = min(1.0, factor + params.increase)
    return LatencyState(baseline, current, factor, last_decrease, decreases)
