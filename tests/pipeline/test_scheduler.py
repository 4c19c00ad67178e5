"""The scheduler on fake time: spacing, one in flight, forfeited slots, the capacity gate,
and feedback for pages and media alike. No sockets, no real sleeps."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

import pytest
from lane_harness import FleetLimiter, Lanes, allow_all

from courtier.config import load
from courtier.frontier.base import LeasedUrl
from courtier.pipeline.lanes.site import RenderFetch
from courtier.pipeline.scheduling.lanes import Phase
from courtier.pipeline.scheduling.timer import FakeTimer
from courtier.politeness.limiter import MemoryLimiter
from courtier.politeness.robots import rules_from_response

FAST = ["limits.origin.rate=1000", "limits.cdn.rate=1000", "limits.cdn-miss.rate=1000"]


@pytest.fixture
async def lanes(tmp_path: Path):
    made: list[Lanes] = []

    def make(*overrides: str, script=allow_all) -> Lanes:
        harness = Lanes(load(None, [*FAST, *overrides]), tmp_path, script)
        harness.start()
        made.append(harness)
        return harness

    yield make
    for harness in made:
        await harness.close()


async def test_requests_on_a_site_start_one_interval_apart(lanes) -> None:
    h = lanes("limits.site.rate=2")
    site = h.site("a.test", [f"/p{n}" for n in range(5)])
    h.pages.arm(site)
    await h.timer.advance(10.0)
    starts = h.starts("a.test", robots=True)
    assert len(starts) == 6  # robots.txt, then five pages
    assert all(b - a >= 0.5 for a, b in itertools.pairwise(starts))
    assert h.stats.missed_slots == 0


async def test_a_slow_site_never_has_two_requests_in_flight(lanes) -> None:
    h = lanes("limits.site.rate=10")
    site = h.site("slow.test", ["/a", "/b", "/c"])
    for path in ("/a", "/b"):
        h.fetcher.delays[f"http://slow.test{path}"] = 2.0
    h.pages.arm(site)
    await h.timer.advance(1.0)
    assert site.sched.in_flight == 1
    await h.timer.advance(10.0)
    a, b, c = h.starts("slow.test")
    assert b >= a + 2.0 and c >= b + 2.0  # each waited for the answer before it


async def test_a_site_starts_its_next_page_while_the_last_one_is_still_parsed(lanes) -> None:
    """The site's place in flight is freed when the server has answered: keeping and
    parsing a page is the crawler's own work, and must not hold the site's next request."""
    h = lanes("limits.site.rate=2")
    site = h.site("a.test", ["/a", "/b", "/c"])

    async def slow_parse(fn, *args):
        done = asyncio.Event()
        h.timer.call_at(h.timer.now() + 5.0, done.set)
        await done.wait()
        return fn(*args)

    h.site_lanes.parse = slow_parse
    h.pages.arm(site)
    await h.timer.advance(2.0)
    a, b, c = h.starts("a.test")
    assert 0.5 <= b - a < 1.0 and 0.5 <= c - b < 1.0  # the interval, not the 5 s parse
    assert h.pages.in_flight == 3  # the crawl's places are held until the parses end
    await h.timer.advance(10.0)
    assert h.pages.in_flight == 0 and site.sched.in_flight == 0


async def test_a_late_send_never_brings_the_next_request_on_its_origin_closer(lanes) -> None:
    """The server's view: a request that goes out late (a slow connect) pushes the next start
    on the same origin back, so consecutive sends stay a full charge apart."""
    h = lanes("limits.origin.rate=2", "limits.site.rate=10")
    sites = [h.site(f"s{n}.test", ["/a", "/b"], origin="shared") for n in range(3)]
    for n in range(3):
        h.fetcher.send_delays[f"http://s{n}.test/robots.txt"] = 0.3
    for site in sites:
        h.pages.arm(site)
    await h.timer.advance(30.0)
    costs = {e.url: e.context.cost for e in h.events}
    sends = sorted(h.fetcher.sends)
    assert len(sends) == 9  # robots.txt and two pages per site
    for (at, url), (next_at, _next_url) in itertools.pairwise(sends):
        assert next_at - at >= costs[url] * 0.5 - 1e-9, (url, next_at - at)
    assert h.pages.spacing.holds + h.stats.missed_slots > 0  # held, or forfeited and rebooked


async def test_a_late_wake_up_forfeits_the_slot_and_books_again(lanes) -> None:
    h = lanes("limits.site.rate=1", "limits.site.slot_width=0.05")
    site = h.site("a.test", ["/p"])
    h.limiter.raise_floor_now({"site:a.test": h.timer.now() + 1.0})  # the key is busy
    h.pages.arm(site)
    await h.timer.advance(0.0)
    assert site.sched.phase is Phase.BOOKED  # robots.txt booked a second ahead
    h.timer.late(0.5)  # the loop wakes half a second late for the next callback
    await h.timer.advance(1.1)
    assert h.stats.missed_slots == 1
    assert h.starts("a.test", robots=True) == []  # nothing started in a missed slot
    await h.timer.advance(5.0)
    starts = h.starts("a.test", robots=True)
    assert len(starts) == 2 and starts[1] - starts[0] >= 1.0


async def test_a_late_media_robots_txt_slot_is_forfeited_too(lanes) -> None:
    h = lanes("media.max_in_flight_per_key=1")
    h.limiter.raise_floor_now({"site:media-a.s3.simstore.test": h.timer.now() + 1.0})
    h.media.offer("http://media-a.s3.simstore.test/img/1.jpg", "a.test")
    await h.timer.advance(0.0)
    (lane,) = h.media.lanes.values()
    assert lane.sched.phase is Phase.BOOKED
    slot_start = h.timer.now() + 1.0
    h.timer.late(1.0)
    await h.timer.advance(5.0)
    assert h.stats.missed_slots == 1
    assert [u.rsplit("/", 1)[1] for _t, u in h.fetcher.started] == ["robots.txt", "1.jpg"]
    assert h.fetcher.started[0][0] >= slot_start + 1.0  # started in a new slot, not the missed


async def test_the_capacity_gate_holds_booking_but_never_forfeits_a_booked_slot(lanes) -> None:
    h = lanes("crawl.max_in_flight=1", "limits.site.rate=100")
    a = h.site("a.test", ["/p"])
    b = h.site("b.test", ["/p"])
    for site in ("a.test", "b.test", "c.test"):
        h.fetcher.delays[f"http://{site}/robots.txt"] = 3.0
    h.pages.arm(a)
    h.pages.arm(b)  # booked before a's request took the only place
    await h.timer.advance(0.5)
    assert {a.sched.in_flight, b.sched.in_flight} == {1}  # both booked slots were honoured
    assert h.stats.missed_slots == 0
    c = h.site("c.test", ["/p"])
    h.pages.arm(c)
    await h.timer.advance(0.5)
    assert c.sched.phase is Phase.READY  # over the cap: waits unbooked
    slots = h.stats.slots
    await h.timer.advance(3.0)
    assert h.stats.slots > slots and c.sched.phase is not Phase.READY
    assert h.stats.missed_slots == 0


def _arm_crowd(
    h, count: int, *, started_before: bool = False, prefix: str = "s", paths: int = 1
) -> list:
    """``count`` sites armed at one instant, each on an origin of its own."""
    pages = [f"/p{n}" for n in range(paths)]
    sites = [h.site(f"{prefix}{n:03d}.test", pages, origin=f"{prefix}o{n}") for n in range(count)]
    for site in sites:
        site.sched.launched = started_before
        h.pages.arm(site)
    return sites


async def test_the_start_gate_spreads_a_crowd_of_first_bookings_and_forfeits_none(lanes) -> None:
    """Three hundred sites armed at one instant, each on an origin of its own: at most the
    gate's burst starts at once and the rest follow at its rate, in the order they came."""
    h = lanes(
        "crawl.start_rate=1000",
        "crawl.start_burst=20",
        "crawl.first_contact_rate=0",
        "limits.site.rate=100",
    )
    _arm_crowd(h, 300)
    await h.timer.advance(2.0)
    robots = [(t, u) for t, u in h.fetcher.started if u.endswith("/robots.txt")]
    assert len(robots) == 300
    began = robots[0][0]
    for t, _u in robots:
        started_by_t = sum(1 for other, _ in robots if other <= t)
        assert started_by_t <= 20 + (t - began) * 1000 + 1e-6
    assert robots[-1][0] - began == pytest.approx(280 / 1000, abs=0.01)
    assert [u for _t, u in robots] == sorted(u for _t, u in robots)  # first come, first go
    assert h.stats.gate_holds >= 280 and h.stats.missed_slots == 0


