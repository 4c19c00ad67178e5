"""A stall of the simulated web's own loop is seen, and never read as the crawler's violation."""

from __future__ import annotations

import asyncio
import dataclasses
import socket
import time

from hypothesis import given
from hypothesis import strategies as st
from simweb_helpers import logged
from simweb_helpers import request_record as _record

from courtier.simweb import SimWeb, SiteKind, World
from courtier.simweb.audit import _max_in_window, audit_records
from courtier.simweb.stalls import DRAIN, LATE_AFTER, PERIOD, LoopWatch

T0 = 1_800_000_000.0


def _wake_on_time(watch: LoopWatch, start: float, until: float) -> float:
    now = start
    while now + PERIOD <= until:
        now += PERIOD
        watch.woke(now)
    return now


def test_on_time_wakes_leave_every_stamp_exact() -> None:
    watch = LoopWatch(T0)
    last = _wake_on_time(watch, T0, T0 + 1.0)
    watch.woke(last + PERIOD + LATE_AFTER * 0.9)  # late, but within what the stamps may be
    assert watch.latest is None and watch.count == 0
    assert watch.arrived_after(last + 0.002) == last + 0.002


def test_a_request_stamped_after_a_stall_may_have_arrived_at_its_start() -> None:
    watch = LoopWatch(T0)
    before = _wake_on_time(watch, T0, T0 + 1.0)
    watch.woke(before + 0.3)  # the loop stood still for 0.3 s
    assert watch.count == 1 and watch.longest > 0.29
    assert watch.arrived_after(before + 0.301) == before  # served from the backlog
    assert watch.arrived_after(before + 0.3 + DRAIN) == before
    awake = _wake_on_time(watch, before + 0.3, before + 0.3 + 2 * DRAIN)
    assert watch.arrived_after(awake + 0.001) == awake + 0.001  # the backlog is long gone


def test_a_stall_the_probe_has_not_seen_yet_counts_from_its_last_wake() -> None:
    watch = LoopWatch(T0)
    last = _wake_on_time(watch, T0, T0 + 1.0)
    # The handler runs before the probe in the first turn after the stall.
    assert watch.arrived_after(last + 0.2) == last
    assert watch.arrived_after(last + PERIOD) == last + PERIOD


def test_stalls_close_together_chain_from_the_first_start() -> None:
    watch = LoopWatch(T0)
    first = _wake_on_time(watch, T0, T0 + 1.0)
    watch.woke(first + 0.1)
    end = _wake_on_time(watch, first + 0.1, first + 0.1 + DRAIN * 0.5)
    watch.woke(end + 0.1)  # the backlog of the first kept the loop busy again
    assert watch.count == 1 and abs(watch.longest - (end + 0.1 - first)) < 1e-9
    assert watch.arrived_after(end + 0.1) == first
    apart = _wake_on_time(watch, end + 0.1, end + 0.1 + 2 * DRAIN)
    watch.woke(apart + 0.1)
    assert watch.count == 2 and watch.arrived_after(apart + 0.1) == apart


def test_the_audit_reads_a_gap_from_the_earliest_arrival(world: World) -> None:
    host = next(
        s.host
        for s in world.sites.values()
        if s.kind is SiteKind.STANDALONE and not s.behaviours and s.crawl_delay is None
    )
    stalled = [
        _record(host, "/robots.txt", T0 + 0.2, arrived_after=T0),
        _record(host, "/", T0 + 1.03),
    ]
    report = audit_records(stalled, world)
    assert report.ok and report.criterion("site-gap").ok
    assert abs((report.sites[0].min_gap or 0) - 1.03) < 1e-6
    assert report.stamp_uncertainty.requests == 1
    assert abs(report.stamp_uncertainty.longest - 0.2) < 1e-6
    # The later request's own uncertainty never widens a gap: 0.8 s stays a violation.
    rude = [_record(host, "/robots.txt", T0), _record(host, "/", T0 + 0.8, arrived_after=T0)]
    assert not audit_records(rude, world).criterion("site-gap").ok


def _get(address: str, port: int, host: str, target: str) -> float:
    """One request on its own connection, from a thread (the server's loop may be stuck);
    returns the wall time its bytes were handed to the kernel."""
    with socket.create_connection((address, port), timeout=5) as conn:
        request = f"GET {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
        conn.sendall(request.encode())
        sent = time.time()
        while conn.recv(65536):
            pass
    return sent


