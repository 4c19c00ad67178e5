"""Backoff across a recovery: a good answer never lifts a pause a server asked for, a failure
waits at least what Retry-After says, and a site tried again after its suspension is no
longer suspended."""

from __future__ import annotations

from courtier.politeness.backoff import BackoffParams, BackoffState, after_response

PARAMS = BackoffParams(
    base_interval=1.0, default_retry_after=30.0, max_backoff=60.0, suspend_after=5
)


def test_a_good_answer_slows_the_recovery_but_keeps_the_pause() -> None:
    paused = BackoffState(interval=4.0, paused_until=500.0, failures=2)
    after = after_response(paused, 200, None, 100.0, PARAMS)
    assert after == BackoffState(interval=3.6, paused_until=500.0, failures=0, suspended=False)


def test_a_server_error_waits_at_least_its_retry_after() -> None:
    state = BackoffState(interval=1.0)
    after = after_response(state, 500, 45.0, 100.0, PARAMS)
    assert after.paused_until == 145.0  # Retry-After over the exponential 2 s
    shorter = after_response(state, 500, 0.5, 100.0, PARAMS)
    assert shorter.paused_until == 102.0  # the exponential over a shorter Retry-After


def test_a_failure_after_a_suspension_counts_from_a_clean_slate_unsuspended() -> None:
    suspended = BackoffState(interval=1.0, paused_until=50.0, failures=0, suspended=True)
    after = after_response(suspended, 500, None, 100.0, PARAMS)
    assert after == BackoffState(interval=1.0, paused_until=102.0, failures=1, suspended=False)
