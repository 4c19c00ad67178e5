"""Origin moves on fake time, judged as the servers see them: whatever kind of move (a site
split off a shared group onto an origin of its own, sites grouped, a site joining an origin
that has bookings, an operator's pin and its lifting, a fleet worker that learns the split
later, a move while the lane's booking is out), the first request after it, robots.txt
included, starts no sooner than the site's interval after the one before, whoever sent that
one, and within the budget of the origin it reaches."""

from __future__ import annotations

import itertools
from pathlib import Path

from lane_harness import FleetLimiter, allow_all
from move_harness import Moves, RoundTripLimiter

from courtier.pipeline.scheduling.lanes import Phase
from courtier.pipeline.scheduling.timer import FakeTimer
from courtier.politeness.limiter.memory import MemoryLimiter

EDGE = "cname:edge.test"
"""A shared name whose first answers have not told a CDN edge from a platform yet."""


def robots_redirect(source: str, target: str):
    """A web whose ``source`` robots.txt redirects to ``target`` (a URL on a seed site)."""

    def script(url: str) -> tuple[int, list[tuple[str, str]], bytes]:
        if url == f"http://{source}/robots.txt":
            return 301, [("Location", target)], b""
        if url == target:
            return 200, [("Content-Type", "text/plain")], b"User-agent: *\nAllow: /\n"
        return allow_all(url)

    return script


async def test_a_site_split_off_its_group_starts_an_interval_after_a_hop_held_on_the_group(
    tmp_path: Path,
) -> None:
    """t.test's robots.txt went out; another site's robots.txt redirects into t.test, a hop
    booked on t.test's key and its group's, and held there behind the group's late sends.
    t.test is split off onto an origin of its own: its next request books on its new keys
    at once, behind the hop's slot, and must start an interval after the hop really went."""
    m = Moves(tmp_path, script=robots_redirect("b.test", "http://t.test/robots-copy.txt"))
    try:
        t = m.site("t.test", ["/", "/a"], EDGE, provisional=True)
        m.arm(t)
        await m.timer.advance(0.1)  # t.test's robots.txt is out
        crowd = [m.site(f"s{n}.test", ["/"], EDGE, provisional=True) for n in range(5)]
        for lane in crowd:
            m.h.fetcher.send_delays[f"http://{lane.host}/robots.txt"] = 0.6  # slow connects
        m.arm(*crowd)
        b = m.site("b.test", ["/"], "site:b.test")
        m.arm(b)
        await m.timer.advance(1.1)
        await m.move({"t.test": "site:t.test"})
        await m.timer.advance(10.0)
        urls = [u for _t, u in m.sends(["t.test"])]
        assert urls[0] == "http://t.test/robots.txt" and len(urls) == 4
        assert "http://t.test/robots-copy.txt" in urls
        m.assert_site_spaced(t)
        m.assert_within_budget(["t.test"], "site:t.test")
    finally:
        await m.close()


async def test_a_site_split_off_while_its_robots_txt_is_out_spaces_its_home_page_from_it(
    tmp_path: Path,
) -> None:
    """t.test's robots.txt goes out late in its slot (a slow connect) and t.test is split off
    its group onto an origin of its own before the answer is in: its home page, booked on its
    new keys, starts an interval after the robots.txt really went out."""
    m = Moves(tmp_path)
    try:
        crowd = [m.site(f"s{n}.test", ["/"], EDGE, provisional=True) for n in range(4)]
        t = m.site("t.test", ["/", "/a"], EDGE, provisional=True)
        m.h.fetcher.send_delays["http://t.test/robots.txt"] = 0.2
        m.h.fetcher.delays["http://t.test/robots.txt"] = 0.5
        m.arm(t, *crowd)
        await m.timer.advance(0.1)  # t.test's robots.txt started, its headers not out yet
        await m.move({"t.test": "site:t.test"})
        await m.timer.advance(8.0)
        assert len(m.sends(["t.test"])) == 3
        m.assert_site_spaced(t)
        m.assert_within_budget(["t.test"], "site:t.test")
    finally:
        await m.close()


