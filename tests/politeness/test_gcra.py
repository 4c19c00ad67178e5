"""The pure booking function: GCRA with bounded slack, cost, burst tolerance and max lead."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from courtier.politeness.gcra import (
    KeyParams,
    Limit,
    Refusal,
    Slot,
    book,
    earliest_start,
    slot_slack,
)

NOW = 1000.0


def limit(key: str, interval: float, burst: float = 0.0, width: float = 0.25) -> Limit:
    return Limit(key, KeyParams(interval, burst, width))


def test_unknown_keys_book_at_now_and_get_tat_now_plus_charge() -> None:
    booking, updates = book({}, NOW, [limit("site:a", 1.0), limit("origin:o", 0.5)], 2)
    assert booking == Slot(NOW, NOW + 0.25, ("site:a", "origin:o"), 2)
    assert updates == {"site:a": NOW + 2.0, "origin:o": NOW + 1.0}


def test_start_is_the_latest_tat_minus_burst_over_all_keys() -> None:
    tats = {"site:a": NOW + 1.0, "origin:o": NOW + 3.0, "bucket:b": NOW + 9.0}
    limits = [limit("site:a", 1.0), limit("origin:o", 1.0), limit("bucket:b", 1.0, burst=8.0)]
    booking, updates = book(tats, NOW, limits, 1)
    assert isinstance(booking, Slot)
    assert booking.start == NOW + 3.0
    assert updates == {"site:a": NOW + 4.0, "origin:o": NOW + 4.0, "bucket:b": NOW + 10.0}


def test_a_past_tat_counts_from_now() -> None:
    booking, updates = book({"site:a": NOW - 50.0}, NOW, [limit("site:a", 1.0)], 1)
    assert isinstance(booking, Slot) and booking.start == NOW
    assert updates == {"site:a": NOW + 1.0}


def test_unweighted_key_charges_one_interval_whatever_the_cost() -> None:
    site = Limit("site:a", KeyParams(1.0, weighted=False))
    _, updates = book({}, NOW, [site, limit("origin:o", 0.5)], 4)
    assert updates == {"site:a": NOW + 1.0, "origin:o": NOW + 2.0}


def test_zero_interval_key_never_delays() -> None:
    tats = {"cdn:c": NOW}
    booking, updates = book(tats, NOW, [limit("cdn:c", 0.0)], 4)
    assert isinstance(booking, Slot) and booking.start == NOW and updates == {"cdn:c": NOW}


def test_refusal_names_the_saturated_keys_and_when_to_ask_again() -> None:
    tats = {"site:a": NOW + 0.5, "origin:o": NOW + 30.0}
    booking, updates = book(
        tats, NOW, [limit("site:a", 1.0), limit("origin:o", 1.0)], 1, max_lead=10.0
    )
    assert booking == Refusal(not_before=NOW + 20.0, start=NOW + 30.0, keys=("origin:o",))
    assert updates == {}


def test_a_start_exactly_max_lead_ahead_is_accepted() -> None:
    booking, _ = book({"site:a": NOW + 10.0}, NOW, [limit("site:a", 1.0)], 1, max_lead=10.0)
    assert isinstance(booking, Slot) and booking.start == NOW + 10.0


def test_slack_defaults_to_the_narrowest_slot_width() -> None:
    limits = [limit("site:a", 1.0, width=0.4), limit("origin:o", 1.0, width=0.1)]
    assert slot_slack(limits) == 0.1
    assert slot_slack(limits, 2.0) == 2.0
    booking, _ = book({}, NOW, limits, 1, slack=0.0)
    assert isinstance(booking, Slot) and booking.deadline == booking.start


def test_slot_is_missed_only_after_its_deadline() -> None:
    booked = Slot(NOW, NOW + 0.25, ("site:a",), 1)
    assert not booked.is_missed(NOW + 0.25)
    assert booked.is_missed(NOW + 0.2500001)
    assert booked.wait(NOW - 2.0) == 2.0 and booked.wait(NOW + 1.0) == 0.0


def test_earliest_start_ignores_keys_without_a_tat() -> None:
    assert earliest_start({"x": NOW + 5.0}, NOW, [limit("site:a", 1.0)]) == NOW


def test_input_tats_are_not_modified() -> None:
    tats = {"site:a": NOW + 1.0}
    book(tats, NOW, [limit("site:a", 1.0)], 1)
    assert tats == {"site:a": NOW + 1.0}


@pytest.mark.parametrize(
    ("limits", "cost", "message"),
    [
        ([], 1, "at least one"),
        ([limit("site:a", 1.0), limit("site:a", 1.0)], 1, "distinct"),
        ([limit("site:a", 1.0)], 0, "cost"),
        ([limit("site:a", 1.0)], -2, "cost"),
        ([limit("site:a", 1.0)], math.inf, "cost"),
        ([limit("site:a", 1.0)], math.nan, "cost"),
    ],
)
def test_bad_bookings_raise_value_error(limits: list[Limit], cost: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        book({}, NOW, limits, cost)


def test_bad_times_raise_value_error() -> None:
    with pytest.raises(ValueError, match="now"):
        book({}, math.nan, [limit("site:a", 1.0)], 1)
    with pytest.raises(ValueError, match="max_lead"):
        book({}, NOW, [limit("site:a", 1.0)], 1, max_lead=-1.0)
    with pytest.raises(ValueError, match="slack"):
        book({}, NOW, [limit("site:a", 1.0)], 1, slack=math.inf)


@pytest.mark.parametrize(
    "kwargs",
    [{"interval": -1.0}, {"interval": math.nan}, {"interval": 1.0, "burst": math.inf}],
)
def test_bad_key_params_raise_value_error(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        KeyParams(**kwargs)


def test_key_params_from_rate() -> None:
    assert KeyParams.from_rate(4.0, 1.0) == KeyParams(0.25, 1.0)
    assert KeyParams.from_rate(math.inf).interval == 0.0
    with pytest.raises(ValueError, match="rate"):
        KeyParams.from_rate(0.0)


def test_empty_key_name_is_rejected() -> None:
    with pytest.raises(ValueError, match="non-empty"):
        Limit("", KeyParams(1.0))


@given(
    st.lists(
        st.tuples(st.sampled_from([1.0, 2.0, 4.0]), st.floats(0.0, 5.0), st.floats(0.0, 2.0)),
        min_size=2,
        max_size=40,
    ),
    st.floats(0.01, 2.0),
    st.floats(0.0, 1.0),
)
def test_starts_on_a_key_never_beat_the_charges_minus_burst_and_slack(
    steps: list[tuple[float, float, float]], interval: float, width: float
) -> None:
    """Floor integrity: whatever the wake-up lateness, missed slots never bunch."""
    params = KeyParams(interval, 0.0, width)
    tats: dict[str, float] = {}
    now = NOW
    started: list[tuple[float, float]] = []  # (actual start, cost)
    for cost, idle, lateness in steps:
        now += idle
        while True:  # a rebooked slot is kept on time; only the first wake-up is late
            booking, updates = book(tats, now, [Limit("k", params)], cost)
            assert isinstance(booking, Slot)
            tats.update(updates)
            now = max(now, booking.start + lateness)
            lateness = 0.0
            if not booking.is_missed(now):
                started.append((now, cost))
                break
    for (first, cost), (second, _) in itertools.pairwise(started):
        assert second - first >= cost * interval - width - 1e-9


def test_a_late_charge_moves_the_clock_on_from_now_or_its_tat_never_back() -> None:
    from courtier.politeness.gcra import charge_after

    limit = Limit("origin:o", KeyParams(interval=0.5))
    assert charge_after({}, 10.0, limit, 2.0) == 11.0  # idle key: from now
    assert charge_after({"origin:o": 12.0}, 10.0, limit, 2.0) == 13.0  # busy key: from its TAT
