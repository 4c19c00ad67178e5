"""Lanes ready to book, in one line behind capacity and the start gates.

Rules:
- A lane waits here, unbooked (nothing consumed), while the crawl has no room in flight or a
  gate is shut; lanes leave in the order they came, as capacity and the gates allow.
- Every booking passes the start gate (``crawl.start_rate``); a lane that has never started
  a request passes the first-contact gate too (``crawl.first_contact_rate``: a new host's
  first request costs the loop most). A lane takes its places in both gates or in neither.
- While the gates are shut one timer, set for when they reopen, releases the line.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Generic

from courtier.pipeline.scheduling.lanes import L
from courtier.pipeline.scheduling.start_gate import StartGate, StartGates
from courtier.pipeline.scheduling.timer import Handle, Timer


class ReadyLine(Generic[L]):
    def __init__(self, timer: Timer, gates: StartGates | None, reopened: Callable[[], None]):
        """``gates`` None: no start gate, no first-contact gate. ``reopened`` is called when
        shut gates open again."""
        self.timer = timer
        self.lanes: deque[L] = deque()
        self.start_gate = gates.start if gates else StartGate(0, 1)
        """How many bookings a second may start (``start_gate``)."""
        self.first_gate = gates.first if gates else StartGate(0, 1)
        """How many of them a second may be a lane's first, on top of ``start_gate``."""
        self._reopened = reopened
        self._timer: Handle | None = None

    @property
    def shut(self) -> bool:
        """The gates are shut until their timer fires."""
        return self._timer is not None

    def gates_of(self, lane: L) -> tuple[StartGate, ...]:
        if lane.sched.launched:
            return (self.start_gate,)
        return (self.first_gate, self.start_gate)

    def first_may_go(self, now: float) -> bool:
        """The first lane's gates are open (else the line waits for them to reopen)."""
        gates = self.gates_of(self.lanes[0])
        if all(gate.open(now) for gate in gates):
            return True
        self.reopen_later(now, gates)
        return False

    def reopen_later(self, now: float, gates: tuple[StartGate, ...]) -> None:
        if self._timer is None:
            at = max(gate.next_at(now) for gate in gates)
            self._timer = self.timer.call_at(at, self._fire)

    def _fire(self) -> None:
        self._timer = None
        self._reopened()

    def pass_gates(self, lane: L, now: float) -> bool:
        """Take the lane's places in its gates, or none of them. A lane that has started (the
        hot path) takes one booking of the start gate, no more."""
        if lane.sched.launched:
            return self.start_gate.take(now)
        if not self.first_gate.open(now) or not self.start_gate.take(now):
            return False
        return self.first_gate.take(now)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
