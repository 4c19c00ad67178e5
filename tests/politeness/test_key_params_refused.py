"""A limit key's parameters are seconds: a negative, infinite, NaN or non-numeric interval,
burst or slot width is refused with the field's name, and whole numbers and zero are fine."""

from __future__ import annotations

import math

import pytest

from courtier.politeness.gcra import KeyParams, Limit, earliest_start


@pytest.mark.parametrize("field", ["interval", "burst", "slot_width"])
@pytest.mark.parametrize(
    ("value", "message"),
    [
        (-1.0, "must be a finite non-negative number, got -1.0"),
        (-1, "must be a finite non-negative number, got -1"),
        (math.nan, "must be a finite non-negative number, got nan"),
        (math.inf, "must be a finite non-negative number, got inf"),
        (True, "must be a number of seconds, not bool"),
        ("1", "must be a number of seconds, not str"),
    ],
)
def test_a_bad_number_of_seconds_is_refused_naming_its_field(
    field: str, value: object, message: str
) -> None:
    fields: dict[str, object] = {"interval": 1.0, "burst": 0.0, "slot_width": 0.5, field: value}
    with pytest.raises(ValueError) as refused:
        KeyParams(**fields)  # type: ignore[arg-type]
    assert str(refused.value) == f"{field} {message}"


def test_whole_numbers_and_zero_are_seconds_too() -> None:
    assert KeyParams(0, 0, 0) == KeyParams(0.0, 0.0, 0.0)
    assert KeyParams(2, 1, 1).interval == 2


def test_a_rate_is_the_inverse_of_the_interval_and_keeps_every_other_field() -> None:
    assert KeyParams.from_rate(4.0) == KeyParams(0.25, 0.0, KeyParams(1.0).slot_width, True)
    assert KeyParams.from_rate(0.5, 2.0, 0.25, weighted=False) == KeyParams(2.0, 2.0, 0.25, False)
    assert KeyParams.from_rate(2, 1.0, 0.5, weighted=False) == KeyParams(0.5, 1.0, 0.5, False)
    assert KeyParams.from_rate(math.inf).interval == 0.0  # a key that never delays


@pytest.mark.parametrize("rate", [0.0, -1.0, 0, True, "1", math.nan])
def test_a_rate_that_is_not_a_positive_number_is_refused(rate: object) -> None:
    with pytest.raises(ValueError, match="rate must be a positive number of units per second"):
        KeyParams.from_rate(rate)  # type: ignore[arg-type]


def test_the_earliest_start_is_when_every_known_key_allows_it() -> None:
    limits = [
        Limit("a", KeyParams(1.0, burst=1.0)),
        Limit("b", KeyParams(1.0, burst=3.0)),
        Limit("new", KeyParams(1.0)),
    ]
    # TAT minus the burst tolerance, the latest of them; a key never booked allows now.
    assert earliest_start({"a": 10.0, "b": 14.0}, 5.0, limits) == 11.0
    assert earliest_start({"a": 10.0, "b": 12.0}, 5.0, limits) == 9.0
    assert earliest_start({"a": 10.0, "b": 12.0}, 20.0, limits) == 20.0
    assert earliest_start({"other": 50.0}, 5.0, limits) == 5.0
