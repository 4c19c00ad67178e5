import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from courtier.frontier.refresh import (
    DAY,
    HOUR,
    MONTH,
    Importance,
    IntervalBounds,
    RefreshPolicy,
    RefreshState,
    after_fetch,
    importance_of,
    popular_threshold,
    reclassify,
)

POLICY = RefreshPolicy()


class FakeClock:
    def __init__(self, start: float = 1_000_000.0) -> None:
        self.now = start

    def advance_to(self, when: float) -> float:
        assert when >= self.now
        self.now = when
        return self.now


def _fetch_each_time_due(
    clock: FakeClock, state: RefreshState | None, fingerprints: list[str], **kw
) -> list[RefreshState]:
    states = []
    for fingerprint in fingerprints:
        when = clock.now if state is None else clock.advance_to(state.next_due)
        state = after_fetch(state, fingerprint, when, **kw)
        states.append(state)
    return states


def test_first_fetch_starts_at_the_initial_interval():
    state = after_fetch(None, "f1", 500.0)
    assert state.interval == POLICY.ordinary.initial == 7 * DAY
    assert state.next_due == 500.0 + 7 * DAY


def test_unchanged_page_backs_off_geometrically_up_to_six_months():
    clock = FakeClock()
    states = _fetch_each_time_due(clock, None, ["same"] * 20)
    intervals = [s.interval for s in states]
    assert intervals[1] == pytest.approx(intervals[0] * 1.5)
    assert all(b >= a for a, b in itertools.pairwise(intervals))
    assert intervals[-1] == 6 * MONTH
    assert max(intervals) <= 6 * MONTH
    assert states[-1].unchanged_fetches == 19
    # Each fetch happened exactly when due on the fake clock.
    assert clock.now == states[-2].next_due


def test_changing_page_shrinks_down_to_one_day_and_no_further():
    clock = FakeClock()
    states = _fetch_each_time_due(clock, None, [f"v{i}" for i in range(12)])
    intervals = [s.interval for s in states]
    assert intervals[1] == pytest.approx(intervals[0] * 0.5)
    assert intervals[-1] == DAY
    assert min(intervals) >= DAY
    assert states[-1].unchanged_fetches == 0


def test_change_after_a_long_quiet_spell_shrinks_the_interval_at_once():
    clock = FakeClock()
    quiet = _fetch_each_time_due(clock, None, ["same"] * 15)[-1]
    changed = after_fetch(quiet, "new", clock.advance_to(quiet.next_due))
    assert changed.interval == pytest.approx(quiet.interval * 0.5)
    assert changed.next_due == clock.now + changed.interval


@pytest.mark.parametrize(
    ("importance", "floor", "ceiling"),
    [
        (Importance.ORDINARY, DAY, 6 * MONTH),
        (Importance.POPULAR, 6 * HOUR, MONTH),
        (Importance.CRITICAL, HOUR, 7 * DAY),
    ],
)
def test_each_importance_class_is_held_within_its_own_bounds(importance, floor, ceiling):
    clock = FakeClock()
    grown = _fetch_each_time_due(clock, None, ["same"] * 30, importance=importance)
    assert grown[-1].interval == ceiling
    shrunk = _fetch_each_time_due(
        clock, grown[-1], [f"v{i}" for i in range(30)], importance=importance
    )
    assert shrunk[-1].interval == floor


def test_critical_and_popular_pages_get_shorter_floors_than_ordinary_ones():
    assert POLICY.critical.floor < POLICY.popular.floor < POLICY.ordinary.floor == DAY
    assert POLICY.critical.ceiling < POLICY.ordinary.ceiling


def test_flagging_a_page_critical_pulls_its_next_fetch_under_the_new_ceiling():
    clock = FakeClock()
    quiet = _fetch_each_time_due(clock, None, ["same"] * 15)[-1]
    last_fetch = quiet.next_due - quiet.interval
    flagged = reclassify(quiet, Importance.CRITICAL, now=last_fetch + HOUR)
    assert flagged.interval == 7 * DAY
    assert flagged.next_due == last_fetch + 7 * DAY
    # Flagged long after the new ceiling passed: due now, not in the past.
    late = reclassify(quiet, Importance.CRITICAL, now=last_fetch + 30 * DAY)
    assert late.next_due == last_fetch + 30 * DAY
    # Becoming less important changes nothing until the next fetch.
    assert reclassify(flagged, Importance.ORDINARY) == flagged


