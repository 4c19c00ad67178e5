"""How a lane is moved from outside its own course: rebooked on new keys, dropped, held.

The scheduler's (``scheduler.py``) part that others call while a lane is in any phase: its
site moved to another origin, its shard went to another worker, an operator paused it.
Each cancels what the lane waits for and, unless dropped, arms it again.
"""

from __future__ import annotations

import math
from typing import Any, Generic

from courtier.pipeline.scheduling.lanes import L, LaneKind, Phase
from courtier.politeness.gcra import Limit


class LaneMoves(Generic[L]):
    stopping: bool
    kind: LaneKind[L, Any]

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
        state.slot, state.moved_keys = None, ()
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
        site's own among them), so giving it up would only start the lane later; but the
        origin it reaches now has slots of its own sites booked around it, so its start is
        spaced from the real sends there too (``moved``)."""
        state = lane.sched
        if self.stopping:
            return
        if state.phase is Phase.BOOKED:
            self.moved(lane, state.limits)
            return
        if state.phase is not Phase.WAITING:
            return
        if state.timer is not None:
            state.timer.cancel()
            state.timer = None
        state.phase = Phase.IDLE
        self._arm(lane, at_once=False)

    def moved(self, lane: L, limits: tuple[Limit, ...]) -> bool:
        """Note the keys the lane's work books on now that ``limits`` (its slot's) miss
        (``LaneState.moved_keys``); True when it books on other keys now."""
        state = lane.sched
        state.moved_keys = ()
        if state.work is None:
            return False
        try:
            now_limits, _cost = self.kind.booking(lane, state.work)
        except Exception:  # judged by the next booking itself, which logs it
            return False
        booked = {limit.key for limit in limits}
        state.moved_keys = tuple(limit.key for limit in now_limits if limit.key not in booked)
        return {limit.key for limit in now_limits} != booked

    def drop(self, lane: L) -> None:
        """The lane is no longer this worker's: nothing of it starts any more (its work in
        flight finishes; its unstarted work stays in ``sched.work`` for the caller)."""
        state = lane.sched
        if state.timer is not None:
            state.timer.cancel()
            state.timer = None
        state.slot, state.moved_keys = None, ()
        state.phase = Phase.DROPPED
