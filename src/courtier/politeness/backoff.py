"""How long a site must wait after an answer: Retry-After, 429/503 and runs of 5xx.

Pure functions of (status, Retry-After header, now, previous state). ``Retry-After`` in either
form (delta-seconds or HTTP-date, RFC 9110 section 10.2.3) is a hard floor. A 429/503 also
doubles the site's spacing (it told us we were too fast), which then recovers slowly on
success. A run of failures backs off exponentially, and past a threshold the site is
suspended for hours (``suspend_for``), then tried again from a clean slate.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from courtier.net.headers import retry_after_seconds

_MAX_RETRY_AFTER = 24 * 3600.0


def parse_retry_after(
    value: str | None, now_wall: float, *, maximum: float = _MAX_RETRY_AFTER
) -> float | None:
    """Seconds to wait from a Retry-After value, at most ``maximum``; None if absent or
    unreadable (``courtier.net.headers.retry_after_seconds`` reads it)."""
    seconds = retry_after_seconds(value, now_wall)
    if seconds is None:
        return None
    return min(seconds, maximum)


@dataclass(frozen=True, slots=True)
class BackoffState:
    interval: float
    """Current start-to-start spacing of the site, never below its base interval."""
    paused_until: float = 0.0
    failures: int = 0
    suspended: bool = False


@dataclass(frozen=True, slots=True)
class BackoffParams:
    base_interval: float
    default_retry_after: float
    max_backoff: float
    suspend_after: int
    suspend_for: float = 6 * 3600.0
    max_interval: float = 60.0


def after_response(
    state: BackoffState,
    status: int | None,
    retry_after: float | None,
    now: float,
    params: BackoffParams,
) -> BackoffState:
    """The site's state after an answer (``status`` None: no answer, e.g. a timeout)."""
    if status is not None and status < 500 and status != 429:
        recovered = max(params.base_interval, state.interval * 0.9)
        if recovered == state.interval and not (state.failures or state.suspended):
            return state  # the steady state: most answers change nothing
        return BackoffState(recovered, state.paused_until)
    failures = state.failures + 1
    if failures >= params.suspend_after:
        # Suspended for hours, then tried again from a clean slate.
        until = max(state.paused_until, now + params.suspend_for)
        return replace(state, paused_until=until, failures=0, suspended=True)
    if status in (429, 503):
        wait = retry_after if retry_after is not None else params.default_retry_after
        interval = min(params.max_interval, state.interval * 2)
    else:
        exponential = params.base_interval * (2.0 ** min(failures, 30))
        wait = min(params.max_backoff, exponential)
        if retry_after is not None:
            wait = max(wait, retry_after)
        interval = state.interval
    return BackoffState(
        interval=interval,
        paused_until=max(state.paused_until, now + wait),
        failures=failures,
        suspended=False,
    )
