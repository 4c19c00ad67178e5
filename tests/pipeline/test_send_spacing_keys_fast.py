"""Send spacing on keys of hand-made parameters (a stand-in for the clocks): what a send on
each kind of key holds back, launches that have not gone out yet, and which sends are noted
in a hurry (``scheduling.send_spacing``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from courtier.pipeline.scheduling.send_spacing import UNSENT_RECHECK, SendSpacing
from courtier.politeness.gcra import KeyParams

PARAMS = {
    "origin:o": KeyParams(2.0),  # weighted, no burst: spaced by cost x interval
    "cdn-miss:e/a": KeyParams(0.5, weighted=False),  # one interval whatever the cost
    "cdn:e": KeyParams(1.0, burst=5.0),  # a burst: not spaced from sends
    "site:a.test": KeyParams(4.0),
}


class Policy:
    def __init__(self, params: Mapping[str, KeyParams]) -> None:
        self.params = dict(params)

    def params_of(self, key: str) -> KeyParams:
        if key not in self.params:
            raise ValueError(key)
        return self.params[key]


class Clocks:
    """What ``SendSpacing`` reads of ``KeyClocks``: the policy, the sends noted, sharing."""

    def __init__(self, shared: bool = False) -> None:
        self.policy = Policy(PARAMS)
        self.sends_shared = shared
        self.ready: dict[str, float] = {}
        self.noted: list[tuple[dict[str, float], bool]] = []

    def sent_ready(self, key: str) -> float | None:
        return self.ready.get(key)

    def note_sent(self, ready: Mapping[str, float], *, urgent: bool = True) -> None:
        self.noted.append((dict(ready), urgent))
        self.ready.update(ready)

    async def refresh_sent(self, keys: Iterable[str]) -> None:
        list(keys)


def spacing(shared: bool = False) -> tuple[Clocks, SendSpacing]:
    clocks = Clocks(shared)
    return clocks, SendSpacing(clocks)  # type: ignore[arg-type]


def test_a_weighted_key_waits_cost_intervals_and_an_unweighted_one_interval() -> None:
    clocks, spaced = spacing()
    spaced.sent(["origin:o", "cdn-miss:e/a", "cdn:e"], 3.0, 100.0, launched=False)
    assert clocks.ready == {"origin:o": 106.0, "cdn-miss:e/a": 100.5}
    assert spaced.hold_until(["origin:o"], 101.0) == 106.0
    assert spaced.hold_until(["cdn-miss:e/a", "cdn:e"], 101.0) == 101.0


def test_a_site_key_waits_the_spacing_it_was_booked_at_else_the_configured_one() -> None:
    clocks, spaced = spacing()
    spaced.sent(["site:a.test"], 1.0, 100.0, launched=False, spacing={"site:a.test": 1.5})
    assert clocks.ready == {"site:a.test": 101.5}
    spaced.margin = 0.25
    spaced.sent(["site:a.test"], 1.0, 200.0, launched=False, spacing={"site:b.test": 9.0})
    assert clocks.ready == {"site:a.test": 204.25}  # the configured 4 s and the margin
    assert spaced.site_spacing("a.test") == 4.25


def test_a_start_waits_while_an_earlier_launch_on_its_key_is_unsent() -> None:
    _, spaced = spacing()
    spaced.launched(["origin:o"])
    spaced.launched(["origin:o"])
    assert spaced.hold_until(["origin:o"], 10.0) == 10.0 + UNSENT_RECHECK
    spaced.not_sent(["origin:o"])  # one gave up: the other may still go out
    assert spaced.hold_until(["origin:o"], 10.0) == 10.0 + UNSENT_RECHECK
    spaced.sent(["origin:o"], 1.0, 10.0)
    assert spaced.hold_until(["origin:o"], 10.0) == 12.0  # its charge, no unsent left
    assert spaced.hold_until(["origin:o"], 13.0) == 13.0
    for _ in range(3):
        spaced.launched(["origin:o"])
    spaced.sent(["origin:o"], 1.0, 14.0)
    spaced.sent(["origin:o"], 1.0, 14.0)
    assert spaced.hold_until(["origin:o"], 17.0) == 17.0 + UNSENT_RECHECK  # one still out
    spaced.sent(["origin:o"], 1.0, 14.0)
    assert spaced.hold_until(["origin:o"], 17.0) == 17.0
    spaced.launched(["origin:o"])
    spaced.sent(["origin:o"], 1.0, 20.0)
    assert spaced.hold_until(["origin:o"], 21.0) == 22.0


def test_a_send_on_a_key_others_share_is_noted_in_a_hurry() -> None:
    clocks, spaced = spacing()
    spaced.private = lambda key: key.startswith("site:")
    spaced.sent(["site:a.test"], 1.0, 10.0, launched=False)
    spaced.sent(["site:a.test", "origin:o"], 1.0, 20.0, launched=False)
    spaced.sent(["origin:o", "site:a.test"], 1.0, 30.0, launched=False)
    spaced.sent(["cdn:e"], 1.0, 40.0, launched=False)  # nothing watched: nothing noted
    assert [urgent for _ready, urgent in clocks.noted] == [False, True, True]


def test_other_workers_sends_are_read_only_where_sends_are_shared() -> None:
    _, alone = spacing(shared=False)
    assert not alone.needs_refresh(["origin:o", "site:a.test"])
    _, fleet = spacing(shared=True)
    assert fleet.needs_refresh(["origin:o"])
    assert not fleet.needs_refresh(["site:a.test", "cdn:e"])  # its own site; a burst key


def test_a_key_whose_budget_an_operator_changed_is_judged_again() -> None:
    clocks, spaced = spacing()
    assert [key for key, _ in spaced.watched(["origin:o"])] == ["origin:o"]
    clocks.policy = Policy({**PARAMS, "origin:o": KeyParams(2.0, burst=4.0)})
    assert spaced.watched(["origin:o"]) == []
    assert not spaced.all_spaced(["origin:o", "site:a.test"])
