"""Feedback: what an answer does to the lane, its origin and the key clocks. Pure.

Rules (the seed: "a 429, 503, or a run of 500s means back off, or stop entirely, across the
site, the origin, or both"):
- The lane (a site, or a media key) backs off (``politeness.backoff``): Retry-After is a
  hard floor; 429/503 pause it (Retry-After, else ``default_retry_after``) and double its
  spacing; a run of failures (5xx, no answer, DNS trouble) backs off exponentially, and
  past ``suspend_after_errors`` the lane is suspended for ``suspend_for``.
- The origin: 429/503 from ``origin_pause_sites`` of its lanes within
  ``origin_pause_window`` pause it until the Retry-After (or ``default_retry_after``). A run
  of ``origin_error_run`` failures (5xx or no answer) from at least two of its lanes with no
  success between backs the whole origin off, exponentially with each further run, and
  past ``suspend_after_errors`` failures stops it for ``suspend_for``.
- Latency (``politeness.latency``) on the lane and on its origin: answers slowing down cut
  the key's rate before errors start. Errors are no latency samples.
- A response dearer than it was booked (an image URL answering a page) is charged the
  difference on its origin afterwards; never credited.
- Nothing a server says is kept as a time beyond ``max_retry_after``.

``after_answer`` takes the answer and the current states and returns the new states and the
clock adjustments (``Effects``); the engine's one writer applies them (``apply.py``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from courtier.politeness.backoff import BackoffParams, BackoffState, after_response
from courtier.politeness.keys import origin_key
from courtier.politeness.latency import LatencyParams, LatencyState, observe


@dataclass(frozen=True, slots=True)
class OriginState:
    latency: LatencyState = field(default_factory=LatencyState)
    pushbacks: tuple[tuple[str, float], ...] = ()
    """(lane, when) of recent 429/503 answers."""
    error_run: int = 0
    """Failures in a row across the origin's lanes (reset by any success)."""
    error_lanes: frozenset[str] = frozenset()
    backoffs: int = 0
    """Error runs that backed the origin off since its last success."""


@dataclass(frozen=True, slots=True)
class LaneFeedback:
    backoff: BackoffState
    latency: LatencyState


@dataclass(frozen=True, slots=True)
class Answered:
    lane: str
    status: int | None
    """None: no answer at all (timeout, reset, DNS trouble)."""
    retry_after: float | None
    """Seconds the server asked for (already parsed, unclamped)."""
    latency: float | None
    now: float
    origin: str | None = None
    extra_cost: float = 0.0
    """Cost units the answer turned out dearer than its booking."""
    origin_latency: bool = True
    """False: another server answered for the origin (a CDN or image-service edge, for a
    media request booked on the customer's origin): its latency is the edge's, and a fast
    edge taken for the origin's baseline made every page of a slow origin look congested."""


@dataclass(frozen=True, slots=True)
class FeedbackParams:
    backoff: BackoffParams
    lane_latency: LatencyParams
    origin_latency: LatencyParams
    default_retry_after: float
    max_retry_after: float
    origin_pause_sites: int
    origin_pause_window: float
    origin_error_run: int
    suspend_after_errors: int
    suspend_for: float


@dataclass(frozen=True, slots=True)
class Effects:
    lane: LaneFeedback
    origin: OriginState | None
    floors: dict[str, float] = field(default_factory=dict)
    """Key -> time before which nothing may start on it."""
    origin_charge: float = 0.0
    events: tuple[str, ...] = ()
    """What happened, for counters and logs: suspended, origin-paused, origin-backoff,
    origin-stopped, slowdown-lane, slowdown-origin, cost-correction."""


def _is_failure(status: int | None) -> bool:
    return status is None or status >= 500


def after_answer(
    answer: Answered, lane: LaneFeedback, origin: OriginState | None, params: FeedbackParams
) -> Effects:
    events: list[str] = []
    floors: dict[str, float] = {}
    wait = answer.retry_after
    if wait is not None:
        wait = min(max(0.0, wait), params.max_retry_after)
    backoff = after_response(lane.backoff, answer.status, wait, answer.now, params.backoff)
    if backoff.suspended and not lane.backoff.suspended:
        events.append("suspended")
    latency = lane.latency
    sample = _latency_sample(answer)
    if sample is not None:
        latency = observe(lane.latency, sample, answer.now, params.lane_latency)
        if latency.factor < lane.latency.factor:
            events.append("slowdown-lane")
    new_origin = origin
    if origin is not None and answer.origin is not None:
        new_origin = _origin_after(answer, origin, params, floors, events)
        if answer.extra_cost > 0:
            events.append("cost-correction")
    return Effects(
        lane=LaneFeedback(backoff, latency),
        origin=new_origin,
        floors=floors,
        origin_charge=answer.extra_cost if answer.origin is not None else 0.0,
        events=tuple(events),
    )


def _latency_sample(answer: Answered) -> float | None:
    if _is_failure(answer.status) or answer.status == 429:
        return None
    return answer.latency


def _origin_after(
    answer: Answered,
    origin: OriginState,
    params: FeedbackParams,
    floors: dict[str, float],
    events: list[str],
) -> OriginState:
    assert answer.origin is not None
    key = origin_key(answer.origin)
    now = answer.now
    state = origin
    sample = _latency_sample(answer) if answer.origin_latency else None
    if sample is not None:
        latency = observe(state.latency, sample, now, params.origin_latency)
        if latency.factor < state.latency.factor:
            events.append("slowdown-origin")
        # Built whole, not by dataclasses.replace: once an answer on the event loop.
        state = OriginState(
            latency, state.pushbacks, state.error_run, state.error_lanes, state.backoffs
        )
    if answer.status in (429, 503):
        window = now - params.origin_pause_window
        kept = [(lane, when) for lane, when in state.pushbacks if when >= window]
        recent = (*(p for p in kept if p[0] != answer.lane), (answer.lane, now))
        if len(recent) >= params.origin_pause_sites:
            wait = answer.retry_after
            wait = params.default_retry_after if wait is None else wait
            floors[key] = now + min(max(0.0, wait), params.max_retry_after)
            events.append("origin-paused")
            recent = ()
        state = dataclasses.replace(state, pushbacks=recent)
    if _is_failure(answer.status):
        run = state.error_run + 1
        lanes = state.error_lanes | {answer.lane}
        if run >= params.suspend_after_errors and len(lanes) >= 2:
            floors[key] = now + params.suspend_for
            events.append("origin-stopped")
            return dataclasses.replace(state, error_run=0, error_lanes=frozenset(), backoffs=0)
        if run % params.origin_error_run == 0 and len(lanes) >= 2:
            backoffs = state.backoffs + 1
            base = params.backoff.base_interval * 2.0 ** min(backoffs + 2, 30)
            floors[key] = now + min(params.backoff.max_backoff, base)
            events.append("origin-backoff")
            return dataclasses.replace(state, error_run=run, error_lanes=lanes, backoffs=backoffs)
        return dataclasses.replace(state, error_run=run, error_lanes=lanes)
    if answer.status != 429 and (state.error_run or state.backoffs):
        state = dataclasses.replace(state, error_run=0, error_lanes=frozenset(), backoffs=0)
    return state