@pytest.mark.parametrize("started_before", [False, True])
async def test_first_contacts_are_spread_at_their_own_rate_and_later_requests_are_not(
    lanes, started_before: bool
) -> None:
    """A lane's first request (a new host: DNS, a connection, robots.txt) passes the
    first-contact gate too; a crowd of lanes that have all started before meets only the
    start gate."""
    h = lanes(
        "crawl.start_rate=1000",
        "crawl.start_burst=20",
        "crawl.first_contact_rate=100",
        "crawl.first_contact_burst=5",
        "limits.site.rate=100",
    )
    sites = _arm_crowd(h, 200, started_before=started_before)
    await h.timer.advance(5.0)
    robots = [t for t, u in h.fetcher.started if u.endswith("/robots.txt")]
    assert len(robots) == 200
    burst, rate = (20, 1000) if started_before else (5, 100)
    for t in robots:
        assert sum(1 for other in robots if other <= t) <= burst + (t - robots[0]) * rate + 1e-6
    assert robots[-1] - robots[0] == pytest.approx((200 - burst) / rate, abs=0.02)
    assert all(site.sched.launched for site in sites)
    assert h.stats.missed_slots == 0


class AwaitedLimiter:
    """The memory limiter behind an awaited ``book`` (as SQLite's and PostgreSQL's): every
    booking goes through the scheduler's booker task."""

    def __init__(self, inner) -> None:
        self.inner = inner

    def __getattr__(self, name: str):
        return getattr(self.inner, name)


