"""Fast sources found by the crawl (``frontier.fresh``): the pure rules, on made-up visits."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from courtier.frontier.fresh import (
    MIN_INTERVAL,
    FreshPolicy,
    FreshSource,
    FreshState,
    after_visit,
    candidate,
)

POLICY = FreshPolicy()


def _home(at: float = 0.0) -> FreshSource:
    return candidate(7, "http://news.test/", "news.test", "home page", at, "fp0", POLICY)


def _look(source: FreshSource, fingerprint: str | None, new_links: int) -> FreshSource:
    return after_visit(source, fingerprint, new_links, source.next_visit, POLICY)


def test_a_candidate_is_looked_at_again_after_the_probe_interval() -> None:
    source = _home(100.0)
    assert source.state is FreshState.PROBING
    assert source.next_visit == 100.0 + MIN_INTERVAL


def test_a_page_with_news_on_every_look_becomes_a_source_looked_at_once_a_minute() -> None:
    source = _home()
    for n in range(1, 6):
        source = _look(source, f"fp{n}", 2)
        if n == 1:
            assert source.state is FreshState.PROBING  # one look proves nothing yet
    assert source.state is FreshState.SOURCE
    assert source.interval == MIN_INTERVAL  # never under a minute, however fast it moves
    assert source.productive == 5 and source.new_links == 2


def test_a_page_that_never_changes_is_looked_at_less_often_then_left() -> None:
    source = _home()
    intervals = []
    for _ in range(POLICY.quiet):
        source = _look(source, "fp0", 0)
        intervals.append(source.interval)
    assert intervals[:-1] == [90.0, 135.0]
    assert source.state is FreshState.QUIET and not source.watched
    assert source.interval == POLICY.ceiling  # handed back to ordinary refresh


def test_a_change_without_new_links_is_no_news() -> None:
    source = _home()
    for n in range(1, 4):
        source = _look(source, f"fp{n}", 0)  # a counter or a rotating quote
    assert source.state is FreshState.QUIET
    assert source.productive == 0
    assert source.last_change is not None


def test_a_304_is_a_look_that_found_nothing_new() -> None:
    source = _look(_home(), None, 0)
    assert source.fingerprint == "fp0" and source.quiet_run == 1
    assert source.interval == 90.0


def test_a_source_that_stops_changing_leaves_the_freshlane() -> None:
    source = _home()
    for n in range(1, 4):
        source = _look(source, f"fp{n}", 1)
    assert source.state is FreshState.SOURCE
    looks = 0
    while source.watched:
        source = _look(source, "fp3", 0)
        looks += 1
    assert looks == POLICY.quiet * POLICY.quiet
    assert source.interval == POLICY.ceiling


def test_a_quiet_page_with_news_again_is_a_candidate_again() -> None:
    source = _home()
    for _ in range(POLICY.quiet):
        source = _look(source, "fp0", 0)
    assert source.state is FreshState.QUIET
    source = after_visit(source, "fp9", 4, source.last_visit + 2 * 86400, POLICY)
    assert source.state is FreshState.PROBING
    assert source.interval == POLICY.ceiling * POLICY.shrink
    assert source.visits == 1 and source.productive == 1


def test_a_page_on_the_hand_list_is_never_judged() -> None:
    hand = FreshSource(3, "http://x.test/", "x.test", FreshState.HAND, 300.0, "configured", 0, 0)
    for n in range(10):
        hand = after_visit(hand, "same" if n % 2 else "other", 0, hand.next_visit, POLICY)
    assert hand.state is FreshState.HAND and hand.interval == 300.0 and hand.visits == 10


def test_the_learned_interval_follows_how_often_the_page_really_changes() -> None:
    """A page with news every ``period`` seconds, looked at on its own schedule: the interval
    settles near the period (a little under it), never under a minute."""
    for period, low, high in ((30.0, 60.0, 60.0), (600.0, 120.0, 600.0), (3600.0, 700.0, 3600.0)):
        source, at = _home(), 0.0
        intervals = []
        for _ in range(400):
            at = source.next_visit
            changed = int(at // period) != int(source.last_visit // period)
            fingerprint = f"fp{int(at // period)}"
            source = after_visit(source, fingerprint, 3 if changed else 0, at, POLICY)
            intervals.append(source.interval)
        settled = intervals[200:]
        mean = sum(settled) / len(settled)
        assert source.state is FreshState.SOURCE, period
        assert low <= mean <= high, (period, mean)


@given(
    st.lists(st.tuples(st.booleans(), st.integers(0, 5), st.floats(0, 1e6)), max_size=60),
)
def test_the_interval_stays_between_a_minute_and_the_ceiling(looks) -> None:
    source = _home()
    for changed, new_links, gap in looks:
        fingerprint = f"fp{source.visits + 1}" if changed else source.fingerprint
        source = after_visit(source, fingerprint, new_links, source.last_visit + gap, POLICY)
        assert MIN_INTERVAL <= source.interval <= POLICY.ceiling
        assert source.watched == (source.state is not FreshState.QUIET)


def test_a_policy_that_would_look_more_than_once_a_minute_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 60"):
        FreshPolicy(probe=30.0)
    with pytest.raises(ValueError):
        FreshPolicy(shrink=1.0)
