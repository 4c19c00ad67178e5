"""The crawl's fast sources on fake time (``pipeline.feed.fresh_sources``): visits in, the
store's schedule and the priority path out."""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Sequence
from pathlib import Path

from courtier.content.parse import Link, ParsedPage
from courtier.frontier.base import (
    FrontierError,
    LeasedUrl,
    NewUrl,
    Outcome,
    UrlLane,
    UrlStatus,
)
from courtier.frontier.fresh import FreshPolicy, FreshSource, FreshState
from courtier.frontier.sqlite_store import SqliteFrontier
from courtier.pipeline.feed.fresh_sources import FreshSources
from courtier.pipeline.feed.frontier_io import FrontierIO
from courtier.pipeline.lanes.site import SiteLane
from courtier.pipeline.scheduling.timer import FakeTimer


def _setup(tmp_path: Path, *, learn: bool = True) -> tuple[FreshSources, FakeTimer, list[str]]:
    timer = FakeTimer()
    store = SqliteFrontier(tmp_path / "f.sqlite3")
    urls = [
        NewUrl(f"http://{s}/{p}", f"http://{s}/{p}", s, d, 0, UrlLane.DISCOVERY)
        for s in ("news.test", "still.test")
        for p, d in (("", 0), ("about", 1))
    ]
    store.write_batch(urls, [], [], timer.now())
    frontier = FrontierIO(store, queue_per_site=16, now=timer.now)
    fresh = FreshSources(FreshPolicy(), frontier, timer, learn=learn)
    urged: list[str] = []
    fresh.urge = urged.append
    return fresh, timer, urged


def _item(fresh: FreshSources, url: str, depth: int) -> LeasedUrl:
    schedule = fresh.frontier.store.schedule_of(url)
    assert schedule is not None
    return LeasedUrl(schedule.id, url, schedule.site, depth, 0)


async def _look(fresh: FreshSources, url: str, depth: int, fingerprint: str, new: int) -> None:
    item = _item(fresh, url, depth)
    fresh.frontier.store.record_fetch(
        [Outcome(item.id, UrlStatus.DONE, 200, fresh.timer.now(), fingerprint)]
    )
    fresh.page(SiteLane(item.site, item.site), item, ParsedPage(fingerprint=fingerprint), new)
    await fresh.save()


async def test_a_home_page_with_news_on_every_look_is_a_source_looked_at_every_minute(
    tmp_path: Path,
) -> None:
    fresh, timer, urged = _setup(tmp_path)
    store = fresh.frontier.store
    try:
        for n in range(4):
            await _look(fresh, "http://news.test/", 0, f"v{n}", 0 if n == 0 else 3)
            schedule = store.schedule_of("http://news.test/")
            assert schedule is not None
            assert (schedule.lane, schedule.freshlane) == (UrlLane.FRESHLANE, True)
            assert schedule.next_due == timer.now() + 60.0
            # The site is urged on the priority path once the look falls due, not before.
            await timer.advance(59.5)
            assert urged == ["news.test"] * n
            await timer.advance(2.0)
            assert urged == ["news.test"] * (n + 1)
        (source,) = store.fresh_sources()
        assert (source.state, source.evidence, source.interval) == (
            FreshState.SOURCE,
            "home page",
            60.0,
        )
        assert (source.visits, source.productive) == (3, 3)  # the first look only records
        # A page of the site that is neither a home page nor a feed is never watched.
        await _look(fresh, "http://news.test/about", 1, "a", 0)
        assert [s.url for s in store.fresh_sources()] == ["http://news.test/"]
    finally:
        await fresh.frontier.close()


async def test_a_still_home_page_is_looked_at_less_often_then_handed_back(tmp_path: Path) -> None:
    fresh, timer, urged = _setup(tmp_path)
    store = fresh.frontier.store
    try:
        looks = []
        for _ in range(4):
            looks.append(timer.now())
            await _look(fresh, "http://still.test/", 0, "same", 0)
            schedule = store.schedule_of("http://still.test/")
            assert schedule is not None and schedule.next_due is not None
            await timer.advance(schedule.next_due - timer.now() + 2)
        gaps = [b - a for a, b in itertools.pairwise(looks)]
        assert [round(g) for g in gaps] == [62, 92, 137]
        (source,) = store.fresh_sources()
        assert source.state is FreshState.QUIET
        schedule = store.schedule_of("http://still.test/")
        assert schedule is not None
        assert (schedule.lane, schedule.freshlane) == (UrlLane.REFRESH, False)
        assert schedule.next_due is not None and schedule.next_due >= looks[-1] + 86_400
        assert urged == ["still.test"] * 3  # never urged after it went quiet
    finally:
        await fresh.frontier.close()


async def test_the_hand_list_wins_and_learning_can_be_turned_off(tmp_path: Path) -> None:
    fresh, timer, urged = _setup(tmp_path, learn=False)
    store = fresh.frontier.store
    try:
        hand = NewUrl("http://still.test/", "http://still.test/", "still.test", 0, 0)
        fresh.hand_interval = 300.0
        await fresh.start([hand])
        for _ in range(3):
            await _look(fresh, "http://still.test/", 0, "same", 0)
            await _look(fresh, "http://news.test/", 0, f"v{timer.now()}", 5)
            await timer.advance(301)
        sources = store.fresh_sources()
        assert [(s.url, s.state, s.interval) for s in sources] == [
            ("http://still.test/", FreshState.HAND, 300.0)
        ]
        assert urged == ["still.test"] * 3
    finally:
        await fresh.frontier.close()


