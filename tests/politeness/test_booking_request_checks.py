"""A booking no backend should ever see is refused before any key is touched: no keys,
repeated keys (however many), a cost that is not a positive number, a maximum lead that is
not a number of seconds."""

from __future__ import annotations

import math

import pytest

from courtier.politeness.gcra import KeyParams, Limit, check_request

PARAMS = KeyParams(1.0)


def _limits(*keys: str) -> list[Limit]:
    return [Limit(key, PARAMS) for key in keys]


def test_repeated_keys_are_refused_naming_them_however_many_there_are() -> None:
    with pytest.raises(ValueError) as refused:
        check_request(_limits("site:a", "origin:o", "site:a"), 1.0, math.inf, None)
    assert str(refused.value) == "limit keys must be distinct, got ['site:a', 'origin:o', 'site:a']"
    with pytest.raises(ValueError, match="must be distinct"):
        check_request(_limits("site:a", "site:a"), 1.0, math.inf, None)
    check_request(_limits("site:a", "origin:o", "cdn:c"), 1.0, math.inf, None)


def test_a_booking_needs_a_key() -> None:
    with pytest.raises(ValueError, match="a booking needs at least one limit key"):
        check_request([], 1.0, math.inf, None)


@pytest.mark.parametrize("cost", [0.0, 0, -1.0, math.inf, math.nan, True])
def test_a_cost_that_is_not_positive_and_finite_is_refused(cost: float) -> None:
    with pytest.raises(ValueError, match="cost must be a positive finite number"):
        check_request(_limits("site:a"), cost, math.inf, None)


def test_a_maximum_lead_is_any_number_of_seconds_from_zero_to_infinity() -> None:
    for max_lead in (0.0, 0, 2, 2.5, math.inf):
        check_request(_limits("site:a"), 1, max_lead, None)
    for bad in (True, -1.0, math.nan, "1"):
        with pytest.raises(ValueError, match="max_lead must be"):
            check_request(_limits("site:a"), 1.0, bad, None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="slack must be"):
        check_request(_limits("site:a"), 1.0, math.inf, -1.0)
