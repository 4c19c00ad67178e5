import itertools
import math

from hypothesis import given
from hypothesis import strategies as st

from courtier.politeness.latency import LatencyParams, LatencyState, observe

P = LatencyParams()


def run(latencies, start=0.0, step=1.0, state=None):
    state = state or LatencyState()
    for i, latency in enumerate(latencies):
        state = observe(state, latency, start + i * step, P)
    return state


def test_steady_latency_keeps_the_full_rate():
    state = run([0.1] * 50)
    assert state.factor == 1.0 and state.decreases == 0


def test_rising_latency_cuts_the_rate_before_errors():
    state = run([0.02, 0.08, 0.26])
    assert state.factor == 0.5 and state.decreases == 1


def test_decrease_at_most_once_per_cooldown():
    state = run([0.02, 0.3, 0.3, 0.3, 0.3], step=1.0)  # answers 1 s apart, cooldown 5 s
    assert state.decreases == 1
    state = run([0.3] * 5, start=10.0, step=1.0, state=state)  # 10 s: one more, then hold
    assert state.decreases == 2


def test_small_relative_or_absolute_rises_are_not_congestion():
    assert run([0.002, 0.005, 0.006, 0.005]).decreases == 0  # 3x but only 4 ms
    assert run([2.0, 2.1, 2.2, 2.1]).decreases == 0  # 100 ms but only 1.1x


def test_additive_recovery_after_latency_falls_back():
    state = run([0.02, 0.3, 0.3])
    assert state.factor == 0.5
    factors = []
    for i in range(40):
        state = observe(state, 0.02, 20.0 + i, P)
        factors.append(state.factor)
    steps = [round(b - a, 9) for a, b in itertools.pairwise(factors[3:])]
    assert set(steps) <= {P.increase, 0.0}  # additive, never a jump
    assert factors[-1] == 1.0


def test_a_permanent_slowdown_becomes_the_new_baseline():
    state = run([0.02] * 5 + [0.5] * 600, step=10.0)
    assert state.factor == 1.0
    assert state.baseline is not None and state.baseline > 0.4


def test_garbage_latency_is_ignored():
    state = run([0.1, 0.1])
    assert observe(state, math.nan, 5.0, P) == state
    assert observe(state, -1.0, 5.0, P) == state


@given(st.lists(st.floats(min_value=0, max_value=30, allow_nan=False), max_size=200))
def test_factor_stays_within_floor_and_one(latencies):
    state = run(latencies)
    assert P.floor <= state.factor <= 1.0
