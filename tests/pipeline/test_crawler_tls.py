"""The crawl over https: certificates verified against the configured CA, and the one each
site presented given to origin inference, where it corroborates the DNS grouping."""

from __future__ import annotations

import json
import sqlite3
import ssl
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest
import trustme
from aiohttp import web

from courtier.config import Config, CrawlSection, FetchSection, KeyLimits, LimitsSection
from courtier.inputs import parse_seed_lines
from courtier.net.guard import Guard
from courtier.net.policy import AddressPolicy
from courtier.net.resolve import StaticResolver
from courtier.origins.dns_evidence import DnsFacts
from courtier.origins.infer import OriginInference
from courtier.pipeline.engine import Engine as Crawler
from courtier.pipeline.lanes import origins_live as crawler_module
from courtier.sinks.documents import read_documents

TENANTS = ("t1.test", "t2.test")


class SharedAddressDns:
    """Both tenants on 127.0.0.1, no CNAME, no PTR: DNS alone is indeterminate."""

    async def lookup(self, host: str) -> DnsFacts:
        return DnsFacts(host, (), ("127.0.0.1",), {}, 300.0)

    def forget_ptr(self) -> None:
        pass


@pytest.fixture
async def platform(tmp_path: Path) -> AsyncIterator[tuple[int, Path]]:
    ca = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(*TENANTS).configure_cert(context)
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))

    async def handler(request: web.Request) -> web.Response:
        if request.path == "/robots.txt":
            return web.Response(status=404)
        return web.Response(
            text="<html><title>t</title><body>hi</body></html>", content_type="text/html"
        )

    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context).start()
    yield runner.addresses[0][1], ca_file
    await runner.cleanup()


async def test_the_certificates_a_crawl_sees_corroborate_its_origins(
    tmp_path: Path, platform: tuple[int, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(crawler_module, "EVIDENCE_SETTLE", 0.2)
    port, ca_file = platform
    config = Config(
        crawl=replace(CrawlSection(), flush_interval=0.05),
        fetch=replace(FetchSection(), ca_file=str(ca_file), total_timeout=5.0),
        limits=replace(
            LimitsSection(), site=KeyLimits(5.0, slot_width=0.05), origin=KeyLimits(1000.0)
        ),
    )
    policy = AddressPolicy(allow=["127.0.0.1/32"])
    guard = Guard(policy, StaticResolver({host: ["127.0.0.1"] for host in TENANTS}))
    seeds, errors = parse_seed_lines([f"https://{host}:{port}/" for host in TENANTS])
    assert not errors
    crawler = Crawler(
        config,
        store_path=tmp_path / "frontier.sqlite3",
        out_dir=tmp_path,
        guard=guard,
        address_allowed=lambda address: policy.check(address).allowed,
        seeds=seeds,
        duration=3.0,
        origins=OriginInference(SharedAddressDns()),
    )
    stats = await crawler.run()
    assert stats.tls_evidence == 2
    documents = list(read_documents(tmp_path))
    assert {d["status"] for d in documents} == {200}
    with sqlite3.connect(tmp_path / "frontier.sqlite3") as db:
        rows = dict(db.execute("SELECT site, evidence FROM origin_sites"))
    for host in TENANTS:
        kinds = {e["kind"] for e in json.loads(rows[host])}
        assert "tls" in kinds, rows[host]
