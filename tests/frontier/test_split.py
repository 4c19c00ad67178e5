import itertools
import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from courtier.frontier.split import (
    EmitRate,
    Lane,
    SplitPolicy,
    SplitState,
    backlog_drain_seconds,
    decide,
    target_discovery_share,
)

POLICY = SplitPolicy(floor=0.1, ceiling=0.9, half_share_drain_seconds=600.0)


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def tick(self, seconds: float) -> float:
        self.now += seconds
        return self.now


def test_realised_split_tracks_a_live_target_within_one_decision_over_10000_decisions():
    """A host emitting about one request a second: each fetch reveals new links (in bursts, so
    the backlog and the target swing), each discovery decision drains one URL."""
    clock = FakeClock()
    meter = EmitRate.opened_at(clock.now, window=120.0)
    rng = random.Random(6)
    backlog, state = 400, SplitState()
    targets: list[float] = []
    for step in range(10_000):
        now = clock.tick(rng.uniform(0.5, 1.5))
        target = target_discovery_share(backlog, meter.rate(now), POLICY)
        lane, state = decide(state, target)
        targets.append(target)
        meter = meter.record(1, now)
        if lane is Lane.DISCOVERY:
            backlog -= 1
        # A crawl of bursts: quiet stretches, then pages full of new links.
        found = [0] * 9 + [1] if (step // 1000) % 2 else [0, 0, 0, 0, 6]
        backlog += rng.choice(found)
        assert abs(state.discovery - math.fsum(targets)) <= 1.0
    assert state.discovery + state.refresh == 10_000
    assert max(targets) - min(targets) > 0.4  # the target really moved, both ways
    assert min(targets) >= POLICY.floor and max(targets) <= POLICY.ceiling


def test_each_stretch_of_a_stepped_target_is_met_within_one_decision():
    schedule = [0.3] * 2500 + [0.75] * 2500 + [0.1] * 2500
    schedule += [0.5 + 0.4 * math.sin(i / 50) for i in range(2500)]
    state, start = SplitState(), 0
    for _stretch in range(4):
        before = state.discovery
        segment = schedule[start : start + 2500]
        for target in segment:
            _, state = decide(state, target)
        assert abs((state.discovery - before) - math.fsum(segment)) <= 1.0
        start += 2500
    assert abs(state.discovery - math.fsum(schedule)) <= 0.5


def test_constant_target_interleaves_evenly_rather_than_in_runs():
    state, lanes = SplitState(), []
    for _ in range(10):
        lane, state = decide(state, 0.2)
        lanes.append(lane)
    assert lanes.count(Lane.DISCOVERY) == 2
    assert lanes[2] is Lane.DISCOVERY and lanes[7] is Lane.DISCOVERY


@given(
    st.lists(st.tuples(st.floats(0.0, 1.0), st.booleans(), st.booleans()), min_size=1, max_size=400)
)
def test_contested_decisions_never_drift_from_their_targets(steps):
    state, contested = SplitState(), []
    for target, discovery_ready, refresh_ready in steps:
        lane, state = decide(
            state, target, discovery_ready=discovery_ready, refresh_ready=refresh_ready
        )
        if discovery_ready and refresh_ready:
            contested.append(target)
        elif discovery_ready:
            assert lane is Lane.DISCOVERY
        elif refresh_ready:
            assert lane is Lane.REFRESH
        else:
            assert lane is None
        assert -0.5 <= state.credit < 0.5
        assert abs(state.discovery - math.fsum(contested)) <= 0.5 + 1e-9


def test_an_empty_lane_builds_no_debt_that_would_come_back_as_a_burst():
    state = SplitState()
    for _ in range(500):  # nothing to refresh yet: every request discovers
        lane, state = decide(state, 0.1, refresh_ready=False)
        assert lane is Lane.DISCOVERY
    assert state.forced == 500 and state.credit == 0.0
    lanes = [decide(state, 0.1)[0]]
    for _ in range(19):
        lane, state = decide(state, 0.1)
        lanes.append(lane)
    assert lanes.count(Lane.REFRESH) >= 17
    assert decide(state, 0.5, discovery_ready=False, refresh_ready=False) == (None, state)


def test_target_share_slides_from_the_floor_to_the_ceiling_with_the_drain_time():
    assert target_discovery_share(0, 1.0, POLICY) == pytest.approx(0.1)
    assert target_discovery_share(600, 1.0, POLICY) == pytest.approx(0.5)  # halfway point
    assert target_discovery_share(10**9, 1.0, POLICY) == pytest.approx(0.9, abs=1e-5)
    assert target_discovery_share(5, 0.0, POLICY) == 0.9  # nothing emitted: infinite drain
    shares = [target_discovery_share(backlog, 2.0, POLICY) for backlog in range(0, 20_000, 7)]
    steps = [b - a for a, b in itertools.pairwise(shares)]
    assert all(step >= 0 for step in steps)
    assert max(steps) < 0.01  # continuous: no jumps between neighbouring backlogs


def test_backlog_drain_seconds_divides_backlog_by_rate():
    assert backlog_drain_seconds(120, 2.0) == 60.0
    assert backlog_drain_seconds(0, 0.0) == 0.0
    assert backlog_drain_seconds(1, 0.0) == math.inf


def test_emit_rate_reads_a_steady_stream_from_the_first_window_on():
    clock = FakeClock()
    meter = EmitRate.opened_at(clock.now, window=60.0)
    for _ in range(20):  # two requests a second for ten seconds
        meter = meter.record(1, clock.tick(0.5))
    assert meter.rate(clock.now) == pytest.approx(2.0, rel=0.1)
    for _ in range(1200):
        meter = meter.record(1, clock.tick(0.5))
    assert meter.rate(clock.now) == pytest.approx(2.0, rel=0.02)
    clock.tick(300.0)  # the host goes quiet: the rate fades
    assert meter.rate(clock.now) < 0.02


def test_emit_rate_is_zero_before_time_passes_and_ignores_a_clock_stepping_back():
    meter = EmitRate(window=10.0)
    assert meter.rate(5.0) == 0.0
    meter = meter.record(3, 5.0)
    assert meter.rate(5.0) == 0.0
    stepped_back = meter.record(1, 4.0)
    assert stepped_back.updated == 5.0 and stepped_back.decayed_count == 4.0


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: SplitPolicy(floor=0.0), "need 0 < floor <= ceiling <= 1, got 0.0, 0.9"),
        (
            lambda: SplitPolicy(floor=0.6, ceiling=0.5),
            "need 0 < floor <= ceiling <= 1, got 0.6, 0.5",
        ),
        (lambda: SplitPolicy(ceiling=1.5), "need 0 < floor <= ceiling <= 1, got 0.1, 1.5"),
        (
            lambda: SplitPolicy(half_share_drain_seconds=0.0),
            "half_share_drain_seconds must be positive and finite",
        ),
        (lambda: decide(SplitState(), 1.5), "target_share must lie in [0, 1], got 1.5"),
        (lambda: decide(SplitState(), float("nan")), "target_share must lie in [0, 1], got nan"),
        (lambda: backlog_drain_seconds(-1, 1.0), "discovered_backlog must be >= 0, got -1"),
        (lambda: backlog_drain_seconds(1, float("nan")), "emit_rate must be >= 0, got nan"),
        (lambda: backlog_drain_seconds(1, -1.0), "emit_rate must be >= 0, got -1.0"),
        (lambda: EmitRate(window=0.0), "window must be positive and finite, got 0.0"),
        (lambda: EmitRate().record(-1, 0.0), "count must be >= 0, got -1"),
    ],
)
def test_bad_input_is_refused_with_a_clear_error(call, message):
    with pytest.raises(ValueError) as refused:
        call()
    assert str(refused.value) == message


