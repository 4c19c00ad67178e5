"""The Python API's crawls that end by themselves: ``Crawler(until_done=True)`` and the
``[crawl]`` budgets, against two small loopback sites (every page known in advance)."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from courtier import CrawlConfig, Crawler
from courtier.net.resolve import StaticResolver

HOSTS = ("a.test", "b.test")
PAGES = 8
SETTINGS: dict[str, Any] = {
    "crawl": {"flush_interval": 0.05, "parse_workers": 1},
    "limits": {"site": {"rate": 20, "slot_width": 0.05}, "origin": {"rate": 1000}},
    "frontier": {"sitemap_fallback": False},
}


@pytest.fixture
async def served() -> AsyncIterator[tuple[int, Counter[str]]]:
    """Two loopback sites of ``PAGES`` linked pages, and what they were asked for."""
    asked: Counter[str] = Counter()

    async def page(request: web.Request) -> web.StreamResponse:
        asked[f"{request.host.split(':')[0]}{request.path}"] += 1
        if request.path == "/robots.txt":
            raise web.HTTPNotFound()
        number = int(request.path.strip("/") or 0)
        links = "".join(f'<a href="/{n}">{n}</a>' for n in range(number + 1, PAGES))
        return web.Response(text=f"<title>{number}</title>{links}", content_type="text/html")

    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", page)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    yield runner.addresses[0][1], asked
    await runner.cleanup()


def _crawler(tmp_path: Path, port: int, crawl: dict[str, Any], **options: Any) -> Crawler:
    settings = {**SETTINGS, "crawl": {**SETTINGS["crawl"], **crawl}}
    return Crawler(
        CrawlConfig.from_mapping(settings),
        seeds=[f"http://{host}:{port}/" for host in HOSTS],
        store=tmp_path / "frontier.sqlite3",
        allow_net=["127.0.0.1/32"],
        resolver=StaticResolver({host: ["127.0.0.1"] for host in HOSTS}),
        sink=lambda _document: None,
        duration=60.0,
        **options,
    )


async def test_until_done_ends_the_crawl_once_every_page_is_fetched_once(
    tmp_path: Path, served: tuple[int, Counter[str]]
) -> None:
    port, asked = served
    stats = await _crawler(tmp_path, port, {}, until_done=True).run()
    assert stats.ended_by == "until-done"
    pages = {f"{host}/{n if n else ''}" for host in HOSTS for n in range(PAGES)}
    assert pages <= set(asked) and max(asked.values()) == 1
    assert stats.store_counts["queued"] == 0 and stats.elapsed < 30


async def test_a_budget_set_from_python_ends_the_crawl_and_holds_for_the_next(
    tmp_path: Path, served: tuple[int, Counter[str]]
) -> None:
    port, asked = served
    stats = await _crawler(tmp_path, port, {"max_pages": 5}).run()
    assert stats.ended_by == "max_pages" and stats.spent["pages"] == 5
    assert sum(n for url, n in asked.items() if not url.endswith("/robots.txt")) == 5
    before = sum(asked.values())
    again = await _crawler(tmp_path, port, {"max_pages": 5}).run()
    assert again.ended_by == "max_pages" and again.requests == 0
    assert sum(asked.values()) == before
