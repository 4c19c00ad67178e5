"""When answers count as congested: slower than the baseline by more than the ratio AND by
more than the minimum rise; neither edge itself is congestion, nor is a key with no answers."""

from __future__ import annotations

from courtier.politeness.latency import LatencyParams, LatencyState

PARAMS = LatencyParams(ratio=2.0, min_rise=0.5)


def test_no_baseline_or_no_current_latency_is_no_congestion() -> None:
    assert not LatencyState().congested(PARAMS)
    assert not LatencyState(baseline=None, current=9.0).congested(PARAMS)
    assert not LatencyState(baseline=0.1, current=None).congested(PARAMS)


def test_congestion_needs_both_the_ratio_and_the_rise_and_neither_edge_counts() -> None:
    assert LatencyState(baseline=1.0, current=2.5).congested(PARAMS)
    assert not LatencyState(baseline=1.0, current=2.0).congested(PARAMS)  # exactly the ratio
    assert not LatencyState(baseline=0.25, current=0.75).congested(PARAMS)  # exactly the rise
    assert not LatencyState(baseline=0.1, current=0.5).congested(PARAMS)  # 5x, but 0.4 s