@pytest.fixture(params=["booked at once", "booked by the booker"])
def booking(request):
    def apply(h):
        if request.param == "booked by the booker":
            h.clocks.limiter = AwaitedLimiter(h.limiter)
            assert not h.clocks.books_now
        return h

    return apply


async def test_first_contacts_waiting_for_capacity_are_not_starved_by_busy_lanes(
    lanes, booking
) -> None:
    """Ready lanes go oldest first among those whose gates are open: lanes that have started
    and always have more work, re-queued after every answer, never keep a first contact
    that came before them waiting for capacity."""
    h = booking(
        lanes(
            "crawl.max_in_flight=4",
            "crawl.first_contact_rate=100",
            "crawl.first_contact_burst=5",
            "limits.site.rate=100",
        )
    )
    busy = _arm_crowd(h, 8, prefix="b", started_before=True, paths=400)
    for lane in busy:
        for n in range(400):
            h.fetcher.delays[f"http://{lane.site}/p{n}"] = 0.05
    await h.timer.advance(0.2)
    armed = h.timer.now()
    _arm_crowd(h, 20, prefix="n")
    await h.timer.advance(2.0)
    newcomers = [(t, u) for t, u in h.fetcher.started if u.startswith("http://n")]
    robots = [(t, u) for t, u in newcomers if u.endswith("/robots.txt")]
    assert len(robots) == 20
    assert [u for _t, u in robots] == sorted(u for _t, u in robots)
    assert robots[-1][0] - armed < 0.4  # 20 at 100/s (burst 5), and turns for capacity
    assert sum(1 for _t, u in h.fetcher.started if u.startswith("http://b")) > 100


async def test_sites_of_one_origin_share_its_budget(lanes) -> None:
    h = lanes("limits.origin.rate=2", "limits.site.rate=100")
    sites = [h.site(f"s{n}.test", ["/item/1"], origin="o1") for n in range(4)]
    for site in sites:
        h.pages.arm(site)
    await h.timer.advance(20.0)
    starts = sorted(t for t, _u in h.fetcher.started)
    assert len(starts) == 8
    # 4 robots.txt (1 unit) and 4 detail pages (2 units) at 2 units/s: the last starts
    # when the first 10 units are spent, 5 s after the first.
    assert starts[-1] - starts[0] >= 5.0 - 1e-9


