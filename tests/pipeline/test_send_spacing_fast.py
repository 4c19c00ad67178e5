"""Shared keys without burst are spaced from real sends (``send_spacing``)."""

from __future__ import annotations

from courtier.pipeline.send_spacing import UNSENT_RECHECK, SendSpacing
from courtier.politeness.keys import LimitPolicy

KEYS = ("site:a.test", "origin:shared", "cdn:edge.test")


def _spacing() -> SendSpacing:
    return SendSpacing(LimitPolicy().params_of)


def test_only_shared_keys_without_burst_are_watched() -> None:
    watched = [key for key, _params in _spacing().watched([*KEYS, "cdn-miss:edge/a", "bad"])]
    assert watched == ["origin:shared", "cdn-miss:edge/a"]  # site: own rule; cdn: a burst


def test_the_next_start_waits_for_the_last_send_plus_its_charge() -> None:
    spacing = _spacing()
    assert spacing.hold_until(KEYS, 100.0) == 100.0
    spacing.launched(KEYS)
    # Launched, not out yet: whatever follows on the origin looks again shortly.
    assert spacing.hold_until(KEYS, 100.0) == 100.0 + UNSENT_RECHECK
    spacing.sent(KEYS, 2.0, 100.3)  # out 0.3 s late; 2 units at 2 units/s
    assert spacing.hold_until(KEYS, 100.5) == 101.3
    assert spacing.hold_until(["origin:other"], 100.5) == 100.5


def test_a_request_that_never_went_out_frees_its_keys() -> None:
    spacing = _spacing()
    spacing.launched(KEYS)
    spacing.not_sent(KEYS)
    assert spacing.hold_until(KEYS, 5.0) == 5.0


def test_a_page_slot_is_all_spaced_and_a_media_slot_with_a_burst_key_is_not() -> None:
    spacing = _spacing()
    assert spacing.all_spaced(["site:a.test", "origin:shared"])
    assert not spacing.all_spaced(["cdn:edge.test", "cdn-miss:edge/a", "origin:shared"])
