"""https through the fetcher: certificates verified (system CAs plus fetch.ca_file), and the
certificate a server presented returned as origin evidence."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest
import trustme
from aiohttp import web

from courtier.config import FetchSection
from courtier.net.fetch import Fetcher
from courtier.origins.tls_evidence import tls_facts, tls_relation

HOSTS = ("shop-a.platform.test", "shop-b.platform.test")


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
async def tls_server(ca: trustme.CA) -> AsyncIterator[int]:
    """One server presenting one certificate for both tenants, like a platform."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(*HOSTS).configure_cert(context)

    async def handler(request: web.Request) -> web.Response:
        return web.Response(text="<html>tenant</html>", content_type="text/html")

    app = web.Application()
    app.router.add_get("/", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    yield runner.addresses[0][1]
    await runner.cleanup()


def _settings(ca_file: str = "") -> FetchSection:
    return replace(FetchSection(), total_timeout=10.0, ca_file=ca_file)


async def test_https_returns_the_verified_certificate_as_evidence(
    tls_server: int, ca: trustme.CA, tmp_path: Path
) -> None:
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    facts = []
    async with Fetcher(_settings(str(ca_file)), lambda _a: True) as fetcher:
        for host in HOSTS:
            result = await fetcher.fetch(f"https://{host}:{tls_server}/", host, ("127.0.0.1",))
            assert result.status == 200, result.error
            assert result.peercert is not None and result.peercert_der
            facts.append(tls_facts(result.peercert, result.peercert_der))
    assert set(HOSTS) <= set(facts[0].san)
    assert facts[0].fingerprint == facts[1].fingerprint
    relation = tls_relation(HOSTS[0], facts[0], HOSTS[1], facts[1])
    assert relation is not None and relation.weight > 0  # one certificate: corroboration


async def test_an_untrusted_certificate_is_an_error_not_a_page(tls_server: int) -> None:
    async with Fetcher(_settings(), lambda _a: True) as fetcher:
        host = HOSTS[0]
        result = await fetcher.fetch(f"https://{host}:{tls_server}/", host, ("127.0.0.1",))
    assert result.status is None and result.error
    assert "certificate" in result.error.lower() or "ssl" in result.error.lower()


async def test_plain_http_carries_no_certificate(tls_server: int) -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(text="plain")

    app = web.Application()
    app.router.add_get("/", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        async with Fetcher(_settings(), lambda _a: True) as fetcher:
            result = await fetcher.fetch(f"http://plain.test:{port}/", "plain.test", ("127.0.0.1",))
    finally:
        await runner.cleanup()
    assert result.status == 200 and result.peercert is None and result.peercert_der is None


async def test_a_kept_https_connection_still_carries_its_certificate(
    tls_server: int, ca: trustme.CA, tmp_path: Path
) -> None:
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    host = HOSTS[0]
    async with Fetcher(_settings(str(ca_file)), lambda _a: True) as fetcher:
        first, second = [
            await fetcher.fetch(f"https://{host}:{tls_server}/", host, ("127.0.0.1",))
            for _ in range(2)
        ]
    assert first.status == second.status == 200, (first.error, second.error)
    assert not first.phases.reused and first.phases.tls is not None
    assert second.phases.reused and second.phases.tls is None
    assert second.peercert_der == first.peercert_der is not None
