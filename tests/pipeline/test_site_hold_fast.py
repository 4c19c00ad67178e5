"""An operator's pause on fake time: nothing of a held lane starts, a slot booked before the
pause is given up, and lifting it (or its end) lets the lane start again."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

from lane_harness import Lanes, allow_all

from courtier.config import load
from courtier.frontier.base import LeasedUrl
from courtier.pipeline.scheduling.lanes import Phase

FAST = ["limits.origin.rate=1000", "limits.site.rate=1"]


async def test_a_held_lane_starts_nothing_until_the_hold_is_lifted(tmp_path: Path) -> None:
    h = Lanes(load(None, FAST), tmp_path, allow_all)
    h.start()
    try:
        site = h.site("a.test", [f"/p{n}" for n in range(20)])
        h.pages.arm(site)
        await h.timer.advance(2.5)
        before = len(h.starts("a.test", robots=True))
        assert before == 3
        assert site.sched.phase is Phase.BOOKED or site.sched.phase is Phase.WAITING
        paused_at = h.timer.now()
        h.pages.hold(site, math.inf)
        await h.timer.advance(30.0)
        assert len(h.starts("a.test", robots=True)) == before
        h.pages.hold(site, 0.0)
        await h.timer.advance(3.0)
        after = [t for t in h.starts("a.test", robots=True) if t > paused_at]
        assert len(after) >= 2 and after[0] >= paused_at + 30.0
    finally:
        await h.close()


async def test_a_hold_with_an_end_lifts_itself(tmp_path: Path) -> None:
    h = Lanes(load(None, FAST), tmp_path, allow_all)
    h.start()
    try:
        site = h.site("a.test", [f"/p{n}" for n in range(20)])
        began = h.timer.now()
        h.pages.hold(site, began + 10.0)  # paused before it ever started
        h.pages.arm(site)
        await h.timer.advance(9.9)
        assert h.starts("a.test", robots=True) == []
        await h.timer.advance(2.5)
        starts = h.starts("a.test", robots=True)
        assert len(starts) >= 2 and starts[0] >= began + 10.0
    finally:
        await h.close()


async def test_a_slot_booked_before_the_pause_is_given_up(tmp_path: Path) -> None:
    h = Lanes(load(None, FAST), tmp_path, allow_all)
    h.start()
    try:
        site = h.site("a.test", ["/p"])
        h.limiter.raise_floor_now({"site:a.test": h.timer.now() + 1.0})  # booked a second out
        h.pages.arm(site)
        await h.timer.advance(0.0)
        assert site.sched.phase is Phase.BOOKED
        h.pages.hold(site, math.inf)
        await h.timer.advance(5.0)
        assert h.starts("a.test", robots=True) == []
        assert site.sched.phase is Phase.WAITING and site.sched.timer is None
    finally:
        await h.close()


class Feeding:
    """The feeder as far as the controls see it: its priority path."""

    def __init__(self, lease_urgent: object) -> None:
        self.lease_urgent = lease_urgent


class PinnedOrigins:
    """Live origins as far as the controls see them: who asks to be placed again."""

    def __init__(self) -> None:
        self.repinned: list[str] = []
        self.manual: object = None

    async def repin(self, lane: object) -> None:
        self.repinned.append(lane.site)  # type: ignore[attr-defined]


async def test_the_stores_controls_reach_the_lanes_and_run_out_on_their_own(
    tmp_path: Path,
) -> None:
    """``Controls.poll`` on fake time: a pause and a rate read from the store's log reach the
    lane; a rate with an end returns to the configured interval once it has passed; a drop
    with opt-out takes the lane away and the host joins the refused."""
    from courtier.frontier.controls import ControlAction, SiteControl
    from courtier.pipeline.lanes.controls import Controls

    h = Lanes(load(None, FAST), tmp_path, allow_all)
    h.start()
    try:
        store = h.frontier.store
        controls = Controls(h.config, h.frontier, h.seed, h.timer, h.stats)
        await h.frontier.call(controls.load)
        origins = PinnedOrigins()
        controls.wire(h.pages, Feeding(h.site_lanes.look_again), origins)  # type: ignore[arg-type]
        a = h.site("a.test", ["/p"])
        b = h.site("b.test", ["/p"])
        now = h.timer.now()

        def act(action: str, control: SiteControl, states: dict[str, str] | None = None) -> None:
            store.record_control(
                ControlAction(action, control.site, {}, "test", "me", now), control, states
            )

        act("site pause", SiteControl("a.test").paused_at(now, None, "asked"))
        act("site limit", SiteControl("b.test").limited_at(now, 0.25, now + 30.0))
        await controls.poll()
        assert a.sched.held_until == math.inf
        assert b.base_interval == 4.0 and b.interval >= 4.0
        await h.timer.advance(31.0)
        await controls.poll()  # no new action: the rate ran out on its own
        assert b.base_interval is None and b.interval < 2.0
        act("site drop", SiteControl("a.test", opted_out=True), {"a.test": "opted-out"})
        await controls.poll()
        assert "a.test" not in h.seed.lanes and "a.test" not in h.seed.scope
        assert "a.test" in h.seed.opted_out and h.seed.admit("a.test") is None
        act("origins pin", SiteControl("b.test").pinned_at(now, "pin:shared"))
        await controls.poll()
        assert origins.manual("b.test") == "pin:shared" and origins.repinned == ["b.test"]
        assert h.stats.control_actions == 4
    finally:
        await h.close()


async def test_a_fleets_site_that_moved_origin_books_its_old_one_too_for_a_while(
    tmp_path: Path,
) -> None:
    h = Lanes(load(None, FAST), tmp_path, allow_all)
    h.start()
    try:
        site = h.site("a.test", ["/p"], origin="addr:1")
        site.moved(h.timer.now() + 8.0)
        site.origin = "hdr:platform"
        keys = [limit.key for limit in h.site_lanes.booking(site, site.queue[0])[0]]
        assert keys == ["site:a.test", "origin:hdr:platform", "origin:addr:1"]
        await h.timer.advance(8.5)
        keys = [limit.key for limit in h.site_lanes.booking(site, site.queue[0])[0]]
        assert keys == ["site:a.test", "origin:hdr:platform"]
    finally:
        await h.close()


async def test_an_origins_budget_of_the_operators_slows_every_site_on_it(tmp_path: Path) -> None:
    """``origins limit`` on fake time: read from the store's log, the origin's key takes the
    operator's rate at once (lanes booked at the old spacing book again), its sites together
    stay within it, another origin is left alone, and ``--clear`` gives the configured one
    back."""
    from courtier.frontier.controls import ControlAction, OriginControl
    from courtier.pipeline.lanes.controls import Controls

    h = Lanes(load(None, FAST), tmp_path, allow_all)
    h.start()
    try:
        store = h.frontier.store
        controls = Controls(h.config, h.frontier, h.seed, h.timer, h.stats, h.clocks)
        await h.frontier.call(controls.load)
        controls.wire(h.pages, Feeding(h.site_lanes.look_again), PinnedOrigins())  # type: ignore[arg-type]
        paths = [f"/p{n}" for n in range(60)]
        pair = [h.site(name, paths, origin="pin:pair") for name in ("a.test", "b.test")]
        other = h.site("c.test", paths, origin="addr:2")
        for lane in [*pair, other]:
            h.pages.arm(lane)
        await h.timer.advance(3.0)
        assert len(h.starts("a.test")) >= 2  # 1 request/s per site: the origin is far off

        def limit(rate: float | None) -> None:
            now = h.timer.now()
            control = OriginControl("pin:pair").limited_at(now, rate, None, None, "asked")
            action = ControlAction("origins limit", "pin:pair", {}, "test", "me", now)
            store.record_control(action, control)

        limit(0.5)
        await controls.poll()
        acted = h.timer.now()
        assert h.clocks.policy.params_of("origin:pin:pair").interval == 2.0
        assert h.feedback.origin_limit("pin:pair").params.interval == 2.0
        await h.timer.advance(40.0)
        cost = h.config.costs.model().cost_of_target("/p1")
        after = sorted(t for name in ("a.test", "b.test") for t in h.starts(name) if t > acted)
        assert 1 <= len(after) <= 0.5 * 40.0 / cost + 1, after
        # Slots booked at the old spacing were given up: none starts close to another.
        slack = h.config.limits.origin.slot_width
        assert all(b - a >= cost / 0.5 - slack for a, b in itertools.pairwise(after)), after
        assert len([t for t in h.starts("c.test") if t > acted]) >= 30  # its own origin
        limit(None)
        await controls.poll()
        assert h.clocks.policy.params_of("origin:pin:pair").interval == 1 / 1000
        assert h.stats.control_actions == 2
    finally:
        await h.close()


def test_the_operators_origin_budgets_over_the_configured_policy() -> None:
    from courtier.frontier.controls import OriginControl
    from courtier.pipeline.lanes.controls import operator_policy

    config = load(None, ["limits.overrides=['origin:pin:x => rate=4 burst=3']"])
    base = config.limits.policy()
    now = 1000.0
    controls = {
        "pin:x": OriginControl("pin:x").limited_at(now, 0.5, None, now + 60.0, ""),
        "addr:1": OriginControl("addr:1").limited_at(now, 0.25, 2.0, None, ""),
        "addr:2": OriginControl("addr:2").limited_at(now, None, None, None, ""),
    }
    policy = operator_policy(base, controls, now)
    assert policy.params_of("origin:pin:x").interval == 2.0
    assert policy.params_of("origin:pin:x").burst == 3.0  # the configured override's
    assert policy.params_of("origin:addr:1").burst == 2.0
    assert policy.params_of("origin:addr:2") == base.params_of("origin:addr:2")
    later = operator_policy(base, controls, now + 61.0)  # pin:x's ran out
    assert later.params_of("origin:pin:x").interval == 0.25
    assert operator_policy(base, {}, now) is base


async def test_a_sites_render_controls_reach_the_render_lane_at_the_next_poll(
    tmp_path: Path,
) -> None:
    from courtier.frontier.controls import ControlAction, SiteControl
    from courtier.pipeline.lanes.controls import Controls
    from courtier.render.decision import RenderMode

    h = Lanes(load(None, FAST), tmp_path, allow_all)
    h.start()
    try:
        store = h.frontier.store
        controls = Controls(h.config, h.frontier, h.seed, h.timer, h.stats)
        await h.frontier.call(controls.load)
        rendering = h.site_lanes.rendering
        controls.wire(h.pages, Feeding(h.site_lanes.look_again), PinnedOrigins(), rendering)  # type: ignore[arg-type]
        h.site("a.test", ["/p"])
        assert rendering.operator("a.test") is None
        now = h.timer.now()
        control = SiteControl("a.test").rendering(now, "always", None).rendering(now, "never", "/x")
        store.record_control(ControlAction("site render", "a.test", {}, "t", "me", now), control)
        await controls.poll()
        own = rendering.operator("a.test")
        assert own is not None and own.mode is RenderMode.ALWAYS
        assert (
            rendering.rules.decide(
                "a.test", "http://a.test/x/1", "shell", available=True, operator=own
            )
            is None
        )  # never, by the operator's rule
        assert rendering.operator("a.test") is own  # compiled once per change
        cleared = control.rendering(now, None, None)
        store.record_control(ControlAction("site render", "a.test", {}, "t", "me", now), cleared)
        await controls.poll()
        assert rendering.operator("a.test") is None
    finally:
        await h.close()


async def test_a_site_paused_in_the_store_is_held_when_the_crawl_starts_again(
    tmp_path: Path,
) -> None:
    """A pause taken while a crawl ran is in the store: the next crawl on that store holds the
    site from its first moment (no robots.txt, no page) until the pause ends or for good, for
    a lane made at the start, one that comes with a shard and one admitted while it runs."""
    from courtier.frontier.controls import ControlAction, SiteControl
    from courtier.pipeline.lanes.controls import Controls
    from courtier.pipeline.lanes.site import OriginStatus
    from courtier.politeness.limiter.base import Fence

    first = Lanes(load(None, FAST), tmp_path, allow_all)
    try:
        store = first.frontier.store
        now = first.timer.now()
        until = {"a.test": None, "b.test": now + 10.0, "shard.test": None, "late.test": None}
        for site, end in until.items():
            control = SiteControl(site).paused_at(now, end, "asked")
            action = ControlAction("site pause", site, {}, "test", "me", now)
            store.record_control(action, control)
    finally:
        await first.close()

    h = Lanes(load(None, FAST), tmp_path, allow_all)  # the restart, on the same store
    h.start()
    try:
        controls = Controls(h.config, h.frontier, h.seed, h.timer, h.stats)
        await h.frontier.call(controls.load)
        controls.wire(h.pages, Feeding(h.site_lanes.look_again), PinnedOrigins())  # type: ignore[arg-type]
        h.seed.start(["a.test", "b.test", "c.test"], [], {})
        lanes = [*h.seed.take(["shard.test"], Fence(0, "w", 2), {}), h.seed.admit("late.test")]
        lanes += [h.sites[site] for site in ("a.test", "b.test", "c.test")]
        for lane in lanes:
            assert lane is not None
            lane.origin_status = OriginStatus.RESOLVED
            lane.store_empty = True
            lane.queue.extend(LeasedUrl(n, f"http://{lane.site}/p{n}", lane.site, 1, 0)
                              for n in range(20))  # fmt: skip
            h.pages.arm(lane)
        began = h.timer.now()
        await h.timer.advance(9.5)
        assert len(h.starts("c.test", robots=True)) >= 5  # not paused: crawled meanwhile
        for site in until:
            assert h.starts(site, robots=True) == [], site
        await h.timer.advance(3.0)
        resumed = h.starts("b.test", robots=True)
        assert resumed and resumed[0] >= began + 10.0  # its pause ran out: it starts
        for site in ("a.test", "shard.test", "late.test"):
            assert h.starts(site, robots=True) == [], site
    finally:
        await h.close()