async def test_sites_a_saturated_origin_refused_ask_again_one_at_a_time(lanes) -> None:
    """Thirty sites on an origin booked up to its lead: the refused ones wait in the origin's
    line, so a slot costs a booking and at most one refusal, not one per waiting site."""
    h = lanes("limits.origin.rate=4", "limits.site.rate=100", "politeness.max_lead=1")
    sites = [h.site(f"s{n}.test", ["/item/1", "/item/2"], origin="o1") for n in range(30)]
    for site in sites:
        h.pages.arm(site)
    await h.timer.advance(60.0)
    starts = sorted(t for t, _u in h.fetcher.started)
    assert len(starts) == 90  # robots.txt and two pages each
    # 30 robots.txt (1 unit) and 60 pages (2 units) at 4 units/s: the origin's rate binds.
    assert starts[-1] - starts[0] >= 150 / 4 - 1.0 - 1e-9
    assert h.stats.lead_refusals <= 30 + 2 * h.stats.slots, h.stats.lead_refusals
    assert h.stats.line_joins > 0  # sites done with a page joined the line unasked
    assert h.pages.key_waits.lines() == 0


async def test_a_media_429_pauses_its_lane_and_pushes_back_on_the_origin(lanes) -> None:
    answers = iter([(429, [("Retry-After", "5"), ("X-Cache", "MISS")], b"")])

    def script(url: str):
        if url.endswith("robots.txt"):
            return 404, [], b""
        return next(answers, (200, [("X-Cache", "MISS")], b"x"))

    h = lanes("politeness.origin_pause_sites=1", script=script)
    h.origins["shop.test"] = "platform-a"
    h.media.offer("http://cdn.simcdn.test/shop.test/img/1.jpg", "shop.test")
    await h.timer.advance(0.5)
    first = h.timer.now()
    tats = await h.limiter.tats(["origin:platform-a"])
    assert tats["origin:platform-a"] >= first + 4.5  # the origin is paused for its pages too
    assert h.stats.origin_pauses == 1
    await h.timer.advance(10.0)
    times = [t for t, u in h.fetcher.started if u.endswith(".jpg")]
    assert len(times) == 2 and times[1] - times[0] >= 5.0  # Retry-After is a hard floor


async def test_a_run_of_5xx_across_an_origins_sites_backs_the_origin_off(lanes) -> None:
    def script(url: str):
        return (404, [], b"") if url.endswith("robots.txt") else (500, [], b"")

    h = lanes("limits.site.rate=10", "politeness.origin_error_run=4", script=script)
    sites = [h.site(f"s{n}.test", ["/a", "/b", "/c"], origin="o1") for n in range(2)]
    for site in sites:
        h.pages.arm(site)
    step, deadline = 0.01, h.timer.now() + 30.0
    while not h.stats.origin_backoffs["origin-backoff"] and h.timer.now() < deadline:
        await h.timer.advance(step)
    assert h.stats.origin_backoffs["origin-backoff"] == 1
    backed_off = h.timer.now()  # within the last step
    floor = (await h.limiter.tats(["origin:o1"]))["origin:o1"]
    # The first run backs the origin off 2 ** 3 site intervals (0.8 s); its own bookings
    # (2 units at 1000 units/s) would have moved its clock a few milliseconds.
    assert floor >= backed_off - step + 0.8 - 1e-9, floor - backed_off
    await h.timer.advance(30.0)
    inside = [t for t, _url in h.fetcher.started if backed_off <= t < floor - 1e-9]
    assert inside == []  # and no site of the origin started before it


async def test_a_huge_crawl_delay_suspends_the_site_instead_of_freezing_it(lanes) -> None:
    def script(url: str):
        if url.endswith("robots.txt"):
            return 200, [], b"User-agent: *\nCrawl-delay: 1e308\n"
        return allow_all(url)

    h = lanes(script=script)
    site = h.site("a.test", ["/p"])
    h.pages.arm(site)
    await h.timer.advance(5.0)
    assert site.suspended_reason == "crawl-delay-too-long"
    assert h.starts("a.test") == []
    assert h.stats.refused["crawl-delay-too-long"] == 1


async def test_a_superscript_retry_after_backs_off_without_raising(lanes) -> None:
    def script(url: str):
        if url.endswith("robots.txt"):
            return 404, [], b""
        return 429, [("Retry-After", "²")], b""

    h = lanes("limits.site.rate=10", script=script)
    site = h.site("a.test", ["/p"])
    h.pages.arm(site)
    await h.timer.advance(30.0)
    assert h.stats.internal_errors == 0
    assert len(h.starts("a.test")) == 1  # unreadable Retry-After: the default pause (60 s)


