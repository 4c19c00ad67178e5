"""The priority path on fake time: a fast source's fresh link (or an operator's recrawl)
reaches a site holding a long backlog, and it is fetched next, not after the URLs the site
already holds; priority changes the order, never the spacing."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator
from pathlib import Path

from lane_harness import Lanes, allow_all

from courtier.config import load
from courtier.frontier.base import NewUrl, SiteState, UrlLane
from courtier.pipeline.lanes.feeding import Feeder
from courtier.pipeline.lanes.seeding import new_lane
from courtier.pipeline.lanes.site import OriginStatus

FAST = ["limits.origin.rate=1000", "limits.site.rate=1"]


class NoSink:
    def flush(self) -> None:
        pass


async def _store_turns() -> None:
    """Real time for the store's thread (leases, writes) between fake-time steps."""
    for _ in range(10):
        await asyncio.sleep(0.02)


def _url(path: str, lane: UrlLane = UrlLane.DISCOVERY) -> NewUrl:
    return NewUrl(f"http://a.test{path}", f"http://a.test{path}", "a.test", 1, 0, lane)


@contextlib.asynccontextmanager
async def _backlog(tmp_path: Path) -> AsyncIterator[tuple[Lanes, Feeder]]:
    """Lanes and their feeder's refills, with a.test holding 500 URLs in the store."""
    h = Lanes(load(None, FAST), tmp_path, allow_all)
    h.start()
    feeder = Feeder(
        h.config,
        frontier=h.frontier,
        sites=h.sites,
        site_lanes=h.site_lanes,
        pages=h.pages,
        discovery=h.discovery,
        sink=NoSink(),  # type: ignore[arg-type]
        stats=h.stats,
        timer=h.timer,
    )
    refills = asyncio.create_task(feeder.refill_loop())
    try:
        store = h.frontier.store
        store.add_sites(["a.test"], SiteState.SEED, h.timer.now())
        store.write_batch([_url(f"/old/{n}") for n in range(500)], [], [], h.timer.now())
        yield h, feeder
    finally:
        refills.cancel()
        await asyncio.gather(refills, return_exceptions=True)
        await h.close()


async def test_a_fresh_link_overtakes_a_500_url_backlog(tmp_path: Path) -> None:
    async with _backlog(tmp_path) as (h, feeder):
        lane = new_lane("a.test", h.config, start=h.timer.now())
        lane.origin_status = OriginStatus.RESOLVED
        h.sites["a.test"] = lane
        h.discovery.scope.add("a.test")
        h.site_lanes.request_refill(lane)
        await _store_turns()
        held = h.config.crawl.queue_per_site
        assert len(lane.queue) == held
        for _ in range(5):  # robots.txt, then the backlog at one request a second
            await h.timer.advance(1.0)
            await _store_turns()
        assert len(h.starts("a.test")) >= 3
        # A fast source's page revealed a fresh link: written with the next flush.
        h.discovery.new_urls.append(_url("/fresh", UrlLane.FRESHLANE))
        found = h.timer.now()
        await feeder.flush()
        await _store_turns()
        for _ in range(4):
            await h.timer.advance(1.0)
            await _store_turns()
        pages = [(t, url) for t, url in h.fetcher.started if url.startswith("http://a.test/")]
        fresh = [t for t, url in pages if url.endswith("/fresh")]
        assert fresh, pages
        # Fetched next (one request may have been booked already), long before the URLs the
        # site held ran out, and still one interval after the request before it.
        old_after = [t for t, url in pages if "/old/" in url and found <= t < fresh[0]]
        assert len(old_after) <= 1, old_after
        assert len(lane.queue) >= held - 10  # the backlog it held is still there, behind
        starts = [t for t, _url in pages]
        assert all(b - a >= 1.0 - 1e-9 for a, b in itertools.pairwise(starts))


async def test_an_operators_recrawl_overtakes_a_500_url_backlog(tmp_path: Path) -> None:
    """``courtier recrawl`` (or the fastlane endpoint) logs a recrawl in the store while the
    site works through a long backlog: the poll that reads it leases the URL at once, on
    the priority path, and it is fetched next, still one interval after the request before."""
    from test_site_hold_fast import PinnedOrigins

    from courtier.frontier.fastlane import recrawl
    from courtier.pipeline.lanes.controls import Controls
    from courtier.url import parse_url

    async with _backlog(tmp_path) as (h, feeder):
        store = h.frontier.store
        controls = Controls(h.config, h.frontier, h.seed, h.timer, h.stats)
        await h.frontier.call(controls.load)
        controls.wire(h.pages, feeder, PinnedOrigins())  # type: ignore[arg-type]
        lane = new_lane("a.test", h.config, start=h.timer.now())
        lane.origin_status = OriginStatus.RESOLVED
        h.sites["a.test"] = lane
        h.discovery.scope.add("a.test")
        h.site_lanes.request_refill(lane)
        await _store_turns()
        held = h.config.crawl.queue_per_site
        for _ in range(5):  # robots.txt, then the backlog at one request a second
            await h.timer.advance(1.0)
            await _store_turns()
        assert len(h.starts("a.test")) >= 3
        asked = h.timer.now()
        url = parse_url("http://a.test/sale")
        assert recrawl(store, [url], command="courtier recrawl", actor="me", now=asked) == 1
        await controls.poll()
        await _store_turns()
        for _ in range(4):
            await h.timer.advance(1.0)
            await _store_turns()
        pages = [(t, u) for t, u in h.fetcher.started if u.startswith("http://a.test/")]
        sale = [t for t, u in pages if u.endswith("/sale")]
        assert sale, pages
        old_after = [t for t, u in pages if "/old/" in u and asked <= t < sale[0]]
        assert len(old_after) <= 1, old_after  # (one may have been booked already)
        assert len(lane.queue) >= held - 10  # the backlog it held is still there, behind
        starts = [t for t, _u in pages]
        assert all(b - a >= 1.0 - 1e-9 for a, b in itertools.pairwise(starts))
