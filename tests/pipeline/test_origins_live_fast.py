"""A site whose origin-inference lookup failed never books under a second name for a server
the inference already named (the cause of an origin over budget at 2,000 sites)."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from courtier.net.guard import Resolution
from courtier.origins.cluster import Assignment, OriginChange
from courtier.origins.dns_evidence import DnsFacts
from courtier.origins.infer import InferenceResult, OriginInference
from courtier.pipeline.lanes import origins_live
from courtier.pipeline.lanes.origins_live import RELEASE_SLICE, LiveOrigins, infer_early
from courtier.pipeline.lanes.site import OriginStatus, SiteLane
from courtier.pipeline.stats import CrawlStats
from courtier.politeness.backoff import BackoffParams, after_response
from courtier.politeness.gcra import Slot


class FlakyDns:
    """DNS facts from a table; names in ``failing`` time out that many more times."""

    def __init__(self, table: Mapping[str, tuple[str, ...]], failing: dict[str, int]) -> None:
        self.table = table
        self.failing = failing
        self.lookups: list[str] = []

    async def lookup(self, host: str) -> DnsFacts:
        self.lookups.append(host)
        if self.failing.get(host, 0) > 0:
            self.failing[host] -= 1
            return DnsFacts(host, error="timeout: no answer")
        return DnsFacts(host, (), self.table[host], {}, 300.0)

    def forget_ptr(self) -> None:
        pass


class TableGuard:
    def __init__(self, table: Mapping[str, tuple[str, ...]]) -> None:
        self.table = table

    async def resolve(self, host: str) -> Resolution:
        return Resolution(host, self.table[host], True, "allowed", "")


class Frontier:
    class store:
        @staticmethod
        def save_origins(*_args: Any) -> None:
            pass

    async def call(self, fn: Any, *args: Any) -> Any:
        return fn(*args)


class Clocks:
    def __init__(self) -> None:
        self.carried: list[tuple[str, str]] = []
        self.caps: dict[str, float | None] = {}
        self.spent: dict[str, float] = {}

    async def carry(self, old: str, new: str, cap: float | None = None, spent: float = 0.0) -> None:
        self.carried.append((old, new))
        self.caps[new] = cap
        self.spent[new] = spent


class Timer:
    def now(self) -> float:
        return 0.0


WORLD = {f"t{i}.test": ("10.0.0.5",) for i in range(4)} | {"solo.test": ("10.0.0.7",)}


def _live(
    inference: OriginInference,
    table: Mapping[str, tuple[str, ...]],
    lanes: Iterable[SiteLane],
    arm: Callable[[SiteLane], None],
    early: asyncio.Future[Any] | None = None,
) -> LiveOrigins:
    return LiveOrigins(
        inference,
        guard=TableGuard(table),  # type: ignore[arg-type]
        clocks=Clocks(),  # type: ignore[arg-type]
        frontier=Frontier(),  # type: ignore[arg-type]
        stats=CrawlStats(),
        hosts=lambda: WORLD,
        sites=lambda: lanes,
        arm=arm,
        unresolved=_back_off,
        timer=Timer(),  # type: ignore[arg-type]
        recheck_every=300.0,
        tasks=set(),
        early=early,
    )


BACKOFF = BackoffParams(1.0, 60.0, 3600.0, 10)


def _back_off(lane: SiteLane, now: float) -> None:
    lane.backoff = after_response(
        lane.backoff, None, None, now, BackoffParams(1.0, 60.0, 3600.0, 10)
    )


async def _origins_of(failing: dict[str, int]) -> tuple[dict[str, str | None], FlakyDns]:
    dns = FlakyDns(WORLD, failing)
    inference = OriginInference(dns)
    lanes = {host: SiteLane(host, host) for host in WORLD}
    armed: list[str] = []
    live = _live(inference, WORLD, lanes.values(), lambda lane: armed.append(lane.host))
    runner = asyncio.create_task(live.run())
    for lane in lanes.values():
        live.look_up(lane)
    for _ in range(50):
        await asyncio.sleep(0)
        if all(lane.origin_status is OriginStatus.RESOLVED for lane in lanes.values()):
            break
    runner.cancel()
    assert sorted(armed) == sorted(WORLD)
    return {host: lane.origin for host, lane in lanes.items()}, dns


async def test_a_failed_lookup_is_asked_again_together_and_joins_its_server() -> None:
    origins, dns = await _origins_of({"t1.test": 1, "t2.test": 1})
    assert {origins[f"t{i}.test"] for i in range(4)} == {"addr:10.0.0.5"}
    assert origins["solo.test"] == "site:solo.test"
    # The two failed hosts were asked again in one batch (one re-clustering).
    assert sorted(dns.lookups[len(WORLD) :]) == ["t1.test", "t2.test"]


async def test_a_host_that_keeps_failing_books_on_the_server_it_shares() -> None:
    origins, _dns = await _origins_of({"t1.test": 10})
    assert origins["t1.test"] == origins["t0.test"] == "addr:10.0.0.5"


async def test_a_robots_txt_hop_to_a_host_outside_the_seed_finds_the_server_it_shares() -> None:
    """A robots.txt redirect hop to a host no lane books on: its origin is the inferred one,
    else that of a placed host sharing an address, else none (its site key alone)."""
    table = WORLD | {"outsider.test": ("10.0.0.5",), "elsewhere.test": ("10.9.9.9",)}
    inference = OriginInference(FlakyDns(table, {}))
    await inference.add(sorted(WORLD))
    live = _live(inference, table, [], lambda lane: None)
    assert await live.origin_for("t2.test") == "addr:10.0.0.5"
    assert await live.origin_for("outsider.test") == "addr:10.0.0.5"
    assert await live.origin_for("elsewhere.test") is None


async def test_sites_waiting_for_inference_go_on_a_slice_per_turn_without_a_task_each() -> None:
    # 2,000 waiting tasks woken together by the end of inference made one ~120 ms turn.
    table = {f"s{n}.test": (f"10.1.{n // 200}.{n % 200}",) for n in range(1000)}
    inference = OriginInference(FlakyDns(table, {}))
    lanes = [SiteLane(host, host) for host in table]
    turn = 0
    armed_in: list[int] = []
    live = _live(inference, table, lanes, lambda lane: armed_in.append(turn))
    live.hosts = lambda: table
    for lane in lanes:
        live.look_up(lane)
    assert len(live.tasks) == 0  # waiting sites are a list, not tasks
    runner = asyncio.create_task(live.run())
    deadline = asyncio.get_running_loop().time() + 10.0  # clustering runs on a thread
    while len(armed_in) < len(lanes) and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0)
        turn += 1
    runner.cancel()
    assert len(armed_in) == len(lanes)
    assert all(lane.origin == f"site:{lane.host}" for lane in lanes)
    per_turn = Counter(armed_in)
    assert max(per_turn.values()) <= RELEASE_SLICE
    assert len(per_turn) >= len(lanes) // RELEASE_SLICE


async def test_a_site_asking_after_inference_is_resolved_outside_the_call() -> None:
    # The scheduler asks while choosing the lane's work: arming it in that call re-enters it.
    inference = OriginInference(FlakyDns(WORLD, {}))
    armed: list[str] = []
    live = _live(inference, WORLD, [], lambda lane: armed.append(lane.host))
    runner = asyncio.create_task(live.run())
    await live.ready.wait()
    lane = SiteLane("t1.test", "t1.test")
    live.look_up(lane)
    assert armed == [] and lane.origin_status is OriginStatus.LOOKING_UP
    await asyncio.sleep(0)
    runner.cancel()
    assert armed == ["t1.test"] and lane.origin == "addr:10.0.0.5"
    assert not [t for t in live.tasks if "_look_up" in repr(t.get_coro())]  # no task of its own


async def test_one_unanswered_seed_host_does_not_hold_every_other_site(monkeypatch) -> None:
    """Sites wait for the seed's inference before their first booking; a host whose DNS
    answer never comes (a lost datagram waits out the resolver's retry) is left out after
    the grace: every other site is placed and armed, and it is placed once it is answered."""
    monkeypatch.setattr(origins_live, "SEED_STRAGGLERS_AFTER", 0.05)
    answer = asyncio.Event()

    class LostAnswer(FlakyDns):
        async def lookup(self, host: str) -> DnsFacts:
            if host == "t3.test" and not answer.is_set():
                await answer.wait()
            return await super().lookup(host)

    inference = OriginInference(LostAnswer(WORLD, {}))
    lanes = {host: SiteLane(host, host) for host in WORLD}
    armed: list[str] = []
    early = infer_early(inference, WORLD)
    live = _live(inference, WORLD, lanes.values(), lambda lane: armed.append(lane.host), early)
    runner = asyncio.create_task(live.run())
    for lane in lanes.values():
        live.look_up(lane)
    await asyncio.wait_for(live.ready.wait(), 5.0)
    for _ in range(50):
        await asyncio.sleep(0)
    assert sorted(armed) == sorted(set(WORLD) - {"t3.test"})
    assert lanes["t3.test"].origin_status is OriginStatus.LOOKING_UP
    answer.set()
    for _ in range(50):
        await asyncio.sleep(0)
        if lanes["t3.test"].origin_status is OriginStatus.RESOLVED:
            break
    runner.cancel()
    assert sorted(armed) == sorted(WORLD)
    assert {lanes[f"t{i}.test"].origin for i in range(4)} == {"addr:10.0.0.5"}


async def test_sites_moving_together_carry_their_own_bookings_of_the_old_clock() -> None:
    """A platform's tenants regrouped by their headers (addr -> hdr) still have every slot
    they booked on the old key to start: the new key's clock is raised past the latest of
    them, whichever tenant booked it. Bookings of sites not moving with them (strangers of a
    CDN edge, split off alone) are not theirs: carried, they stalled the tenants 10 s. A
    stranger split off alone brings only what its own requests spent; so does a group one
    of whose sites has no lane here (another worker's bookings cannot be seen): then the old
    clock is carried whole."""
    lanes = [SiteLane(h, h) for h in ("t1.test", "t2.test", "t3.test", "s.test", "u.test")]
    for lane in lanes:
        lane.origin, lane.origin_status = "old", OriginStatus.RESOLVED
    lanes[1].sched.slot = Slot(start=3.0, deadline=3.5, keys=("origin:old",), cost=2.0)
    lanes[2].sched.slot = Slot(start=1.0, deadline=1.5, keys=("origin:old",), cost=4.0)
    lanes[3].last_sent, lanes[3].sched.launched, lanes[3].sched.last_cost = 5.0, True, 4.0
    live = _live(OriginInference(FlakyDns(WORLD, {})), WORLD, lanes, lambda lane: None)
    live.per_unit = lambda origin: 0.5
    changes = [OriginChange(f"t{n}.test", "addr:10.0.0.5", "hdr:plinth") for n in (1, 2, 3)]
    changes.append(OriginChange("s.test", "cname:edge.test", "site:s.test"))
    changes += [OriginChange(h, "addr:10.0.0.9", "hdr:far") for h in ("u.test", "gone.test")]
    assignments = {c.site: Assignment(c.site, c.new, 0.9, ()) for c in changes}
    await live._apply(InferenceResult(assignments, tuple(changes), {}, 0))
    clocks = live.clocks
    assert clocks.caps["origin:hdr:plinth"] == 4.0  # type: ignore[attr-defined]
    assert Counter(new for _old, new in clocks.carried)["origin:hdr:plinth"] == 2  # type: ignore[attr-defined]
    assert clocks.caps["origin:site:s.test"] == 7.0  # type: ignore[attr-defined]
    assert clocks.caps["origin:hdr:far"] is None  # type: ignore[attr-defined]
    assert [lane.origin for lane in lanes] == ["hdr:plinth"] * 3 + ["site:s.test", "hdr:far"]


async def test_an_older_result_applied_late_never_moves_a_site_back() -> None:
    """Results are applied as their awaits end: a site takes the inference's origin of now,
    never a stale result's (it would book on a key its group has left, beside it)."""
    lanes = [SiteLane(h, h) for h in ("t1.test", "t2.test")]
    for lane in lanes:
        lane.origin, lane.origin_status = "cname:edge.test", OriginStatus.RESOLVED
    inference = OriginInference(FlakyDns(WORLD, {}))
    live = _live(inference, WORLD, lanes, lambda lane: None)
    now = {h: Assignment(h, "cname:tenants.platform.test", 0.9, ()) for h in ("t1.test", "t2.test")}
    inference._assignments = dict(now)  # the newest clustering: the platform, told apart
    stale = [OriginChange(h, None, "cname:edge.test") for h in ("t1.test", "t2.test")]
    await live._apply(InferenceResult(now, tuple(stale), {}, 0))
    assert [lane.origin for lane in lanes] == ["cname:tenants.platform.test"] * 2
    assert ("origin:cname:edge.test", "origin:cname:tenants.platform.test") in live.clocks.carried  # type: ignore[attr-defined]


async def test_in_a_fleet_only_a_site_joining_others_books_its_old_origin_for_a_while() -> None:
    """Tenants regrouped by evidence another worker may not have yet book their old key too
    (``TRANSITION``): that worker still books its tenants there. A stranger split off a CDN
    edge onto an origin of its own shares it with nobody: it books its new key alone at once
    (booking the saturated edge key too held hundreds of edge sites back at a fleet's start)."""
    lanes = [SiteLane(h, h) for h in ("t1.test", "t2.test", "s.test")]
    for lane in lanes:
        lane.origin, lane.origin_status = "cname:edge.test", OriginStatus.RESOLVED
    live = _live(OriginInference(FlakyDns(WORLD, {})), WORLD, lanes, lambda lane: None)
    live.sharing = object()  # type: ignore[assignment]
    changes = [OriginChange(f"t{n}.test", "cname:edge.test", "hdr:plinth") for n in (1, 2)]
    changes.append(OriginChange("s.test", "cname:edge.test", "site:s.test"))
    assignments = {c.site: Assignment(c.site, c.new, 0.9, ()) for c in changes}
    await live._apply(InferenceResult(assignments, tuple(changes), {}, 0))
    assert [lane.origin for lane in lanes] == ["hdr:plinth", "hdr:plinth", "site:s.test"]
    assert [lane.old_origin(0.0) for lane in lanes] == ["cname:edge.test"] * 2 + [None]
