"""Evidence records: weights, JSON round trips, and how weights combine into a confidence."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from courtier.origins.evidence import Evidence, Kind, combined_confidence


def test_evidence_round_trips_through_json() -> None:
    item = Evidence(Kind.CNAME, "edge.platform-a.test", 0.95, "8 sites CNAME to it")
    assert Evidence.from_json(item.to_json()) == item


def test_weights_of_minus_one_and_one_are_the_bounds_and_allowed() -> None:
    assert Evidence(Kind.TLS, "x", 1.0).weight == 1.0
    assert Evidence(Kind.TLS_CONFLICT, "x", -1.0).weight == -1.0


def test_weight_outside_minus_one_to_one_is_refused() -> None:
    for weight in (1.5, -1.5):
        with pytest.raises(ValueError, match="weight"):
            Evidence(Kind.TLS, "x", weight)


def test_bad_stored_weight_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="number"):
        Evidence.from_json({"kind": "cname", "value": "x", "weight": "high"})


def test_independent_signals_make_a_decision_surer_than_either() -> None:
    one = combined_confidence([Evidence(Kind.CNAME, "a", 0.5)])
    two = combined_confidence(
        [Evidence(Kind.CNAME, "a", 0.5), Evidence(Kind.PTR_ADDRESS, "b", 0.5)]
    )
    assert one == pytest.approx(0.5)
    assert two == pytest.approx(0.75)


def test_a_contradiction_lowers_confidence_by_its_weight() -> None:
    confidence = combined_confidence(
        [Evidence(Kind.HEADERS, "s", 0.8), Evidence(Kind.HEADER_CONFLICT, "c", -0.25)]
    )
    assert confidence == pytest.approx(0.8 * 0.75)


def test_each_contradiction_takes_its_own_share_off() -> None:
    confidence = combined_confidence(
        [
            Evidence(Kind.HEADERS, "s", 0.8),
            Evidence(Kind.HEADER_CONFLICT, "c", -0.25),
            Evidence(Kind.TLS_CONFLICT, "issuer", -0.5),
        ]
    )
    assert confidence == pytest.approx(0.8 * 0.75 * 0.5)


def test_no_evidence_is_no_confidence() -> None:
    assert combined_confidence([]) == 0.0


@given(st.lists(st.floats(min_value=-1.0, max_value=1.0), max_size=12))
def test_confidence_always_lies_between_zero_and_one(weights: list[float]) -> None:
    confidence = combined_confidence(Evidence(Kind.TLS, "x", w) for w in weights)
    assert 0.0 <= confidence <= 1.0