def test_the_edges_of_every_range_are_accepted():
    assert SplitPolicy(floor=1.0, ceiling=1.0).floor == 1.0
    assert SplitPolicy(floor=0.5, ceiling=0.5).ceiling == 0.5
    assert SplitPolicy(half_share_drain_seconds=0.5).half_share_drain_seconds == 0.5
    assert EmitRate(window=0.5).window == 0.5
    assert decide(SplitState(), 0.0)[0] is Lane.REFRESH
    assert decide(SplitState(), 1.0)[0] is Lane.DISCOVERY


def test_a_request_served_because_the_other_lane_is_empty_counts_as_forced():
    state = SplitState()
    lane, state = decide(state, 0.9, discovery_ready=False)
    assert lane is Lane.REFRESH and state == SplitState(forced=1)
    lane, state = decide(state, 0.1, refresh_ready=False)
    assert lane is Lane.DISCOVERY and state == SplitState(forced=2)


def test_a_meter_opens_on_its_own_window_at_the_given_time():
    assert EmitRate.opened_at(100.0, window=10.0) == EmitRate(10.0, 0.0, 100.0, 100.0)


def test_a_half_opened_meter_reads_zero_and_opens_on_its_first_record():
    half = EmitRate(window=10.0, started=5.0)
    assert half.rate(20.0) == 0.0
    assert half.record(2, 30.0) == EmitRate(10.0, 2.0, 30.0, 30.0)


def test_recording_no_request_only_lets_the_rate_decay():
    meter = EmitRate.opened_at(0.0, window=10.0).record(10, 1.0)
    quiet = meter.record(0, 11.0)
    assert quiet.decayed_count == pytest.approx(10.0 * math.exp(-1.0))
    assert quiet.rate(11.0) < meter.rate(1.0)


def test_a_steady_stream_reads_its_rate_within_its_first_second_and_at_each_record():
    clock = FakeClock()
    meter = EmitRate.opened_at(clock.now, window=60.0)
    meter = meter.record(10, clock.tick(0.5))
    assert meter.rate(clock.now) == pytest.approx(20.0, rel=0.01)
    for _ in range(2400):  # twenty requests a second, one every 50 ms, for two minutes
        meter = meter.record(1, clock.tick(0.05))
    assert meter.rate(clock.now) == pytest.approx(20.0, rel=0.005)


def test_a_target_of_one_half_goes_to_discovery_first():
    lane, state = decide(SplitState(), 0.5)
    assert lane is Lane.DISCOVERY and state == SplitState(-0.5, 1, 0, 0.5, 0)


def test_the_state_counts_contested_decisions_their_targets_and_forced_ones():
    state = SplitState()
    for target, ready in ((0.2, True), (0.2, True), (0.9, False), (0.05, True)):
        _, state = decide(state, target, discovery_ready=ready)
    assert (state.discovery, state.refresh, state.forced) == (0, 3, 1)
    assert state.target_total == pytest.approx(0.45)
    assert state.credit == pytest.approx(0.45)
    _, state = decide(state, 0.2)
    assert (state.discovery, state.refresh, state.forced) == (1, 3, 1)
    assert state.target_total == pytest.approx(0.65)


def test_a_meter_opened_without_a_window_counts_over_a_minute():
    assert EmitRate.opened_at(5.0) == EmitRate(60.0, 0.0, 5.0, 5.0)
