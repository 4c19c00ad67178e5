"""A run of failures across an origin's sites raises the origin's floor, longer with each
further run; a success ends the runs. Pure feedback, no clock but the answers' own."""

from __future__ import annotations

from courtier.config import Config
from courtier.pipeline.answers.feedback import (
    Answered,
    Effects,
    LaneFeedback,
    OriginState,
    after_answer,
)
from courtier.pipeline.answers.feedback_writer import feedback_params
from courtier.politeness.backoff import BackoffState
from courtier.politeness.latency import LatencyState

PARAMS = feedback_params(Config(), one_in_flight=True)
RUN = PARAMS.origin_error_run
BASE = PARAMS.backoff.base_interval
SITES = ("a.test", "b.test")


def _answers(
    statuses: list[int | None], origin: OriginState, start: float = 0.0
) -> tuple[list[Effects], OriginState]:
    """Answers one second apart from ``start``, the two sites of origin ``o1`` in turn."""
    lanes = {site: LaneFeedback(BackoffState(interval=BASE), LatencyState()) for site in SITES}
    found: list[Effects] = []
    for n, status in enumerate(statuses):
        site = SITES[n % 2]
        answer = Answered(site, status, None, 0.01, start + n, origin="o1")
        effects = after_answer(answer, lanes[site], origin, PARAMS)
        lanes[site] = effects.lane
        assert effects.origin is not None
        origin = effects.origin
        found.append(effects)
    return found, origin


def test_a_run_of_failures_across_two_sites_raises_the_origins_floor() -> None:
    assert PARAMS.suspend_after_errors > RUN  # backed off, not stopped
    found, _origin = _answers([500] * (RUN - 1) + [None], OriginState())
    assert all("origin:o1" not in e.floors for e in found[:-1])  # not before the run is full
    last = found[-1]
    assert "origin-backoff" in last.events
    now = float(RUN - 1)
    assert last.floors["origin:o1"] == now + min(PARAMS.backoff.max_backoff, BASE * 2.0**3)


def test_each_further_run_backs_the_origin_off_longer_until_a_success() -> None:
    found, origin = _answers([None if n % 3 else 500 for n in range(2 * RUN)], OriginState())
    first, second = found[RUN - 1], found[2 * RUN - 1]
    assert first.floors["origin:o1"] - (RUN - 1) < second.floors["origin:o1"] - (2 * RUN - 1)
    assert origin.backoffs == 2
    found, origin = _answers([200], origin, start=2 * RUN)
    assert origin.backoffs == 0 and origin.error_run == 0
    found, _origin = _answers([500] * RUN, origin, start=2 * RUN + 1)
    assert found[-1].floors["origin:o1"] == 3 * RUN + BASE * 2.0**3  # back to the first step