async def test_sites_moving_together_into_a_group_keep_their_spacing_and_its_budget(
    tmp_path: Path,
) -> None:
    """A platform's tenants, booked ahead on the name DNS gave them, are regrouped by their
    headers: the new key takes the old clock whole, their slots still to start on the old
    key start as booked, and the platform's server sees one budget throughout."""
    m = Moves(tmp_path)
    try:
        paths = ["/", "/a", "/b", "/c"]
        tenants = [m.site(f"t{n}.test", paths, "addr:10.0.0.5") for n in range(4)]
        m.arm(*tenants)
        await m.timer.advance(3.3)  # robots.txt of each, pages booked ahead on the old key
        assert any(t.sched.slot is not None for t in tenants)
        await m.move({t.host: "hdr:plinth" for t in tenants})
        await m.timer.advance(25.0)
        hosts = [t.host for t in tenants]
        assert len(m.sends(hosts)) == 4 * 5
        for lane in tenants:
            m.assert_site_spaced(lane)
        m.assert_within_budget(hosts, "hdr:plinth")
    finally:
        await m.close()


async def test_a_site_joining_an_origin_that_has_bookings_keeps_its_budget(
    tmp_path: Path,
) -> None:
    """x.test, alone on its own origin with a slot booked, is found to be a tenant of a
    platform whose tenants have booked its key seconds ahead: the platform's server never
    gets x.test's request beside one of theirs, and x.test keeps its own spacing. (Sites
    allowed 10 requests/s: the origins' budgets are what books them ahead.)"""
    m = Moves(tmp_path, "limits.site.rate=10")
    try:
        paths = [f"/p{n}" for n in range(6)]
        tenants = [m.site(f"t{n}.test", paths, "hdr:plinth") for n in range(3)]
        x = m.site("x.test", paths, "site:x.test")
        m.arm(*tenants, x)
        await m.timer.advance(1.1)  # x.test's first page is booked on its own origin
        assert x.sched.slot is not None and x.sched.slot.start > m.timer.now()
        moved = m.timer.now()
        await m.move({"x.test": "hdr:plinth"})
        await m.timer.advance(30.0)
        m.assert_site_spaced(x)
        m.assert_within_budget(["x.test", *(t.host for t in tenants)], "hdr:plinth", moved)
    finally:
        await m.close()


async def test_a_site_joining_a_busy_origin_brings_its_first_request_along(
    tmp_path: Path,
) -> None:
    """x.test sent its robots.txt on an origin of its own, then is found to be a tenant of a
    platform whose tenants keep its budget busy: that robots.txt went to the platform's
    servers, whose clock never saw it, so the platform's clock is charged for it on top of
    its own bookings (a busy platform would otherwise get its budget and that request too)."""
    m = Moves(tmp_path, "limits.site.rate=10")
    try:
        paths = ["/", *(f"/list/{n}" for n in range(1, 9))]
        tenants = [m.site(f"t{n}.test", paths, "hdr:plinth") for n in range(3)]
        m.arm(*tenants)
        await m.timer.advance(0.6)  # the platform's budget is busy
        x = m.site("x.test", paths, "site:x.test")
        m.arm(x)
        await m.timer.advance(0.3)  # x.test's robots.txt went out, on its own origin
        assert [u for _, u in m.sends(["x.test"])] == ["http://x.test/robots.txt"]
        key = "origin:hdr:plinth"
        before = (await m.h.limiter.tats([key]))[key]
        await m.move({"x.test": "hdr:plinth"})
        after = (await m.h.limiter.tats([key]))[key]
        robots = 1.0 * m.h.feedback.origin_interval("hdr:plinth")
        assert after >= max(before, m.timer.now()) + robots - 1e-9
        await m.timer.advance(20.0)
        m.assert_site_spaced(x)
        m.assert_within_budget(["x.test", *(t.host for t in tenants)], "hdr:plinth", after)
    finally:
        await m.close()


