"""The ready line: lanes wait unbooked behind the start gates, a lane's first start passes the
first-contact gate too (both places or neither), and one timer reopens the line (fake time)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from courtier.pipeline.scheduling.ready_line import ReadyLine
from courtier.pipeline.scheduling.start_gate import StartGate, StartGates
from courtier.pipeline.scheduling.timer import FakeTimer


@dataclass
class _Sched:
    launched: bool = False


@dataclass
class Lane:
    name: str
    sched: _Sched = field(default_factory=_Sched)


def started(name: str) -> Lane:
    return Lane(name, _Sched(launched=True))


class Reopened:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> None:
        self.calls += 1


def line(start: StartGate, first: StartGate) -> tuple[FakeTimer, ReadyLine[Lane], Reopened]:
    timer, reopened = FakeTimer(start=100.0), Reopened()
    return timer, ReadyLine(timer, StartGates(start, first), reopened), reopened


def test_without_gates_every_lane_passes_at_once() -> None:
    timer, reopened = FakeTimer(start=100.0), Reopened()
    ready: ReadyLine[Lane] = ReadyLine(timer, None, reopened)
    for n in range(1000):
        lane = Lane(f"new{n}") if n % 2 else started(f"old{n}")
        assert ready.pass_gates(lane, 100.0)
        ready.lanes.append(lane)
        assert ready.first_may_go(100.0)
    assert not ready.shut and timer.pending() == 0


def test_a_started_lane_takes_a_place_in_the_start_gate_only() -> None:
    _timer, ready, _ = line(StartGate(rate=10, burst=2), StartGate(rate=1, burst=1))
    assert ready.gates_of(started("a")) == (ready.start_gate,)
    assert ready.pass_gates(started("a"), 100.0)
    assert ready.pass_gates(started("b"), 100.0)
    assert not ready.pass_gates(started("c"), 100.0)  # the start gate's burst is spent
    assert ready.first_gate.open(100.0)  # untouched by started lanes


def test_a_first_start_takes_a_place_in_both_gates() -> None:
    _timer, ready, _ = line(StartGate(rate=10, burst=5), StartGate(rate=1, burst=1))
    assert ready.gates_of(Lane("a")) == (ready.first_gate, ready.start_gate)
    assert ready.pass_gates(Lane("a"), 100.0)
    assert not ready.first_gate.open(100.0)
    assert not ready.pass_gates(Lane("b"), 100.0)  # the first-contact gate is shut
    # ... and the refused first start took no place in the start gate: four are left.
    assert [ready.pass_gates(started(f"s{n}"), 100.0) for n in range(5)] == [True] * 4 + [False]


def test_a_first_start_the_start_gate_refuses_takes_no_first_contact_place() -> None:
    _timer, ready, _ = line(StartGate(rate=1, burst=1), StartGate(rate=10, burst=1))
    assert ready.pass_gates(started("a"), 100.0)  # the start gate's one place
    assert not ready.pass_gates(Lane("b"), 100.0)
    assert ready.first_gate.open(100.0)  # still free for the next first start
    assert ready.pass_gates(Lane("b"), 101.0)


async def test_a_shut_gate_arms_one_timer_for_when_both_reopen() -> None:
    timer, ready, reopened = line(StartGate(rate=10, burst=1), StartGate(rate=2, burst=1))
    assert ready.pass_gates(Lane("a"), 100.0)
    ready.lanes.append(Lane("b"))
    assert not ready.first_may_go(100.0)
    assert ready.shut
    assert not ready.first_may_go(100.0)  # asked again: still the one timer
    assert timer.pending() == 1
    await timer.advance(0.1)  # the start gate reopens; the first-contact gate not yet
    assert reopened.calls == 0 and ready.shut
    await timer.advance(0.4)
    assert reopened.calls == 1 and not ready.shut
    assert ready.first_may_go(timer.now())


async def test_a_started_lane_at_the_head_waits_for_the_start_gate_only() -> None:
    timer, ready, reopened = line(StartGate(rate=10, burst=1), StartGate(rate=0.5, burst=1))
    assert ready.pass_gates(Lane("a"), 100.0)  # both gates spent: first-contact for 2 s
    ready.lanes.append(started("b"))
    assert not ready.first_may_go(100.0)
    await timer.advance(0.1)
    assert reopened.calls == 1
    assert ready.first_may_go(timer.now())


@pytest.mark.parametrize("now", [100.0, 100.05])
async def test_the_reopening_time_is_the_gates_own(now: float) -> None:
    timer, ready, reopened = line(StartGate(rate=10, burst=1), StartGate(rate=10, burst=1))
    assert ready.pass_gates(started("a"), 100.0)
    ready.reopen_later(now, ready.gates_of(started("b")))
    await timer.advance(0.0999)
    assert reopened.calls == 0
    await timer.advance(0.0001)
    assert reopened.calls == 1


async def test_stopping_cancels_the_reopening() -> None:
    timer, ready, reopened = line(StartGate(rate=10, burst=1), StartGate(rate=10, burst=1))
    assert ready.pass_gates(started("a"), 100.0)
    ready.lanes.append(started("b"))
    assert not ready.first_may_go(100.0)
    ready.stop()
    assert not ready.shut
    await timer.advance(10.0)
    assert reopened.calls == 0
    ready.stop()  # twice: nothing left to cancel
