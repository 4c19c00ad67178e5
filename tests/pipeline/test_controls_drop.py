"""An operator's drop and opt-out as a worker applies them, on fake time: a dropped site's
leased URLs go back to the store (SQLite, and PostgreSQL under the worker's shard lease), and
an opted-out host gets no request of any kind, each refusal a row of the request log."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from lane_harness import Lanes, allow_all
from test_site_hold_fast import FAST, Feeding, PinnedOrigins

from courtier.config import load
from courtier.frontier.base import FrontierStore, NewUrl
from courtier.frontier.controls import ControlAction, SiteControl
from courtier.frontier.postgres_store import PostgresFrontier
from courtier.frontier.sqlite_store import SqliteFrontier
from courtier.pipeline.answers.fetching import OPTED_OUT, Answer
from courtier.pipeline.feed.frontier_io import FrontierIO
from courtier.pipeline.lanes.controls import Controls
from courtier.pipeline.lanes.media_places import Placement
from courtier.pipeline.lanes.render_media import ask_media
from courtier.pipeline.lanes.site import RenderFetch
from courtier.politeness.keys import KeyType, LimitKey, MediaSource
from courtier.politeness.limiter.base import SHARD_LEASES, Fence
from courtier.url import parse_url

OWNER = "worker-a"


@pytest.fixture(params=["sqlite", "postgres"])
def store_and_fence(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[FrontierStore, Fence | None]]:
    """A frontier store and the fence a worker's lanes carry there: none on SQLite (one
    machine), on PostgreSQL the shard lease this worker holds (shard 0, token 1)."""
    if request.param == "sqlite":
        store = SqliteFrontier(tmp_path / "controls.sqlite3")
        try:
            yield store, None
        finally:
            store.close()
        return
    dsn: str = request.getfixturevalue("postgres_dsn")
    schema = f"t_{uuid.uuid4().hex[:12]}"
    pg = PostgresFrontier(dsn, schema=schema)
    other = psycopg.connect(dsn, autocommit=True)
    try:
        other.execute(f"SET search_path TO {schema}".encode())
        other.execute(
            f"CREATE TABLE {SHARD_LEASES} (shard integer PRIMARY KEY, owner text, "
            "token bigint NOT NULL DEFAULT 0, expires_at double precision NOT NULL DEFAULT 0)"
            "".encode()
        )
        other.execute(f"INSERT INTO {SHARD_LEASES} VALUES (0, %s, 1, 0)".encode(), (OWNER,))
        yield pg, Fence(0, OWNER, 1)
    finally:
        pg.close()
        other.execute(f"DROP SCHEMA {schema} CASCADE".encode())
        other.close()


def _act(store: FrontierStore, action: str, control: SiteControl, state: str, now: float) -> None:
    record = ControlAction(action, control.site, {}, "test", "me", now)
    store.record_control(record, control, {control.site: state})


async def test_a_dropped_sites_leased_urls_go_back_to_the_store(
    tmp_path: Path, store_and_fence: tuple[FrontierStore, Fence | None]
) -> None:
    """``site drop`` and ``seed remove`` of sites whose URLs this worker has leased: the
    poll that reads them gives those URLs back (under the lanes' fence, which still holds),
    due again for whoever crawls the site next; a site still crawled keeps its leases."""
    store, fence = store_and_fence
    h = Lanes(load(None, FAST), tmp_path, allow_all)
    h.start()
    frontier = FrontierIO(store, queue_per_site=16)
    try:
        now = h.timer.now()
        sites = ("a.test", "b.test", "c.test")
        urls = [NewUrl(f"http://{s}/p{n}", f"http://{s}/p{n}", s, 1) for s in sites for n in (1, 2)]
        store.write_batch(urls, [], [], now)
        fences = None if fence is None else dict.fromkeys(sites, fence)
        leased = store.lease_due(10, list(sites), now, fences)
        assert {site: len(items) for site, items in leased.items()} == dict.fromkeys(sites, 2)
        controls = Controls(h.config, frontier, h.seed, h.timer, h.stats)
        await frontier.call(controls.load)
        controls.wire(h.pages, Feeding(h.site_lanes.look_again), PinnedOrigins())  # type: ignore[arg-type]
        for site in sites:
            lane = h.site(site, [])
            lane.fence = fence
            lane.queue.extend(leased[site])
            h.seed.scope.add(site)
        _act(store, "site drop", SiteControl("a.test"), "horizon", now)
        _act(store, "seed remove", SiteControl("b.test"), "horizon", now)
        await controls.poll()
        assert set(h.seed.lanes) == {"c.test"}
        again = store.lease_due(10, list(sites), now + 1.0, fences)
        assert sorted(u.fetch_url for s in ("a.test", "b.test") for u in again.get(s, [])) == [
            f"http://{s}/p{n}" for s in ("a.test", "b.test") for n in (1, 2)
        ]
        assert "c.test" not in again  # still this worker's, still leased
    finally:
        await frontier.close()
        await h.close()


async def test_an_opted_out_host_gets_no_request_of_any_kind_and_each_refusal_is_logged(
    tmp_path: Path,
) -> None:
    """Two hosts outside the seed that the crawl fetches from without a site lane of theirs:
    a bucket a seed page embeds images from (the media lanes) and an API a render calls
    (``[render] hosts``: a media lane too). Once their owners opt out (``site drop
    --opt-out``, read at the next poll), neither an image nor a render's request goes out
    to them, though their robots.txt allowed both; each refusal is a row of the request log."""
    media_host, api_host = "media-shop.s3.amazonaws.com", "api.shop.test"
    h = Lanes(load(None, [*FAST, "media.fetch=true"]), tmp_path, allow_all)
    h.fetch.opted_out = h.seed.opted_out  # the engine's guarded fetch reads the seed's set
    h.start()
    try:
        controls = Controls(h.config, h.frontier, h.seed, h.timer, h.stats)
        await h.frontier.call(controls.load)
        controls.wire(h.pages, Feeding(h.site_lanes.look_again), PinnedOrigins())  # type: ignore[arg-type]
        h.site("news.test", [])
        placement = Placement(MediaSource.HOST, (LimitKey(KeyType.SITE, api_host),), why="t")

        def ask(n: int) -> RenderFetch:
            """The render of a news.test page calls the API, as ``render_session`` asks."""
            url = parse_url(f"http://{api_host}/v1/{n}")
            future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
            work = RenderFetch(url.fetch_url, url.host, "fetch", 1.0, {}, future, "p", "d")
            assert ask_media(h.media, url, work, "news.test", placement)
            return work

        # Before the opt-out: each host's robots.txt, then an image and an API call.
        assert h.media.offer(f"http://{media_host}/img/1.jpg", "news.test")
        first = ask(1)
        await h.timer.advance(3.0)
        assert first.answer.done() and first.answer.result().status == 200
        before = {url for _t, url in h.fetcher.started}
        assert {f"http://{media_host}/img/1.jpg", f"http://{api_host}/v1/1"} <= before

        now = h.timer.now()
        for host in (media_host, api_host):
            _act(h.frontier.store, "site drop", SiteControl(host, opted_out=True), "opted-out", now)
        await controls.poll()
        count = len(h.fetcher.started)
        assert h.media.offer(f"http://{media_host}/img/2.jpg", "news.test")
        second = ask(2)
        await h.timer.advance(5.0)
        assert h.fetcher.started[count:] == []
        assert second.answer.done() and second.answer.result().refusal == OPTED_OUT
        refused = {(e.url, e.context.kind) for e in h.events if e.refusal == OPTED_OUT}
        assert refused == {
            (f"http://{media_host}/img/2.jpg", "media"),
            (f"http://{api_host}/v1/2", "render"),
        }
        assert h.stats.refused[OPTED_OUT] == 2
    finally:
        await h.close()
