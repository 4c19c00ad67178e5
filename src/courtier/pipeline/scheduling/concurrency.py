"""How many requests the crawl keeps in flight: what its work needs, what the machine holds.

Why: a fixed cap (512 pages, 32 media) bound long before politeness did on the real web:
2,000 sites each asked once a second, answering in ~0.9 s, need ~2,000 requests in flight
(Little's law: in flight = rate x time each request holds its place). At loopback latency
the same cap never bound, which is why it went unseen.

Rules (pure: ``pipeline.in_flight`` feeds it what the schedulers see):
- What the work needs (``demand``): over the lanes with work, the sum of each lane's Little's
  law: it may start a request every ``spacing`` seconds and each holds a place ``answer``
  seconds (its measured latency; ``DEFAULT_ANSWER`` before one is known), at most the places
  a lane may hold at once (one per site; a media key's ``max_in_flight_per_key``).
- What the machine holds (``machine_cap``): the open-file limit less what the crawl holds
  besides requests, with ``IDLE_SHARE`` of what is left kept for idle kept-alive connections;
  and a share of memory (``MEMORY_SHARE``) over the body a request holds in memory at most
  (``fetch.spool_bytes``: a larger one is spooled to disk). An operator's setting
  (``max_in_flight`` above 0) caps it further (``pipeline.in_flight.machine_caps``).
- The bound: the demand x ``HEADROOM`` + ``SLACK``, at least ``FLOOR`` (``MEDIA_FLOOR``), at
  most the cap. When
  lanes wait for a place (the bound was reached), it is at least what is in flight plus
  what waits: a demand estimate never holds back work the machine could carry.
- What binds (``Binding``): ``politeness`` when no lane waits for a place (every lane waits
  for its own time); ``cpu`` when lanes wait while the parse workers are behind (the bound
  then holds: pages waiting for a parser hold the places, and more places would only grow
  that queue); else ``operator``, ``machine`` or ``demand`` (the bound itself), the lowest.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

DEFAULT_ANSWER: Final = 0.5
"""Seconds a request is assumed to hold its place before its lane has a measured latency."""
HEADROOM: Final = 1.5
"""The bound over the demand: latencies vary, and a bound met exactly queues work."""
SLACK: Final = 32
FLOOR: Final = 512
"""No page bound below this (the fixed bound before it was chosen from the work): a crawl
starting (no latency known yet) is not held to a trickle, and while parsing is behind the
bound still leaves room for the small pages of other sites beside big ones waiting for a
parser (heavy pages beside normal hosts kept 33% of the normal hosts' pace at 64)."""
MEDIA_FLOOR: Final = 32
"""No media bound below this (the fixed media bound before)."""
IDLE_SHARE: Final = 0.25
"""Of the descriptors left for requests, the share kept for idle kept-alive connections."""
MEMORY_SHARE: Final = 0.25
"""Of the machine's memory, the share the bodies in flight may hold at most."""


class Binding(StrEnum):
    POLITENESS = "politeness"
    DEMAND = "demand"
    CPU = "cpu"
    MACHINE = "machine"
    OPERATOR = "operator"


@dataclass(frozen=True, slots=True)
class LaneLoad:
    """One lane with work: how often it may start, how long each request holds a place."""

    spacing: float
    answer: float | None
    places: int


@dataclass(frozen=True, slots=True)
class Bound:
    limit: int
    binding: Binding
    demand: float
    cap: int


def initial_bound(operator: int, floor: int = FLOOR) -> int:
    """A scheduler's bound before its first lanes have work (``floor``; under an operator's
    setting, that): the bound loop chooses it from the work within half a second."""
    return min(floor, operator) if operator > 0 else floor


def demand(lanes: Iterable[LaneLoad]) -> float:
    """Places the lanes with work hold on average (Little's law, lane by lane)."""
    total = 0.0
    for lane in lanes:
        answer = DEFAULT_ANSWER if lane.answer is None else max(0.0, lane.answer)
        spacing = max(lane.spacing, 1e-3)
        total += min(float(lane.places), answer / spacing)
    return total


def machine_cap(*, open_files: int, held: int, memory_bytes: int, body_bytes: int) -> int:
    """The most requests the machine lets the crawl hold at once."""
    by_files = int((open_files - held) * (1.0 - IDLE_SHARE))
    by_memory = int(memory_bytes * MEMORY_SHARE / max(1, body_bytes))
    return max(1, min(by_files, by_memory))


def choose(
    need: float,
    cap: tuple[int, Binding],
    *,
    in_flight: int,
    waiting: int,
    current: int,
    parse_backlog: bool = False,
    floor: int = FLOOR,
) -> Bound:
    """The bound for ``need`` (``demand``) under ``cap`` (``machine_cap``), given what is in
    flight, how many lanes wait for a place now, and whether parsing is behind (the places
    are held by pages waiting for a parse worker: more places would only lengthen that
    queue, so the bound does not grow for lanes waiting then)."""
    limit_cap, cap_binding = cap
    wanted = max(floor, math.ceil(need * HEADROOM) + SLACK)
    if waiting:
        wanted = max(wanted, current if parse_backlog else in_flight + waiting, current)
    limit = min(wanted, limit_cap)
    if not waiting:
        return Bound(limit, Binding.POLITENESS, need, limit_cap)
    if parse_backlog:
        return Bound(limit, Binding.CPU, need, limit_cap)
    return Bound(limit, cap_binding if limit >= limit_cap else Binding.DEMAND, need, limit_cap)
