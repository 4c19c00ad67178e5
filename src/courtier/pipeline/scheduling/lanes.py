"""What the scheduler works with: a lane, its kind, its bookkeeping, and a start.

Rules:
- A ``LaneKind`` says how lanes of one kind choose their next work, when they themselves
  allow it to start, which keys it is booked on and how it runs; the scheduler does the
  rest, once for every kind (``scheduler``).
- ``LaneState`` is written only by the scheduler.
- A ``Launch`` hands the running work three calls: ``answered`` (the lane's place in flight
  is free), ``sent`` (the request's headers went out: send spacing learns it) and
  ``detach`` (the work goes on without holding the crawl's place: a page waiting for its
  render, whose own requests need places of their own).
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from courtier.pipeline.scheduling.timer import Handle
from courtier.politeness.gcra import Limit, Slot
from courtier.politeness.limiter.base import Fence


class Phase(enum.Enum):
    IDLE = "idle"
    WAITING = "waiting"  # a timer for the lane's own time, or a refused booking's not_before
    READY = "ready"  # waiting for capacity
    BOOKING = "booking"  # queued for the booker
    BOOKED = "booked"  # a slot, and a timer for its start
    DROPPED = "dropped"  # no longer this worker's: never armed again


@dataclass(frozen=True, slots=True)
class Wait:
    """The lane has work but cannot say what yet: wake it at ``until`` (None: someone else
    will arm it, e.g. when its robots.txt or origin lookup is done)."""

    until: float | None = None


W = TypeVar("W")


def _nothing() -> None:
    pass


def _nothing_at(_at: float) -> None:
    pass


@dataclass(frozen=True, slots=True)
class Launch:
    """A start: the slot it was booked in, when it was booked, when it really started."""

    slot: Slot
    booked_at: float
    started_at: float
    answered: Callable[[], None] = _nothing
    """Call once the server is done with this request (its answer read, the answer's effect
    on the lane's clocks applied): the lane's own place in flight is free for its next start
    while the crawler keeps, parses and stores this one. The crawl's place (``max_in_flight``)
    is held until the work ends. Calling it again does nothing."""
    sent: Callable[[float], None] = _nothing_at
    """Call with the wall time the request's headers went out (``RequestContext.sent``):
    the next start on the same shared keys is spaced from it (``send_spacing``)."""
    detach: Callable[[], None] = _nothing
    """Call when the work is done with the server and will wait on other work (a render
    waiting for its requests, each a start of its own): the crawl's place
    (``max_in_flight``) is given back now rather than when the work ends. Calling it again
    does nothing."""

    @property
    def wait(self) -> float:
        return max(0.0, self.slot.start - self.booked_at)

    @property
    def late(self) -> float:
        return max(0.0, self.started_at - self.slot.start)


@dataclass(slots=True)
class LaneState(Generic[W]):
    """The scheduler's bookkeeping of one lane (only the scheduler writes it)."""

    phase: Phase = Phase.IDLE
    work: W | None = None
    slot: Slot | None = None
    booked_at: float = 0.0
    timer: Handle | None = None
    in_flight: int = 0
    running: set[asyncio.Task[None]] = field(default_factory=set)
    """The lane's work in flight."""
    launched: bool = False
    """It has started a request: past the first-contact gate."""
    limits: tuple[Limit, ...] = ()
    """The keys ``slot`` was booked on, with their parameters then (the spacing report)."""
    moved_keys: tuple[str, ...] = ()
    """Keys the lane books on now that ``slot`` was not booked on (its site moved to another
    origin while the slot waited): its start is spaced from real sends there too."""
    last_cost: float = 0.0
    """The cost of the lane's last start (what it may have spent on its keys' clocks)."""
    held_until: float = 0.0
    """An operator's pause: nothing of the lane starts before it (inf: until lifted)."""
    start_after: float | None = None
    """The lane's own time for the work being booked, when it is booked ahead of it
    (``booker.BOOK_AHEAD``): its slot starts no sooner."""
    send_by: float = 0.0
    """When the round trip that books it must go (a limiter booked by round trip)."""


class Lane(Protocol):
    name: str
    sched: LaneState[Any]

    @property
    def fence(self) -> Fence | None:
        """The lease the lane's bookings must still hold (scale-out); None: none needed."""
        ...


L = TypeVar("L", bound=Lane)
Lc = TypeVar("Lc", bound=Lane, contravariant=True)


class LaneKind(Protocol[Lc, W]):
    lead: float
    """The lead most of the kind's lanes book at (``max_lead`` of a lane may differ)."""
    book_wait: float
    """Seconds a booking of work that may start now can wait to share a round trip with
    other bookings (a limiter booked by round trip; 0: none)."""

    def max_lead(self, lane: Lc) -> float:
        """Seconds ahead the lane's work may be booked (further: refused, it waits unbooked)."""
        ...

    def max_in_flight(self, lane: Lc) -> int: ...

    def choose(self, lane: Lc, now: float) -> W | Wait | None:
        """The lane's next work; None when it has none (it is armed again when some comes)."""
        ...

    def not_before(self, lane: Lc, work: W, now: float) -> float:
        """When the lane itself allows ``work`` to start (its spacing, pause, robots)."""
        ...

    def booking(self, lane: Lc, work: W) -> tuple[tuple[Limit, ...], float]:
        """The keys ``work`` is booked on right now, and its cost."""
        ...

    def started(self, lane: Lc, work: W, now: float) -> None:
        """``work`` starts now (reserve the lane's spacing)."""
        ...

    def run(self, lane: Lc, work: W, launch: Launch) -> Coroutine[Any, Any, None]:
        """Fetch and handle the answer."""
        ...