async def test_a_blocked_server_loop_does_not_shorten_the_audited_gap(web: SimWeb) -> None:
    world = web.world
    host = next(
        s.host
        for s in world.sites.values()
        if s.kind is SiteKind.STANDALONE and not s.behaviours and s.crawl_delay is None
    )
    address = web.address_of(host)
    assert address.startswith("127."), "tests talk to loopback only"
    loop = asyncio.get_running_loop()
    await asyncio.sleep(0.05)  # the probe is awake

    def polite_pair() -> tuple[float, float]:
        time.sleep(0.1)
        first = _get(address, web.port, host, "/robots.txt")  # arrives while the loop is stuck
        time.sleep(max(0.0, first + 1.02 - time.time()))
        return first, _get(address, web.port, host, "/")

    pair = asyncio.ensure_future(asyncio.to_thread(polite_pair))
    loop.call_later(0.05, time.sleep, 0.5)  # the server's loop stands still for 0.5 s
    first_sent, second_sent = await pair
    assert second_sent - first_sent >= 1.0
    records = sorted((r for r in await logged(web) if r.host == host), key=lambda r: r.start)
    assert [r.target for r in records] == ["/robots.txt", "/"]
    first, second = records
    assert second.start - first.start < 0.95  # the stall did move the first stamp
    assert first.arrived_after is not None and first.arrived_after <= first_sent
    # The first stall says nothing of the second request; a loaded test machine may stall the
    # server's loop again while it arrives, and then its own reading starts after the first.
    assert second.arrived_after is None or second.arrived_after > first.start
    report = audit_records(records, world)
    assert report.criterion("site-gap").ok, report.criterion("site-gap")
    assert report.stamp_uncertainty.requests == 1 + (second.arrived_after is not None)


@st.composite
def _spans(draw: st.DrawFn) -> tuple[list[tuple[float, float]], list[int]]:
    # Times on a 10 ms grid, so window edges are exact in binary floating point.
    n = draw(st.integers(0, 30))
    stamps = draw(st.lists(st.integers(0, 800), min_size=n, max_size=n))
    early = draw(st.lists(st.sampled_from([0, 0, 0, 5, 20, 40]), min_size=n, max_size=n))
    costs = draw(st.lists(st.integers(1, 4), min_size=n, max_size=n))
    spans = [((s - e) / 100, s / 100) for s, e in zip(stamps, early, strict=True)]
    order = sorted(range(n), key=lambda i: spans[i])
    return [spans[i] for i in order], [costs[i] for i in order]


def _certain_max(spans: list[tuple[float, float]], costs: list[int], window: float) -> int:
    """By definition: the most cost whose whole span lies in one window [t, t + window)."""
    candidates = {e for e, _ in spans} | {k / 100 for k in range(-200, 900)}
    return max(
        (
            sum(c for (e, s), c in zip(spans, costs, strict=True) if t <= e and s < t + window)
            for t in candidates
        ),
        default=0,
    )


@given(_spans(), st.sampled_from([0.5, 1.0, 5.0]))
def test_window_counts_take_only_what_certainly_started_inside(
    drawn: tuple[list[tuple[float, float]], list[int]], window: float
) -> None:
    spans, costs = drawn
    assert _max_in_window(spans, costs, window) == _certain_max(spans, costs, window)
    stamps = sorted(zip((s for _, s in spans), costs, strict=True))
    exact = [(s, s) for s, _ in stamps]
    by_stamp = _max_in_window(exact, [c for _, c in stamps], window)
    # With exact stamps, the busiest window of the stamps; an uncertain stamp only ever
    # lowers what is certain.
    assert by_stamp == _certain_max(exact, [c for _, c in stamps], window)
    assert _max_in_window(spans, costs, window) <= by_stamp


def test_a_stall_that_bunches_an_origins_requests_is_not_over_budget(world: World) -> None:
    host = next(
        s.host
        for s in world.sites.values()
        if s.kind is SiteKind.STANDALONE and not s.behaviours and s.crawl_delay is None
    )
    # Detail pages (2 units) once a second: the budget of 2 units/s is kept. The server stood
    # still from T0 + 0.95 to T0 + 2.02: the second and third requests are stamped together,
    # one second before the fourth.
    assert world.origin_budget(host) == 2.0
    records = [_record(host, f"/item/{i + 1}", T0 + i) for i in range(6)]
    for i in (1, 2):
        records[i] = _record(host, f"/item/{i + 1}", T0 + 2.02, arrived_after=T0 + 0.95)
    report = audit_records(records, world)
    assert report.criterion("origin-budget").ok, report.origins
    assert report.criterion("site-gap").ok
    # The same stamps without what the server knew about its stall read a burst.
    blind = [dataclasses.replace(r, arrived_after=None) for r in records]
    assert not audit_records(blind, world).criterion("origin-budget").ok