async def test_robots_txt_redirect_hops_are_booked_on_the_host_they_reach(lanes) -> None:
    def script(url: str):
        if url == "http://innocent.test/robots.txt":
            return 200, [], b"User-agent: *\nAllow: /\n"
        if url.endswith("/robots.txt"):
            return 301, [("Location", "http://innocent.test/robots.txt")], b""
        return allow_all(url)

    h = lanes("limits.site.rate=1", script=script)
    for n in range(20):
        h.pages.arm(h.site(f"hostile{n}.test", []))
    await h.timer.advance(30.0)
    starts = h.starts("innocent.test", robots=True)
    assert len(starts) == 20  # each hostile seed's hop reached it ...
    assert all(b - a >= 1.0 - 1e-9 for a, b in itertools.pairwise(starts))  # ... 1 s apart
    hops = [e for e in h.events if e.context.kind == "robots-hop"]
    assert len(hops) == 20 and {e.context.keys for e in hops} == {("site:innocent.test",)}


async def test_robots_txt_hops_to_one_platforms_hosts_are_booked_on_its_origin(lanes) -> None:
    """20 seeds whose robots.txt redirect to 20 different tenants of one platform: each hop
    is a first request to its own host (no site key spaces them), so only the platform's
    origin key keeps them at its rate."""

    def script(url: str):
        if "tenant" in url:
            return 200, [], b"User-agent: *\nAllow: /\n"
        if url.endswith("/robots.txt"):
            n = url.split("/")[2].removeprefix("hostile").removesuffix(".test")
            return 301, [("Location", f"http://tenant{n}.test/robots.txt")], b""
        return allow_all(url)

    h = lanes("limits.site.rate=1", "limits.origin.rate=2", script=script)
    h.origins.update({f"tenant{n}.test": "platform" for n in range(20)})
    for n in range(20):
        h.pages.arm(h.site(f"hostile{n}.test", []))
    await h.timer.advance(30.0)
    hops = sorted((e.at, e.context.keys) for e in h.events if e.context.kind == "robots-hop")
    assert len(hops) == 20
    assert all(keys[1:] == ("origin:platform",) for _at, keys in hops)
    starts = [at for at, _keys in hops]
    # 2 units/s, a robots.txt hop costs 1: 0.5 s apart (all 20 at once before).
    assert all(b - a >= 0.5 - 1e-9 for a, b in itertools.pairwise(starts)), starts


async def test_every_request_is_reported_with_its_keys_and_wait(lanes) -> None:
    h = lanes("limits.origin.rate=1", "limits.site.rate=100")
    site = h.site("a.test", ["/item/1"], origin="o1")
    h.pages.arm(site)
    await h.timer.advance(5.0)
    robots, page = h.events
    assert (robots.context.kind, page.context.kind) == ("robots", "page")
    assert page.context.keys == ("site:a.test", "origin:o1")
    assert page.context.cost == 2.0
    assert page.context.wait >= 0.9  # booked at once, its slot a second out (the origin)
    assert page.result is not None and page.result.status == 200


async def test_an_anomaly_halves_its_origins_rate(lanes) -> None:
    h = lanes("limits.origin.rate=2")
    before = h.feedback.origin_limit("o1").params.interval
    h.feedback.slow_origin("o1")
    assert h.feedback.origin_limit("o1").params.interval == 2 * before
    assert h.stats.latency_slowdowns["anomaly"] == 1


async def test_a_lane_waiting_for_its_old_origin_books_on_its_new_one_at_once(lanes) -> None:
    """Strangers split off a CDN edge: those waiting in the shared key's line (refused for
    lead) book on their own origins when they move, not when the shared key frees up."""
    h = lanes("limits.origin.rate=1", "politeness.max_lead=2", "limits.site.rate=10")
    sites = [h.site(f"s{n}.test", ["/a"], origin="edge") for n in range(8)]
    begun = h.timer.now()
    for site in sites:
        h.pages.arm(site)
    await h.timer.advance(0.1)
    waiting = [s for s in sites if s.sched.phase is Phase.WAITING]
    assert len(waiting) >= 4  # the shared key is booked up to the lead: the rest wait
    for site in waiting:
        site.origin = f"site:{site.name}"
        h.pages.rebook(site)
    await h.timer.advance(0.5)
    for site in waiting:
        robots = h.starts(site.name, robots=True)[0] - begun
        assert robots < 0.6, (site.name, robots)  # not at the shared key's 3 s and later


