"""A whole crawl behind a CONNECT proxy with credentials: every page arrives through the
proxy's tunnels, each to the address the guard checked; a seed resolving to a private address
is refused by the guard before the proxy hears of it; the proxy's password is in no log and
no WARC record. The proxy (127.0.0.1) is reachable without being allow-listed: it is the
operator's; the site (127.0.0.2) is the only allow-listed network."""

from __future__ import annotations

import asyncio
import base64
import gzip
import logging
from pathlib import Path
from typing import Any

import pytest
from loopback_proxy import LoopbackProxy, proxying, site

from courtier import CrawlConfig, Crawler
from courtier.net.resolve import StaticResolver

PASSWORD = "hunter2-proxy"


class Recording(StaticResolver):
    """The guard's resolver, noting which names it was asked."""

    def __init__(self, table: dict[str, list[str]]) -> None:
        super().__init__(table)
        self.asked: list[str] = []

    async def resolve(self, host: str) -> tuple[str, ...]:
        self.asked.append(host)
        return await super().resolve(host)


async def test_a_crawl_behind_a_proxy(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    documents: list[dict[str, Any]] = []
    with_credentials = LoopbackProxy(credentials=f"crawler:{PASSWORD}")
    async with proxying(with_credentials) as proxy, site("127.0.0.2") as target:
        config = CrawlConfig.from_mapping(
            {
                "crawl": {"flush_interval": 0.05},
                "frontier": {"sitemap_fallback": False},
                "fetch": {"proxy": f"http://crawler:{PASSWORD}@127.0.0.1:{proxy.port}"},
            }
        )
        resolver = Recording({"shop.test": ["127.0.0.2"], "intranet.test": ["10.0.0.1"]})
        crawl = Crawler(
            config,
            seeds=[f"http://shop.test:{target.port}/", f"http://intranet.test:{target.port}/"],
            out=tmp_path,
            allow_net=["127.0.0.2/32"],
            resolver=resolver,
            sink=documents.append,
            duration=30.0,
        )

        def done() -> bool:
            page = f"http://shop.test:{target.port}/"
            fetched = any(d["url"] == page for d in documents)
            return fetched and "intranet.test" in resolver.asked

        async def stop_when_done() -> None:
            while not done():  # noqa: ASYNC110 (a list filling up is no event to wait on)
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.3)  # time enough for a CONNECT that should never come
            crawl.stop()

        watcher = asyncio.create_task(stop_when_done())
        try:
            stats = await crawl.run()
        finally:
            watcher.cancel()
    assert stats.ended_by == "stopped"
    fetched = {d["url"]: d["status"] for d in documents}
    assert fetched.get(f"http://shop.test:{target.port}/") == 200, documents
    assert not any("intranet.test" in url for url in fetched)  # refused: never fetched
    assert proxy.connects and set(proxy.connects) == {f"127.0.0.2:{target.port}"}
    assert all(b"Host: shop.test:" in head for head in target.heads)
    token = base64.b64encode(f"crawler:{PASSWORD}".encode()).decode()
    warcs = sorted((tmp_path / "warc").glob("*.warc.gz"))
    archived = b"".join(gzip.decompress(path.read_bytes()) for path in warcs)
    assert b"shop.test" in archived  # the archive was written, and holds the page
    for secret in (PASSWORD, token):
        assert secret not in caplog.text
        assert secret.encode() not in archived
        assert all(secret not in repr(d) for d in documents)