async def test_what_was_learned_survives_a_restart(tmp_path: Path) -> None:
    fresh, timer, _ = _setup(tmp_path)
    try:
        for n in range(3):
            await _look(fresh, "http://news.test/", 0, f"v{n}", 2)
            await timer.advance(61)
    finally:
        await fresh.frontier.close()
    again = FreshSources(
        FreshPolicy(),
        FrontierIO(SqliteFrontier(tmp_path / "f.sqlite3"), queue_per_site=16, now=timer.now),
        timer,
    )
    try:
        await again.start([])
        (source,) = again.sources.values()
        assert source.state is FreshState.SOURCE
        # The run's first look only records; judging resumes with the next one.
        await _look(again, "http://news.test/", 0, "v9", 40)
        assert again.sources[source.url_id].visits == source.visits
        await asyncio.sleep(0)
    finally:
        await again.frontier.close()


async def test_a_feed_is_judged_by_what_it_lists(tmp_path: Path) -> None:
    fresh, timer, urged = _setup(tmp_path)
    store = fresh.frontier.store
    store.write_batch(
        [NewUrl("http://news.test/feed", "http://news.test/feed", "news.test", 1, 0)],
        [],
        [],
        timer.now(),
    )
    try:
        item = _item(fresh, "http://news.test/feed", 1)
        lane = SiteLane("news.test", "news.test")
        for n in range(3):
            links = [Link(f"http://news.test/n/{m}", f"http://news.test/n/{m}", "news.test")
                     for m in range(n, n + 3)]  # fmt: skip
            feed = ParsedPage(links=links, fields={"format": "feed"})  # no fingerprint
            fresh.page(lane, item, feed, 0 if n == 0 else 1)
            await timer.advance(61.5)
        await fresh.save()
        (source,) = store.fresh_sources()
        assert (source.evidence, source.state, source.productive) == ("feed", FreshState.SOURCE, 2)
        assert urged == ["news.test"] * 3
    finally:
        await fresh.frontier.close()


class _Refusing(SqliteFrontier):
    """A store that refuses ``refuse`` writes of the fast sources (a full disk, a lost
    server past ``store_outage``); ``gate``, when set, holds a write until it is opened."""

    refuse = 0
    gate: threading.Event | None = None

    def save_fresh(self, sources: Sequence[FreshSource], scheduled: Sequence[FreshSource]) -> None:
        if self.gate is not None:
            self.gate.wait(10.0)
        if self.refuse:
            self.refuse -= 1
            raise FrontierError("disk full")
        super().save_fresh(sources, scheduled)


def _refusing_setup(tmp_path: Path) -> tuple[FreshSources, FakeTimer, _Refusing]:
    fresh, timer, _ = _setup(tmp_path)
    fresh.frontier.store.close()
    store = _Refusing(tmp_path / "f.sqlite3")
    fresh.frontier.store = store
    return fresh, timer, store


async def test_what_the_store_could_not_take_is_written_at_the_next_round(
    tmp_path: Path,
) -> None:
    fresh, timer, store = _refusing_setup(tmp_path)
    try:
        store.refuse = 1
        await _look(fresh, "http://news.test/", 0, "v0", 0)  # its save is refused
        assert store.fresh_sources() == []
        await timer.advance(1.0)
        await fresh.save()  # the next round: nothing new was learned meanwhile
        (source,) = store.fresh_sources()
        assert (source.url, source.state) == ("http://news.test/", FreshState.PROBING)
        schedule = store.schedule_of("http://news.test/")
        assert schedule is not None
        assert (schedule.lane, schedule.freshlane) == (UrlLane.FRESHLANE, True)
        assert schedule.next_due == source.next_visit
    finally:
        await fresh.frontier.close()


async def test_a_schedule_refused_is_written_even_after_a_later_visit_that_had_none(
    tmp_path: Path,
) -> None:
    """A page leaves the freshlane on a visit whose save is refused; it is visited again (as
    quiet, nothing to schedule) while that save is out: its row still goes back to ordinary
    refresh at the next round."""
    fresh, timer, store = _refusing_setup(tmp_path)
    url = "http://still.test/"
    try:
        for _ in range(3):
            await _look(fresh, url, 0, "same", 0)
            await timer.advance(200.0)
        item = _item(fresh, url, 0)
        lane = SiteLane(item.site, item.site)
        fresh.page(lane, item, ParsedPage(fingerprint="same"), 0)  # it leaves: quiet
        assert fresh.sources[item.id].state is FreshState.QUIET
        store.refuse, store.gate = 1, threading.Event()
        saving = asyncio.ensure_future(fresh.save())
        await asyncio.sleep(0.05)  # the write is on the store's thread, held
        fresh.page(lane, item, ParsedPage(fingerprint="same"), 0)  # quiet: nothing to schedule
        store.gate.set()
        await saving
        schedule = store.schedule_of(url)
        assert schedule is not None and schedule.lane is UrlLane.FRESHLANE  # refused: as it was
        await fresh.save()
        schedule = store.schedule_of(url)
        assert schedule is not None
        assert (schedule.lane, schedule.freshlane) == (UrlLane.REFRESH, False)
        (source,) = store.fresh_sources()
        assert source.state is FreshState.QUIET
    finally:
        await fresh.frontier.close()
