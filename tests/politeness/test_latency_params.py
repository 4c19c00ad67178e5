"""Latency feedback's parameters: a setting that would make feedback meaningless (a cut that
is no cut, a rate floor of zero, a congestion ratio below one) is refused when it is read, and
every edge of the allowed ranges is accepted."""

from __future__ import annotations

import pytest

from courtier.politeness.latency import LatencyParams


@pytest.mark.parametrize(
    "fields",
    [
        {"decrease": 0.0},
        {"decrease": 1.0},
        {"floor": 0.0},
        {"floor": 1.01},
        {"smoothing": 0.0},
        {"smoothing": 1.01},
        {"ratio": 0.99},
        {"min_rise": -0.01},
        {"increase": -0.01},
        {"cooldown": -0.01},
    ],
)
def test_meaningless_feedback_settings_are_refused(fields: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="latency feedback: "):
        LatencyParams(**fields)


def test_the_edges_of_every_range_are_accepted() -> None:
    LatencyParams(decrease=0.01, floor=1.0, smoothing=1.0, ratio=1.0)
    LatencyParams(decrease=0.99, floor=0.001, smoothing=0.001)
    LatencyParams(min_rise=0.0, increase=0.0, cooldown=0.0)