@given(
    changes=st.lists(st.booleans(), min_size=1, max_size=80),
    importance=st.sampled_from(list(Importance)),
)
def test_interval_always_stays_within_bounds(changes: list[bool], importance: Importance):
    bounds = POLICY.bounds(importance)
    state = after_fetch(None, "v0", 0.0, importance)
    version = 0
    for changed in changes:
        version += changed
        state = after_fetch(state, f"v{version}", state.next_due, importance)
        assert bounds.floor <= state.interval <= bounds.ceiling
        assert state.next_due > 0


def test_importance_comes_from_the_flag_then_the_retrieval_feed():
    assert importance_of(True, None, None) is Importance.CRITICAL
    assert importance_of(False, 50, 40) is Importance.POPULAR
    assert importance_of(False, 39, 40) is Importance.ORDINARY
    assert importance_of(False, None, 40) is Importance.ORDINARY
    assert importance_of(False, 0, 0) is Importance.ORDINARY


def test_popular_threshold_takes_the_top_fraction_of_the_feed():
    counts = [1, 5, 100, 7, 0, 42, 3, 9, 12, 60]
    assert popular_threshold(counts, 0.2) == 60
    assert popular_threshold(counts, 0.5) == 9
    assert popular_threshold([0, 0], 0.5) is None
    assert popular_threshold([], 0.1) is None
    with pytest.raises(ValueError):
        popular_threshold(counts, 0.0)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: IntervalBounds(floor=2 * DAY, ceiling=DAY, initial=DAY),
            "need floor <= initial <= ceiling, got (172800.0, 86400.0, 86400.0)",
        ),
        (
            lambda: IntervalBounds(floor=0.0, ceiling=DAY, initial=DAY),
            "refresh bounds must be positive and finite: (0.0, 86400.0, 86400.0)",
        ),
        (
            lambda: IntervalBounds(floor=DAY, ceiling=float("inf"), initial=DAY),
            "refresh bounds must be positive and finite: (86400.0, inf, 86400.0)",
        ),
        (lambda: RefreshPolicy(shrink=1.0), "shrink must lie strictly between 0 and 1, got 1.0"),
        (lambda: RefreshPolicy(shrink=0.0), "shrink must lie strictly between 0 and 1, got 0.0"),
        (lambda: RefreshPolicy(grow=0.9), "grow must be finite and greater than 1, got 0.9"),
        (lambda: RefreshPolicy(grow=1.0), "grow must be finite and greater than 1, got 1.0"),
        (
            lambda: RefreshPolicy(grow=float("inf")),
            "grow must be finite and greater than 1, got inf",
        ),
    ],
)
def test_invalid_policy_is_refused(build, message):
    with pytest.raises(ValueError) as refused:
        build()
    assert str(refused.value) == message


def test_the_edges_of_every_range_are_accepted():
    assert IntervalBounds(floor=0.5, ceiling=2.0, initial=0.5).initial == 0.5
    assert IntervalBounds(floor=1.0, ceiling=2.0, initial=2.0).initial == 2.0
    policy = RefreshPolicy(shrink=0.5, grow=1.5)
    assert (policy.shrink, policy.grow) == (0.5, 1.5)
    assert RefreshPolicy(shrink=0.01, grow=1.01).grow == 1.01


def test_a_page_at_the_popular_threshold_is_popular_down_to_one_retrieval():
    assert importance_of(False, 40, 40) is Importance.POPULAR  # ties are in
    assert importance_of(False, 1, 1) is Importance.POPULAR
    assert importance_of(False, 0, 1) is Importance.ORDINARY


def test_the_whole_feed_may_be_popular_and_one_retrieval_counts():
    assert popular_threshold([1, 1, 0, 0], 1.0) == 1
    # A feed too small for its fraction still has its most retrieved page.
    assert popular_threshold([5, 3, 1], 0.1) == 5
    with pytest.raises(ValueError, match=r"^top_fraction must lie in \(0, 1\], got 1.5$"):
        popular_threshold([5, 3, 1], 1.5)


def test_reclassifying_keeps_the_pages_fingerprint_and_its_quiet_spell():
    clock = FakeClock()
    quiet = _fetch_each_time_due(clock, None, ["same"] * 15)[-1]
    flagged = reclassify(quiet, Importance.CRITICAL)
    assert flagged.interval == 7 * DAY
    assert (flagged.fingerprint, flagged.unchanged_fetches) == ("same", 14)


def test_a_page_already_within_the_new_ceiling_keeps_its_schedule_even_when_overdue():
    state = RefreshState("f", 7 * DAY, 100 * DAY, 3)
    assert reclassify(state, Importance.CRITICAL, now=200 * DAY) == state
