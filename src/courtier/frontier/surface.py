"""Surface mode: a host whose frontier grows too large is crawled on its surface only.

Rules:
- ``levels`` map a frontier size to a depth cap: at or above ``frontier_size`` URLs, URLs
  deeper than ``max_depth`` leave the frontier and are not admitted again. Bigger frontiers get
  tighter caps (sizes ascending, caps strictly descending), so a huge site is sampled broadly
  near its root instead of exhaustively down one branch.
- ``max_depth`` is an absolute per-host cap that always applies (the trap guard's depth cap).
- Caps tighten at once and loosen with hysteresis: a level, once entered, holds until the size
  falls below ``release_fraction`` of its threshold. Feed the size as the number of URLs ever
  discovered on the host (which eviction does not lower) so that evicting deep URLs can never
  itself lift the cap and let them straight back in.
- A decision says whether the cap tightened, which is the engine's cue to evict the URLs now
  too deep.

Pure: sizes and caps in, decisions out; the store applies them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SurfaceLevel:
    frontier_size: int
    max_depth: int


DEFAULT_LEVELS = (
    SurfaceLevel(frontier_size=10_000, max_depth=8),
    SurfaceLevel(frontier_size=100_000, max_depth=5),
    SurfaceLevel(frontier_size=1_000_000, max_depth=3),
)


@dataclass(frozen=True, slots=True)
class SurfacePolicy:
    levels: tuple[SurfaceLevel, ...] = DEFAULT_LEVELS
    max_depth: int | None = 32
    release_fraction: float = 0.5

    def __post_init__(self) -> None:
        sizes = [level.frontier_size for level in self.levels]
        depths = [level.max_depth for level in self.levels]
        if any(size < 1 for size in sizes) or any(depth < 0 for depth in depths):
            raise ValueError("surface levels need frontier_size >= 1 and max_depth >= 0")
        if sizes != sorted(set(sizes)) or depths != sorted(set(depths), reverse=True):
            raise ValueError(
                "surface levels must have ascending sizes and strictly descending depth caps"
            )
        if self.max_depth is not None and self.max_depth < 0:
            raise ValueError(f"max_depth must be >= 0, got {self.max_depth}")
        if not 0.0 < self.release_fraction <= 1.0:
            raise ValueError(f"release_fraction must lie in (0, 1], got {self.release_fraction}")


@dataclass(frozen=True, slots=True)
class SurfaceDecision:
    cap: int | None  # deepest depth admitted; None means unlimited
    tightened: bool  # the cap is stricter than before: evict URLs deeper than it
    level: SurfaceLevel | None  # the surface level in force; None when not in surface mode

    @property
    def surface_mode(self) -> bool:
        return self.level is not None


def decide_depth_cap(
    frontier_size: int, current_cap: int | None, policy: SurfacePolicy = SurfacePolicy()
) -> SurfaceDecision:
    """The host's depth cap given its frontier size and the cap it had until now."""
    if frontier_size < 0:
        raise ValueError(f"frontier_size must be >= 0, got {frontier_size}")
    in_force: SurfaceLevel | None = None
    for level in policy.levels:  # ascending sizes: the last match is the tightest
        entered = frontier_size >= level.frontier_size
        held = (
            current_cap is not None
            and level.max_depth >= current_cap
            and frontier_size >= math.ceil(level.frontier_size * policy.release_fraction)
        )
        if entered or held:
            in_force = level
    caps = [] if policy.max_depth is None else [policy.max_depth]
    if in_force is not None:
        caps.append(in_force.max_depth)
    cap = min(caps) if caps else None
    tightened = cap is not None and (current_cap is None or cap < current_cap)
    return SurfaceDecision(cap, tightened, in_force)


def admits(depth: int, cap: int | None) -> bool:
    """Whether a URL at ``depth`` belongs in a frontier capped at ``cap``."""
    return cap is None or depth <= cap
