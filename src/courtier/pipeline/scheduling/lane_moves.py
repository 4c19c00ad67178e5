"""How a lane is moved from outside its own course: rebooked on new keys, dropped, held.

The scheduler's (``scheduler.py``) part that others call while a lane is in any phase: its
site moved to another origin, its shard went to another worker, an operator paused it.
Each cancels what the lane waits for and, unless dropped, arms it again.
"""

from __future__ import annotations

import math
from typing import Generic

from courtier.pipeline.scheduling.lanes import L, Phase


class LaneMoves(Generic[L]):
    stopping: bool

    def _arm(self, lane: L, *, at_once: bool) -> None:
        raise NotImplementedError

    def _wait(self, lane: L, until: float) -> None:
        raise NotImplementedError

    def hold(self, lane: L, until: float) -> None:
        """An operator paused the lane until ``until`` (inf: until lifted; 0 lifts it).
        A slot booked and not started yet is given up (it stays consumed on its keys);
        work in flight finishes."""
        state = lane.sched
        state.held_until = until
        if self.stopping or state.phase not in (Phase.BOOKED, Phase.WAITING):
            return  # idle, ready or booking: the hold is read when it next arms or starts
        if state.timer is not None:
            state.timer.cancel()
            state.timer = None
        state.slot = None
        state.phase = Phase.IDLE
        self._arm(lane, at_once=False)

    def _hold(self, lane: L) -> None:
        """Wait out the lane's hold: on a timer, or for ``hold`` to lift it."""
        until = lane.sched.held_until
        if math.isinf(until):
            lane.sched.phase = Phase.WAITING  # no timer: ``hold`` arms it again
        else:
            self._wait(lane, until)

    def rebook(self, lane: L) -> None:
        """The lane's keys changed (its site moved to another origin): a lane waiting for a
        key it no longer books on (in that key's line, or for a refusal's ``not_before``)
        asks again now, on its new keys. A booked slot is kept: it consumed its keys (the
        site's own among them), so giving it up would only start the lane later."""
        state = lane.sched
        if self.stopping or state.phase is not Phase.WAITING:
            return
        if state.timer is not None:
            state.timer.cancel()
            state.timer = None
        state.phase = Phase.IDLE
        self._arm(lane, at_once=False)

    def drop(self, lane: L) -> None:
        """The lane is no longer this worker's: nothing of it starts any more (its work in
        flight finishes; its unstarted work stays in ``sched.work`` for the caller)."""
        state = lane.sched
        if state.timer is not None:
            state.timer.cancel()
            state.timer = None
        state.slot = None
        state.phase = Phase.DROPPED
