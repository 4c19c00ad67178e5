from datetime import UTC, datetime
from email.utils import format_datetime

from courtier.politeness.backoff import (
    BackoffParams,
    BackoffState,
    after_response,
    parse_retry_after,
)

PARAMS = BackoffParams(
    base_interval=1.0, default_retry_after=60.0, max_backoff=3600.0, suspend_after=5
)


def test_retry_after_seconds_and_http_date_forms():
    assert parse_retry_after("120", 0.0) == 120.0
    now = 1_700_000_000.0
    date = format_datetime(datetime.fromtimestamp(now + 30, UTC), usegmt=True)
    assert abs(parse_retry_after(date, now) - 30.0) < 1.0


def test_retry_after_garbage_or_past_date_is_harmless():
    assert parse_retry_after(None, 0.0) is None
    assert parse_retry_after("soon", 0.0) is None
    assert parse_retry_after("-5", 0.0) is None
    assert parse_retry_after("Mon, 01 Jan 1990 00:00:00 GMT", 1_700_000_000.0) == 0.0


def test_429_pauses_for_retry_after_and_doubles_spacing():
    state = after_response(BackoffState(interval=1.0), 429, 30.0, 100.0, PARAMS)
    assert state.paused_until == 130.0
    assert state.interval == 2.0


def test_503_without_retry_after_uses_the_default_pause():
    state = after_response(BackoffState(interval=1.0), 503, None, 0.0, PARAMS)
    assert state.paused_until == 60.0


def test_run_of_5xx_backs_off_exponentially_then_suspends():
    state = BackoffState(interval=1.0)
    pauses = []
    for i in range(4):
        state = after_response(state, 500, None, float(i), PARAMS)
        pauses.append(state.paused_until - i)
    assert pauses == [2.0, 4.0, 8.0, 16.0]
    state = after_response(state, 500, None, 10.0, PARAMS)
    assert state.suspended
    assert state.paused_until == 10.0 + PARAMS.suspend_for  # hours, then a clean slate
    assert state.failures == 0
    state = after_response(state, 200, None, state.paused_until + 1, PARAMS)
    assert not state.suspended


def test_success_resets_failures_and_spacing_recovers_slowly_to_base():
    state = BackoffState(interval=4.0, failures=3)
    state = after_response(state, 200, None, 0.0, PARAMS)
    assert state.failures == 0
    assert 1.0 < state.interval < 4.0
    for _ in range(50):
        state = after_response(state, 200, None, 0.0, PARAMS)
    assert state.interval == 1.0