async def test_an_operators_pin_and_its_lifting_keep_the_sites_spacing_and_each_budget(
    tmp_path: Path,
) -> None:
    """x.test, on an origin of its own with a slot booked, is pinned onto a platform's origin
    whose tenants have booked it ahead, then given back to inference: while pinned, the
    platform's server never gets x.test's request beside one of theirs; back on its own key,
    its first request waits what its last one there spent."""
    m = Moves(tmp_path, "limits.site.rate=10")
    try:
        tenants = [m.site(f"t{n}.test", ["/p0", "/p1"], "pin:plat") for n in range(3)]
        x = m.site("x.test", [f"/p{n}" for n in range(20)], "site:x.test")
        m.arm(*tenants, x)
        await m.timer.advance(1.1)
        assert x.sched.slot is not None and x.sched.slot.start > m.timer.now()
        pinned = m.timer.now()
        await m.pin(x, "pin:plat")
        assert x.origin == "pin:plat"
        await m.timer.advance(10.0)
        lifted = m.timer.now()
        per_unit = m.h.feedback.origin_interval("site:x.test")
        when, url = m.sends(["x.test"])[-1]
        spent = [when + m.cost(url) * per_unit]
        if x.sched.slot is not None:
            spent.append(x.sched.slot.start + x.sched.slot.cost * per_unit)
        await m.pin(x, None)
        assert x.origin == "site:x.test"
        clock = await m.h.limiter.tats(["origin:site:x.test"])
        assert clock["origin:site:x.test"] >= max(spent) - 1e-9  # what it spent, carried
        await m.timer.advance(5.0)
        m.assert_site_spaced(x)
        hosts = ["x.test", *(t.host for t in tenants)]
        m.assert_within_budget(hosts, "pin:plat", pinned, lifted)
        mine = [t for t, _url in m.sends(["x.test"])]
        assert sum(pinned <= t < lifted for t in mine) >= 3 and mine[-1] > lifted
        last = max(t for t in mine if t < lifted)
        m.assert_within_budget(["x.test"], "site:x.test", last)
    finally:
        await m.close()


async def test_a_pin_wins_over_a_later_inference(tmp_path: Path) -> None:
    """An operator placed x.test on the platform's origin: a re-clustering that places it
    elsewhere leaves it there, its requests booked on the pinned origin."""
    m = Moves(tmp_path)
    try:
        x = m.site("x.test", ["/", "/a", "/b"], "site:x.test")
        m.arm(x)
        await m.timer.advance(0.5)
        await m.pin(x, "pin:plat")
        await m.move({"x.test": "hdr:elsewhere"})
        assert x.origin == "pin:plat"
        await m.timer.advance(6.0)
        later = [e.context.keys for e in m.h.events if e.context.site == "x.test"][1:]
        assert len(later) == 3
        assert all(keys == ("site:x.test", "origin:pin:plat") for keys in later), later
    finally:
        await m.close()


async def test_a_site_split_off_alone_carries_its_booked_slot_into_its_new_clock(
    tmp_path: Path,
) -> None:
    """x.test's home page (4 units) is booked on its group's key, not started yet, when it is
    split off onto an origin of its own: the new key's clock holds that slot at its cost, so
    nothing of x.test is booked there before the home page has had its share of the budget."""
    m = Moves(tmp_path, "limits.site.rate=10")
    try:
        crowd = [m.site(f"s{n}.test", ["/"], EDGE) for n in range(3)]
        x = m.site("x.test", ["/", "/a"], EDGE)
        m.arm(*crowd, x)
        await m.timer.advance(1.9)  # robots.txt of each, then x.test's home page booked
        slot = x.sched.slot
        assert slot is not None and slot.cost == 4.0 and slot.start > m.timer.now()
        await m.move({"x.test": "site:x.test"})
        per_unit = m.h.feedback.origin_interval("site:x.test")
        clock = await m.h.limiter.tats(["origin:site:x.test"])
        assert clock["origin:site:x.test"] >= slot.start + slot.cost * per_unit - 1e-9
        await m.timer.advance(8.0)
        m.assert_site_spaced(x)
        m.assert_within_budget(["x.test"], "site:x.test")
    finally:
        await m.close()


