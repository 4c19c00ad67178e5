"""The start gate: a token bucket of bookings, on the caller's clock."""

import pytest

from courtier.pipeline.scheduling.start_gate import StartGate


def test_a_burst_passes_at_once_then_one_token_per_interval():
    gate = StartGate(rate=10, burst=3)
    assert [gate.take(0.0) for _ in range(4)] == [True, True, True, False]
    reopens = gate.next_at(0.0)
    assert reopens == pytest.approx(0.1)
    assert not gate.open(0.05)
    assert gate.open(reopens) and gate.take(reopens) and not gate.take(reopens)


def test_a_timer_set_for_the_reopening_finds_it_open_at_any_clock_value():
    # Token counts rounded at a large clock value left a refill timer a hair short, and it
    # was set again for the same instant, for ever.
    for start in (0.0, 1e6, 3.7e8):
        gate = StartGate(rate=1000, burst=20)
        now, taken = start, 0
        while taken < 300:
            if gate.take(now):
                taken += 1
                continue
            later = gate.next_at(now)
            assert later > now
            now = later
        assert now - start == pytest.approx(280 / 1000, abs=1e-4)


def test_tokens_never_pile_up_beyond_the_burst():
    gate = StartGate(rate=10, burst=2)
    assert gate.take(0.0)
    assert sum(gate.take(100.0) for _ in range(5)) == 2


def test_a_clock_that_steps_back_neither_adds_nor_loses_tokens():
    gate = StartGate(rate=10, burst=2)
    gate.take(5.0)
    gate.take(5.0)
    assert not gate.take(4.0)
    assert gate.next_at(5.0) == pytest.approx(5.1)


def test_rate_zero_is_no_gate_and_nonsense_is_refused():
    gate = StartGate(rate=0, burst=1)
    assert all(gate.take(0.0) for _ in range(1000)) and gate.next_at(3.0) == 3.0
    assert gate.take(-5.0)
    for rate, burst in ((-1, 1), (1, 0), (float("inf"), 1), (float("nan"), 1)):
        with pytest.raises(ValueError) as refused:
            StartGate(rate=rate, burst=burst)
        assert str(refused.value) == "a start gate needs a finite rate >= 0 and burst >= 1"


def test_a_gate_of_one_start_a_second_reopens_a_second_after_its_burst():
    gate = StartGate(rate=1, burst=2)
    assert (gate.rate, gate.burst) == (1, 2)
    assert gate.take(10.0) and gate.take(10.0) and not gate.take(10.0)
    assert gate.next_at(10.0) == pytest.approx(11.0)
