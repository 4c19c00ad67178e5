"""The live split of a host's request budget between discovery and refresh.

Rules:
- The pressure to discover is ``backlog_drain_seconds = discovered_backlog / emit_rate``: how
  long the URLs found but never fetched would take to fetch at the rate requests are being
  emitted. A long drain means discovery is falling behind.
- The target discovery share slides continuously with that pressure, from ``floor`` (nothing
  waiting) towards ``ceiling`` (an endless backlog), reaching halfway at
  ``half_share_drain_seconds``:
  ``share = floor + (ceiling - floor) * drain / (drain + half_share_drain_seconds)``.
  There are no steps to oscillate around, and the floor keeps new pages flowing however much
  refresh work is due; a ceiling below one keeps refresh alive under an endless backlog.
- A credit accumulator turns the (changing) target into decisions: each decision adds the
  current target to the credit, and discovery is chosen when the credit reaches one half,
  which spends one unit. The credit therefore stays in [-1/2, 1/2), so over any run the count
  of discovery decisions differs from the sum of the targets by at most half a decision — no
  rounding drift, whatever the target did meanwhile.
- When one lane has no work, the other is served and the credit is left alone: an empty
  lane builds no debt that would later be repaid as a burst starving the other lane.

Pure: the caller keeps a ``SplitState`` per host and measures the emit rate with
``EmitRate`` on its own clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from enum import StrEnum


class Lane(StrEnum):
    DISCOVERY = "discovery"
    REFRESH = "refresh"


@dataclass(frozen=True, slots=True)
class SplitPolicy:
    floor: float = 0.1
    ceiling: float = 0.9
    half_share_drain_seconds: float = 3600.0

    def __post_init__(self) -> None:
        if not 0.0 < self.floor <= self.ceiling <= 1.0:
            raise ValueError(f"need 0 < floor <= ceiling <= 1, got {self.floor}, {self.ceiling}")
        if not (math.isfinite(self.half_share_drain_seconds) and self.half_share_drain_seconds > 0):
            raise ValueError("half_share_drain_seconds must be positive and finite")


def backlog_drain_seconds(discovered_backlog: int, emit_rate: float) -> float:
    """Seconds to fetch the backlog at ``emit_rate`` requests/s; infinite if nothing is emitted."""
    if discovered_backlog < 0:
        raise ValueError(f"discovered_backlog must be >= 0, got {discovered_backlog}")
    if math.isnan(emit_rate) or emit_rate < 0.0:
        raise ValueError(f"emit_rate must be >= 0, got {emit_rate}")
    if discovered_backlog == 0:
        return 0.0
    return discovered_backlog / emit_rate if emit_rate > 0.0 else math.inf


def target_discovery_share(
    discovered_backlog: int, emit_rate: float, policy: SplitPolicy = SplitPolicy()
) -> float:
    """The share of decisions that should go to discovery right now (see module rules)."""
    drain = backlog_drain_seconds(discovered_backlog, emit_rate)
    if math.isinf(drain):
        return policy.ceiling
    pressure = drain / (drain + policy.half_share_drain_seconds)
    return policy.floor + (policy.ceiling - policy.floor) * pressure


@dataclass(frozen=True, slots=True)
class SplitState:
    """Per-host split bookkeeping. ``credit`` stays in [-1/2, 1/2)."""

    credit: float = 0.0
    discovery: int = 0  # contested decisions that went to discovery
    refresh: int = 0  # contested decisions that went to refresh
    target_total: float = 0.0  # sum of the targets of contested decisions
    forced: int = 0  # decisions made because the other lane had no work


def decide(
    state: SplitState,
    target_share: float,
    *,
    discovery_ready: bool = True,
    refresh_ready: bool = True,
) -> tuple[Lane | None, SplitState]:
    """Which lane serves the next request, and the state after it. None when both are empty."""
    if not 0.0 <= target_share <= 1.0:
        raise ValueError(f"target_share must lie in [0, 1], got {target_share}")
    if not (discovery_ready and refresh_ready):
        if discovery_ready:
            return Lane.DISCOVERY, replace(state, forced=state.forced + 1)
        if refresh_ready:
            return Lane.REFRESH, replace(state, forced=state.forced + 1)
        return None, state
    credit = state.credit + target_share
    total = state.target_total + target_share
    # New states built whole, not by dataclasses.replace: this runs once a request.
    if credit >= 0.5:
        return Lane.DISCOVERY, SplitState(
            credit - 1.0, state.discovery + 1, state.refresh, total, state.forced
        )
    return Lane.REFRESH, SplitState(credit, state.discovery, state.refresh + 1, total, state.forced)


@dataclass(frozen=True, slots=True)
class EmitRate:
    """Requests emitted per second, as an exponentially decayed count with time constant
    ``window`` seconds; corrected for the warm-up, so the first window is not under-read.

    Open the meter with ``opened_at`` when the host starts being served; a meter first
    touched by ``record`` opens at that instant, counting that first batch at time zero.
    """

    window: float = 60.0
    decayed_count: float = 0.0
    started: float | None = None
    updated: float | None = None

    def __post_init__(self) -> None:
        if not (math.isfinite(self.window) and self.window > 0):
            raise ValueError(f"window must be positive and finite, got {self.window}")

    @classmethod
    def opened_at(cls, now: float, window: float = 60.0) -> EmitRate:
        return cls(window=window, started=now, updated=now)

    def record(self, count: int, now: float) -> EmitRate:
        """The meter after ``count`` requests were emitted at ``now``."""
        if count < 0:
            raise ValueError(f"count must be >= 0, got {count}")
        if self.updated is None or self.started is None:
            return replace(self, decayed_count=float(count), started=now, updated=now)
        elapsed = max(0.0, now - self.updated)  # a clock that steps back never inflates
        decayed = self.decayed_count * math.exp(-elapsed / self.window) + count
        return EmitRate(self.window, decayed, self.started, max(now, self.updated))

    def rate(self, now: float) -> float:
        """Requests per second around ``now``; zero before any time has passed."""
        if self.updated is None or self.started is None:
            return 0.0
        observed = max(0.0, now - self.started)
        if observed <= 0.0:
            return 0.0
        current = self.decayed_count * math.exp(-max(0.0, now - self.updated) / self.window)
        return current / (self.window * -math.expm1(-observed / self.window))
