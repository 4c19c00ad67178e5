"""A parse hook's priority, judged by the order a loopback site is asked for its pages.

The home page links /1 ... /10. The hook gives the links of /1 (/x1, /x2, /x3) priority 3
and those of /2 (/y1, /y2, /y3) none. The site's queue holds one URL at a time
(``crawl.queue_per_site = 1``), so each next URL comes from the store's due query: the x
pages, due three days before they were found, overtake every page the home page linked
before them; the y pages, found after those, wait for them all. The hook is a module-level
function given to ``Crawler(hook=...)``, imported by name in the spawned parse workers.
"""

from __future__ import annotations

import importlib
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from courtier import CrawlConfig, Crawler
from courtier.net.resolve import StaticResolver

HOOK = textwrap.dedent(
    """
    from courtier import HookResult

    def rank(page):
        return HookResult(priority=3 if page.url.endswith("/1") else 0)
    """
)
LINKS = {
    "/": [f"/{n}" for n in range(1, 11)],
    "/1": ["/x1", "/x2", "/x3"],
    "/2": ["/y1", "/y2", "/y3"],
}


@pytest.fixture
async def asked() -> AsyncIterator[tuple[int, list[str]]]:
    """One loopback site (``LINKS``) and the paths it was asked for, in order."""
    paths: list[str] = []

    async def page(request: web.Request) -> web.StreamResponse:
        if request.path == "/robots.txt":
            raise web.HTTPNotFound()
        paths.append(request.path)
        links = "".join(f'<a href="{href}">{href}</a>' for href in LINKS.get(request.path, []))
        return web.Response(text=f"<title>{request.path}</title>{links}", content_type="text/html")

    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", page)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    yield runner.addresses[0][1], paths
    await runner.cleanup()


async def test_a_pages_priority_puts_its_links_ahead_of_those_found_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, asked: tuple[int, list[str]]
) -> None:
    port, paths = asked
    (tmp_path / "rank_hook_api.py").write_text(HOOK)
    monkeypatch.syspath_prepend(str(tmp_path))  # spawned parse workers inherit sys.path
    rank = importlib.import_module("rank_hook_api").rank
    settings = {
        "crawl": {"flush_interval": 0.05, "parse_workers": 1, "queue_per_site": 1},
        "limits": {"site": {"rate": 5, "slot_width": 0.05}, "origin": {"rate": 1000}},
        "frontier": {"sitemap_fallback": False},
        "warc": {"enabled": False},
    }
    crawler = Crawler(
        CrawlConfig.from_mapping(settings),
        seeds=[f"http://a.test:{port}/"],
        store=tmp_path / "frontier.sqlite3",
        allow_net=["127.0.0.1/32"],
        resolver=StaticResolver({"a.test": ["127.0.0.1"]}),
        sink=lambda _document: None,
        duration=60.0,
        until_done=True,
        hook=rank,
    )
    stats = await crawler.run()
    assert stats.ended_by == "until-done" and not stats.hook_errors
    assert sorted(paths) == sorted({"/", *(p for links in LINKS.values() for p in links)})
    at = {path: index for index, path in enumerate(paths)}
    xs, ys = [at[f"/x{n}"] for n in (1, 2, 3)], [at[f"/y{n}"] for n in (1, 2, 3)]
    assert max(xs) < at["/10"], paths  # ahead of the home page's links still queued
    assert min(ys) > at["/10"], paths  # no priority: after everything found before them
    assert paths[-3:] == ["/y1", "/y2", "/y3"], paths
