"""An origin's latency is its own servers': a CDN or image-service edge answering for it
(media booked on the customer's origin) never sets the origin's baseline."""

from __future__ import annotations

from courtier.config import Config
from courtier.pipeline.answers.feedback import Answered, LaneFeedback, OriginState, after_answer
from courtier.pipeline.answers.feedback_writer import feedback_params
from courtier.politeness.backoff import BackoffState
from courtier.politeness.latency import LatencyState


def _slowdowns(*, edges_count: bool) -> int:
    """A slow origin (0.3 s a page, always) whose images a fast edge serves (1 ms)."""
    params = feedback_params(Config(), one_in_flight=True)
    origin = OriginState()
    page_lane = LaneFeedback(BackoffState(interval=1.0), LatencyState())
    edge_lane = LaneFeedback(BackoffState(interval=1.0), LatencyState())
    slowdowns = 0
    for second in range(60):
        now = float(second)
        if second % 3 == 1:
            edge = Answered("cdn", 200, None, 0.001, now, origin="o", origin_latency=edges_count)
            effects = after_answer(edge, edge_lane, origin, params)
            edge_lane = effects.lane
        else:
            page = Answered("slow.test", 200, None, 0.3, now, origin="o")
            effects = after_answer(page, page_lane, origin, params)
            page_lane = effects.lane
        assert effects.origin is not None
        origin = effects.origin
        slowdowns += "slowdown-origin" in effects.events
    return slowdowns


def test_a_fast_edge_does_not_make_a_slow_origin_look_congested() -> None:
    assert _slowdowns(edges_count=False) == 0


def test_the_edge_latency_taken_for_the_origin_would_slow_it_down() -> None:
    """What the flag prevents (the demo world's slow sites ran at a quarter of their budget)."""
    assert _slowdowns(edges_count=True) >= 5
