"""Happy Eyeballs on loopback: a host whose first address hangs is reached at its second after
the attempt delay, not after the connect timeout; directly and through a CONNECT proxy. Only
the addresses the guard approved are ever tried."""

from __future__ import annotations

import time
from dataclasses import replace

from aiohttp import web
from loopback_proxy import LoopbackProxy, blackhole, proxying

from courtier.config import FetchSection
from courtier.net.fetch import Fetcher
from loopback import serving

DELAY = 0.2
HANGS, ANSWERS, REFUSES = "127.0.0.3", "127.0.0.1", "127.0.0.4"


def settings(**changes: object) -> FetchSection:
    base = replace(FetchSection(), connect_timeout=5.0, total_timeout=10.0)
    return replace(base, happy_eyeballs_delay=DELAY, **changes)


async def page(request: web.Request) -> web.Response:
    return web.Response(text="<html>here</html>", content_type="text/html")


async def test_a_hanging_first_address_hands_over_after_the_delay() -> None:
    async with serving(page) as port:
        with blackhole(HANGS, port):
            tried: list[str] = []

            def allowed(address: str) -> bool:
                tried.append(address)
                return True

            async with Fetcher(settings(), allowed) as fetcher:
                began = time.monotonic()
                result = await fetcher.fetch(f"http://he.test:{port}/", "he.test", (HANGS, ANSWERS))
                took = time.monotonic() - began
    assert result.status == 200, result.error
    assert result.address == ANSWERS  # the winner's address is the one reported
    assert result.phases.connect is not None and DELAY <= result.phases.connect < 1.0
    assert took < 2.0  # the connect timeout (5 s) was never waited for
    assert tried == [HANGS, ANSWERS]  # exactly the addresses approved, each checked


async def test_a_refusing_first_address_hands_over_at_once() -> None:
    async with serving(page) as port, Fetcher(settings(), lambda a: True) as fetcher:
        result = await fetcher.fetch(f"http://he.test:{port}/", "he.test", (REFUSES, ANSWERS))
    assert result.status == 200, result.error
    assert result.address == ANSWERS
    assert result.phases.connect is not None and result.phases.connect < DELAY


async def test_the_race_runs_over_the_proxys_tunnels_each_to_a_pinned_address() -> None:
    async with serving(page) as port, proxying(LoopbackProxy()) as proxy:
        with blackhole(HANGS, port):
            fetch_settings = settings(proxy=f"http://127.0.0.1:{proxy.port}")
            async with Fetcher(fetch_settings, lambda a: True) as fetcher:
                result = await fetcher.fetch(f"http://he.test:{port}/", "he.test", (HANGS, ANSWERS))
    assert result.status == 200, result.error
    assert proxy.connects == [f"{HANGS}:{port}", f"{ANSWERS}:{port}"]
    assert result.address == ANSWERS
    assert result.phases.connect is not None and DELAY <= result.phases.connect < 1.0


async def test_when_every_address_hangs_the_connect_timeout_ends_it() -> None:
    async with serving(page) as port:
        with blackhole(HANGS, port):
            fetch_settings = settings(connect_timeout=0.5)
            async with Fetcher(fetch_settings, lambda a: True) as fetcher:
                result = await fetcher.fetch(f"http://he.test:{port}/", "he.test", (HANGS,))
    assert result.status is None
    assert (result.error or "").startswith(f"ConnectTimeout: no connection to {HANGS} port")