async def test_sites_on_an_origin_not_told_from_an_edge_book_little_ahead(lanes) -> None:
    """Until the first answers tell a CDN edge from a platform, the sites sharing it book at
    most a second ahead there: split off, they are waiting unbooked, not holding slots."""
    h = lanes("limits.origin.rate=1", "limits.site.rate=10")
    sites = [h.site(f"s{n}.test", ["/a"], origin="cname:edge.test") for n in range(8)]
    for site in sites:
        site.provisional = True
        h.pages.arm(site)
    await h.timer.advance(0.1)
    booked = [s for s in sites if s.sched.phase is Phase.BOOKED or h.starts(s.name, robots=True)]
    assert len(booked) <= 3  # one unit a second, one second ahead (plus the one at once)
    assert all(s.sched.slot is None or s.sched.slot.start - h.timer.now() <= 1.0 for s in sites)


async def test_two_workers_space_their_starts_on_a_shared_origin_from_each_others_sends(
    tmp_path: Path,
) -> None:
    """A fleet: two workers, one limiter (as two processes on one PostgreSQL store), each
    holding sites of one shared origin. A request of worker A that goes out late pushes
    worker B's next start on that origin back too: the server sees every pair of sends a
    full charge apart, whichever worker sent them."""
    timer = FakeTimer()
    shared = MemoryLimiter(clock=timer.now)
    config = load(None, [*FAST, "limits.origin.rate=2", "limits.site.rate=10"])
    workers = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        worker = Lanes(config, tmp_path / name, timer=timer, limiter=FleetLimiter(shared))
        worker.start()
        workers.append(worker)
    try:
        a, b = workers
        for n in range(3):  # worker A's requests all go out 0.3 s after their start
            a.fetcher.send_delays[f"http://a{n}.test/robots.txt"] = 0.3
            a.fetcher.send_delays[f"http://a{n}.test/p"] = 0.3
        for worker, name in ((a, "a"), (b, "b")):
            for n in range(3):
                worker.pages.arm(worker.site(f"{name}{n}.test", ["/p"], origin="shared"))
        await timer.advance(30.0, step=0.01)
        sends = sorted(a.fetcher.sends + b.fetcher.sends)
        assert len(sends) == 12  # robots.txt and a page per site, of both workers
        assert {url.split("/")[2][0] for _at, url in sends} == {"a", "b"}
        costs = {e.url: e.context.cost for e in a.events + b.events}
        for (at, url), (next_at, _next_url) in itertools.pairwise(sends):
            assert next_at - at >= costs[url] * 0.5 - 1e-9, (url, next_at - at)
        assert b.pages.spacing.holds > 0  # B waited for A's late sends
    finally:
        for worker in workers:
            await worker.close()


async def test_while_a_page_renders_its_site_starts_the_renders_requests_and_no_new_page(lanes):
    h = lanes()
    site = h.site("a.test", ["/next"])
    now = h.timer.now()
    h.robots.store(
        "a.test",
        rules_from_response(
            404, b"", now, max_age=3600.0, retry_unreachable=600.0, max_bytes=512_000
        ),
    )
    loop = asyncio.get_running_loop()
    site.rendering = 1
    assert h.site_lanes.choose(site, now) is None  # its queued page waits for the render
    withdrawn = RenderFetch(
        "http://a.test/old.js", "a.test", "script", 1.0, {}, loop.create_future()
    )
    withdrawn.answer.cancel()  # its render gave up on it
    wanted = RenderFetch("http://a.test/app.js", "a.test", "script", 1.0, {}, loop.create_future())
    site.renders.extend([withdrawn, wanted])
    assert h.site_lanes.choose(site, now) is wanted
    assert h.site_lanes.booking(site, wanted)[1] == 1.0  # at the request's own cost
    site.rendering = 0
    chosen = h.site_lanes.choose(site, now)
    assert isinstance(chosen, LeasedUrl) and chosen.fetch_url == "http://a.test/next"