async def test_a_fleet_worker_that_learns_the_split_later_shares_one_budget_meanwhile(
    tmp_path: Path,
) -> None:
    """Two workers each crawl one tenant of a platform both first booked as one shared name.
    The first learns (from its own answers) that the platform is its own origin and moves
    its tenant there; the second learns it seconds later. Meanwhile the moved tenant books
    its old key too, so the platform's server is never sent two budgets' worth."""
    timer = FakeTimer()
    shared = MemoryLimiter(clock=timer.now)
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    one = Moves(tmp_path / "one", "limits.site.rate=10", timer=timer, limiter=FleetLimiter(shared))
    two = Moves(tmp_path / "two", "limits.site.rate=10", timer=timer, limiter=FleetLimiter(shared))
    try:
        one.live.sharing = object()  # type: ignore[assignment]  # a fleet's worker
        two.live.sharing = object()  # type: ignore[assignment]
        paths = [f"/p{n}" for n in range(20)]
        a = one.site("a.test", paths, EDGE, provisional=True)
        b = two.site("b.test", paths, EDGE, provisional=True)
        two.inferred.place("a.test", EDGE, provisional=True)
        one.inferred.place("b.test", EDGE, provisional=True)
        one.arm(a)
        two.arm(b)
        await timer.advance(2.0)
        split = timer.now()
        await one.move({"a.test": "hdr:plinth", "b.test": "hdr:plinth"})
        await timer.advance(4.0)
        await two.move({"a.test": "hdr:plinth", "b.test": "hdr:plinth"})
        await timer.advance(12.0)
        platform = sorted(one.h.fetcher.sends + two.h.fetcher.sends)
        assert sum(t >= split for t, _u in platform) > 8
        per_unit = one.h.feedback.origin_interval("hdr:plinth")
        for (t, u), (later, v) in itertools.pairwise(platform):
            assert later - t >= one.cost(u) * per_unit - 1e-9, (u, v, later - t, platform)
        one.assert_site_spaced(a)
        two.assert_site_spaced(b)
    finally:
        await one.close()
        await two.close()


async def test_a_site_moved_while_its_booking_was_out_keeps_its_spacing_and_budget(
    tmp_path: Path,
) -> None:
    """Booked by round trip (SQLite, PostgreSQL): x.test's booking on its own origin is out
    when it is found to be a platform's tenant. Its answer, a slot on the key it left, is
    kept and started no sooner than the platform's own bookings allow."""
    timer = FakeTimer()
    limiter = RoundTripLimiter(timer)
    m = Moves(tmp_path, "limits.site.rate=10", timer=timer, limiter=limiter)
    try:
        paths = [f"/p{n}" for n in range(6)]
        tenants = [m.site(f"t{n}.test", paths, "hdr:plinth") for n in range(3)]
        x = m.site("x.test", paths, "site:x.test")
        m.arm(*tenants, x)
        for _ in range(2000):  # until a booking of x.test's page is out
            await timer.advance(0.0005)
            if x.sched.launched and limiter.asking("origin:site:x.test"):
                break
        assert x.sched.phase is Phase.BOOKING and limiter.asking("origin:site:x.test")
        moved = timer.now()
        await m.move({"x.test": "hdr:plinth"})
        await timer.advance(0.01)
        slot = x.sched.slot
        assert slot is not None and "origin:site:x.test" in slot.keys  # kept
        await timer.advance(30.0)
        assert len(m.sends(["x.test"])) == 7
        m.assert_site_spaced(x)
        m.assert_within_budget(["x.test", *(t.host for t in tenants)], "hdr:plinth", moved)
    finally:
        await m.close()
