"""How a crawl ends by itself (``pipeline.ending``), on a fake clock: "done" only after the
crawl has stayed at rest, with no progress, for the settle time; what "at rest" means for a
site lane; the store's last word (a URL due that no lane saw); the grace requests get."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace

import pytest
from lane_harness import Lanes

from courtier.config import load
from courtier.frontier.base import LeasedUrl, NewUrl, Outcome, UrlStatus
from courtier.frontier.refresh import DAY
from courtier.frontier.sqlite_store import SqliteFrontier
from courtier.pipeline.ending import (
    LOOK_EVERY,
    DoneWatch,
    EndWatch,
    due_sites,
    grace,
    settle_of,
    site_at_rest,
)
from courtier.pipeline.lanes.seeding import new_lane
from courtier.pipeline.scheduling.lanes import Phase

T0 = 1_800_000_000.0


# -- the decision -----------------------------------------------------------------------------


def _looks(watch: DoneWatch, times: list[float], rest: bool = True, progress: int = 0) -> list:
    return [watch.look(t, rest, progress) for t in times]


def test_done_only_after_the_settle_time_at_rest() -> None:
    watch = DoneWatch(settle=1.0)
    assert _looks(watch, [0.0, 0.2, 0.4, 0.6, 0.8]) == [False] * 5
    assert watch.look(1.0, True, 0)


def test_progress_or_work_starts_the_settle_time_over() -> None:
    watch = DoneWatch(settle=1.0)
    assert _looks(watch, [0.0, 0.2, 0.4]) == [False] * 3
    assert not watch.look(0.6, True, 1)  # a request started meanwhile, back at rest
    assert _looks(watch, [0.8, 1.0, 1.4], progress=1) == [False] * 3
    assert watch.look(1.6, True, 1)
    watch = DoneWatch(settle=1.0)
    assert _looks(watch, [0.0, 0.5]) == [False] * 2
    assert not watch.look(0.9, False, 0)  # busy: a refill went out
    assert _looks(watch, [1.0, 1.5, 1.9]) == [False] * 3
    assert watch.look(2.0, True, 0)


def test_done_needs_several_looks_however_long_between_them() -> None:
    watch = DoneWatch(settle=1.0, looks=3)
    assert _looks(watch, [0.0, 5.0]) == [False, False]  # a stalled loop: one look, 5 s on
    assert watch.look(5.2, True, 0)
    watch.again()  # the store had work after all
    assert _looks(watch, [6.0, 6.2, 6.4]) == [False] * 3


def test_the_settle_time_covers_two_flushes() -> None:
    assert settle_of(load(None, ["crawl.flush_interval=2"])) == pytest.approx(4.0 + LOOK_EVERY)
    assert settle_of(load(None, ["crawl.flush_interval=0.1"])) == 1.0


def test_a_crawl_that_ended_itself_lets_its_requests_finish() -> None:
    config = load(None, ["fetch.total_timeout=30", "crawl.parse_timeout=5"])
    assert grace("until-done", config, None, float("inf")) == 35.0
    assert grace("max_pages", config, 60.0, 3.0) == 3.0  # within the duration still
    assert grace("signal", config, None, float("inf")) == 2.0
    assert grace("duration", config, 10.0, 0.5) == 0.5


# -- at rest ----------------------------------------------------------------------------------


def test_a_site_lane_is_at_rest_when_it_holds_nothing_and_its_store_had_nothing() -> None:
    config = load()
    lane = new_lane("a.test", config)
    assert not site_at_rest(lane, hops=False)  # its first refill has not come back
    lane.store_empty = True
    assert site_at_rest(lane, hops=False)
    assert not site_at_rest(lane, hops=True)  # another site's robots.txt hop waits for it
    lane.refill_requested = True
    assert not site_at_rest(lane, hops=False)
    lane.refill_requested = False
    lane.queue.append(LeasedUrl(1, "http://a.test/", "a.test", 0, 0))
    assert not site_at_rest(lane, hops=False)
    lane.suspended_reason = "crawl-delay-too-long"  # suspended for the run: no work left
    assert site_at_rest(lane, hops=False)
    lane.suspended_reason = None
    lane.queue.clear()
    lane.sched.phase = Phase.WAITING  # a backoff's pause, a retry, robots.txt asked again
    assert not site_at_rest(lane, hops=False)


def test_the_store_names_the_sites_with_work_their_lanes_did_not_see(tmp_path: Path) -> None:
    store = SqliteFrontier(tmp_path / "f.sqlite3")
    try:
        wanted = [
            "a.test/new",
            "b.test/old",
            "c.test/new",
            "d.test/new",
            "d.test/old",
            "e.test/old",
        ]
        urls = [NewUrl(f"http://{u}", f"http://{u}", u.split("/")[0], 1) for u in wanted]
        store.write_batch(urls, [], [], T0)
        ids = {(u.site, u.fetch_url.rsplit("/", 1)[1]): n + 1 for n, u in enumerate(urls)}
        leased = store.lease_due(10, ["b.test", "d.test", "e.test"], T0)
        assert sum(map(len, leased.values())) == 4
        fetched = [ids["b.test", "old"], ids["d.test", "old"], ids["e.test", "old"]]
        store.record_fetch([Outcome(i, UrlStatus.DONE, 200, T0, "f") for i in fetched])
        store.release_leases(ids=[ids["d.test", "new"]])
        sites = ["a.test", "b.test", "c.test", "d.test", "e.test"]
        # Now: a's and c's new URLs are due, b's and e's refreshes are in the future.
        assert due_sites(store, sites, set(), T0 + 1, 16) == ["a.test", "c.test", "d.test"]
        assert due_sites(store, sites, {"c.test", "d.test"}, T0 + 1, 16) == ["a.test"]
        # Weeks later the refreshes are due: a full site fetches those.
        later = T0 + 200 * DAY
        assert due_sites(store, sites, {"c.test", "d.test"}, later, 16) == [
            "a.test",
            "b.test",
            "d.test",
            "e.test",
        ]
    finally:
        store.close()


# -- the watch on the lanes -------------------------------------------------------------------


async def test_the_watch_ends_the_crawl_once_its_work_is_done_and_written(tmp_path: Path) -> None:
    config = load(None, ["limits.origin.rate=1000", "limits.site.rate=10"])
    h = Lanes(config, tmp_path)
    h.start()
    try:
        site = h.site("a.test", ["/a", "/b", "/c"])
        stopped: list[tuple[float, str]] = []
        parts = SimpleNamespace(
            config=config,
            seed=h.seed,
            tasks=h.tasks,
            frontier=h.frontier,
            discovery=h.discovery,
            stats=h.stats,
            timer=h.timer,
            budget=None,
        )
        stages = SimpleNamespace(
            site_lanes=h.site_lanes, media=h.media, feeder=SimpleNamespace(budget=None)
        )
        watch = EndWatch(parts, stages, True, lambda why: stopped.append((h.timer.now(), why)))
        task = asyncio.create_task(watch.run())
        h.pages.arm(site)
        await h.timer.advance(5.0, step=LOOK_EVERY)
        assert len(h.starts("a.test")) == 3
        assert stopped == []  # its outcomes are not in the store yet: not at rest
        await h.frontier.flush(h.discovery.drain)
        flushed = h.timer.now()
        for _ in range(100):  # the store's last word is a real thread's call: real time too
            await h.timer.advance(LOOK_EVERY)
            await asyncio.sleep(0.01)
            if stopped:
                break
        assert [why for _t, why in stopped] == ["until-done"]
        assert stopped[0][0] >= flushed + settle_of(config)  # never before the settle time
        await asyncio.wait_for(task, 1.0)
    finally:
        await h.close()
