"""An anomaly raised on an origin halves that origin's rate in the running crawl (the CLI
connects the observation's anomalies to the engine)."""

from __future__ import annotations

from types import SimpleNamespace

from courtier.cli.crawl import _slow_down
from courtier.pipeline.engine import Engine


class Feedback:
    def __init__(self) -> None:
        self.slowed: list[str] = []

    def slow_origin(self, origin: str) -> None:
        self.slowed.append(origin)


def _engine(stages: object) -> Engine:
    engine = object.__new__(Engine)
    engine.stages = stages  # type: ignore[assignment]
    return engine


def test_a_raised_anomaly_slows_its_origin_and_a_cleared_one_does_not() -> None:
    feedback = Feedback()
    observation = SimpleNamespace(engine=_engine(SimpleNamespace(feedback=feedback)))
    _slow_down(observation, SimpleNamespace(state="raised", origin="o1"))  # type: ignore[arg-type]
    _slow_down(observation, SimpleNamespace(state="cleared", origin="o2"))  # type: ignore[arg-type]
    _slow_down(observation, SimpleNamespace(state="raised", origin=None))  # type: ignore[arg-type]
    assert feedback.slowed == ["o1"]


def test_an_anomaly_before_the_stages_are_wired_changes_nothing() -> None:
    engine = _engine(None)
    before = dict(vars(engine))
    observation = SimpleNamespace(engine=engine)
    _slow_down(observation, SimpleNamespace(state="raised", origin="o1"))  # type: ignore[arg-type]
    assert vars(engine) == before
    # Nor is it kept for later: once the stages are wired, the origin is at its full rate.
    feedback = Feedback()
    engine.stages = SimpleNamespace(feedback=feedback)  # type: ignore[assignment]
    assert feedback.slowed == []
    _slow_down(observation, SimpleNamespace(state="raised", origin="o1"))  # type: ignore[arg-type]
    assert feedback.slowed == ["o1"]  # the engine in this test is wired as a crawl's is
