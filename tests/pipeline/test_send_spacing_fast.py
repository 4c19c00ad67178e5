"""Shared keys without burst are spaced from real sends (``send_spacing``)."""

from __future__ import annotations

from courtier.pipeline.scheduling.clocks import KeyClocks
from courtier.pipeline.scheduling.send_spacing import UNSENT_RECHECK, SendSpacing
from courtier.politeness.keys import LimitPolicy
from courtier.politeness.limiter import MemoryLimiter, SqliteLimiter

KEYS = ("site:a.test", "origin:shared", "cdn:edge.test")


def _spacing() -> SendSpacing:
    return SendSpacing(KeyClocks(MemoryLimiter(), LimitPolicy()))


def test_site_keys_and_shared_keys_without_burst_are_watched() -> None:
    watched = [key for key, _params in _spacing().watched([*KEYS, "cdn-miss:edge/a", "bad"])]
    assert watched == ["site:a.test", "origin:shared", "cdn-miss:edge/a"]  # cdn: a burst


def test_a_sites_next_start_waits_its_own_spacing_after_anyones_send_there() -> None:
    """A robots.txt hop onto a site and the site's own lane book one ``site:`` key: whichever
    goes second waits the site's spacing (its lane's interval) after the other really went."""
    spacing = _spacing()
    spacing.site_interval = lambda site: 2.5 if site == "a.test" else None
    spacing.margin = 0.02
    spacing.sent(["site:a.test"], 4.0, 100.3, launched=False)  # a hop, 0.3 s into its slot
    spacing.sent(["site:b.test"], 1.0, 100.0, launched=False)
    assert spacing.hold_until(["site:a.test", "origin:shared"], 101.0) == 102.8
    assert spacing.hold_until(["site:b.test"], 100.5) == 101.02  # configured 1/s + margin


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


async def test_workers_on_one_sqlite_limiter_see_each_others_real_sends(tmp_path) -> None:
    """Two processes' limiters on one file: what one worker's late send demands is what
    the other's next start on that key waits for, once it has read it."""
    clock = lambda: 100.0  # noqa: E731
    one = SqliteLimiter(tmp_path / "limiter.sqlite3", clock=clock)
    two = SqliteLimiter(tmp_path / "limiter.sqlite3", clock=clock)
    try:
        first = SendSpacing(KeyClocks(one, LimitPolicy()))
        second = SendSpacing(KeyClocks(two, LimitPolicy()))
        assert second.needs_refresh(KEYS) and not second.needs_refresh(["site:a.test"])
        first.launched(KEYS)
        first.sent(KEYS, 2.0, 100.3)  # 2 units at 2 units/s: the origin is ready at 101.3
        await first._clocks.flush_sent()
        assert second.hold_until(KEYS, 100.5) == 100.5  # not read yet
        await second.refresh(KEYS)
        assert second.hold_until(KEYS, 100.5) == 101.3
        assert second.hold_until(["origin:other"], 100.5) == 100.5
        # An older send read later never brings the ready time back.
        second.sent(KEYS, 1.0, 99.0)
        await second._clocks.flush_sent()
        await first.refresh(KEYS)
        assert first.hold_until(KEYS, 100.5) == 101.3
    finally:
        await one.close()
        await two.close()


async def test_a_key_only_this_worker_sends_on_is_not_read_before_a_start(tmp_path) -> None:
    """In a fleet, the origin of a site alone on it and the site's own key, held here:
    nobody else books there, so a start reads nothing first; a key another worker may send
    on still is read."""
    clock = lambda: 100.0  # noqa: E731
    one = SqliteLimiter(tmp_path / "limiter.sqlite3", clock=clock)
    try:
        spacing = SendSpacing(KeyClocks(one, LimitPolicy()))
        spacing.private = lambda key: key in ("origin:site:a.test", "site:a.test")
        alone = ("site:a.test", "origin:site:a.test")
        assert not spacing.needs_refresh(alone)
        assert spacing.needs_refresh([*alone, "origin:shared"])
        asked: list[list[str]] = []

        async def refresh_sent(keys) -> None:  # type: ignore[no-untyped-def]
            asked.append(list(keys))

        spacing._clocks.refresh_sent = refresh_sent  # type: ignore[method-assign]
        await spacing.refresh([*alone, "origin:shared"])
        assert asked == [["origin:shared"]]
    finally:
        await one.close()
