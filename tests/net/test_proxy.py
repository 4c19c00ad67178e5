"""Requests through an HTTP CONNECT proxy: a tiny proxy on loopback records every CONNECT,
the guard still judges and pins each target, the proxy's credentials never show. Every
socket here is on 127.0.0.0/8; a refused target is never connected to by anyone."""

from __future__ import annotations

import base64
import logging
import ssl
from dataclasses import replace
from pathlib import Path

import pytest
import trustme
from loopback_proxy import LoopbackProxy, proxying, site

from courtier.config import FetchSection, resolve, to_json, to_toml
from courtier.net.fetch import Fetcher, FetchResult
from courtier.net.guard import Guard
from courtier.net.policy import AddressPolicy
from courtier.net.resolve import StaticResolver

USER, PASSWORD = "crawler", "s3cr3t p@ss"
PROXY_URL_PASSWORD = "s3cr3t%20p%40ss"  # as it is written in a URL
TOKEN = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()


def settings(proxy: str, **changes: object) -> FetchSection:
    return replace(FetchSection(), total_timeout=5.0, connect_timeout=2.0, proxy=proxy, **changes)


async def guarded_fetch(fetcher: Fetcher, guard: Guard, url: str, host: str) -> FetchResult | str:
    """The crawl's order: the guard's verdict first, then the pinned fetch (or the refusal)."""
    resolution = await guard.resolve(host)
    if not resolution.allowed:
        return resolution.reason
    return await fetcher.fetch(url, host, resolution.addresses)


async def test_a_fetch_goes_through_the_proxy_to_the_pinned_address() -> None:
    async with (
        proxying(LoopbackProxy()) as proxy,
        site() as target,
        Fetcher(settings(f"http://127.0.0.1:{proxy.port}"), lambda a: True) as f,
    ):
        result = await f.fetch(f"http://shop.test:{target.port}/p", "shop.test", ("127.0.0.1",))
        again = await f.fetch(f"http://shop.test:{target.port}/q", "shop.test", ("127.0.0.1",))
    assert result.status == 200, result.error
    assert result.body == f"<html>Host: shop.test:{target.port}</html>".encode()
    assert proxy.connects == [f"127.0.0.1:{target.port}"]  # the checked address, not the name
    assert result.address == "127.0.0.1"
    assert again.status == 200 and again.phases.reused  # the tunnel is kept alive like any
    assert target.heads[0].startswith(b"GET /p HTTP/1.1\r\n")  # origin-form inside the tunnel


async def test_https_through_the_proxy_verifies_the_name_not_the_address(tmp_path: Path) -> None:
    ca = trustme.CA()
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("shop.test").configure_cert(context)
    async with proxying(LoopbackProxy()) as proxy, site(tls=context) as target:
        fetch_settings = settings(f"127.0.0.1:{proxy.port}", ca_file=str(ca_file))
        async with Fetcher(fetch_settings, lambda a: True) as fetcher:
            good = await fetcher.fetch(
                f"https://shop.test:{target.port}/", "shop.test", ("127.0.0.1",)
            )
            wrong = await fetcher.fetch(
                f"https://other.test:{target.port}/", "other.test", ("127.0.0.1",)
            )
    assert good.status == 200, good.error
    assert good.peercert is not None and good.address == "127.0.0.1"
    assert proxy.connects == [f"127.0.0.1:{target.port}"] * 2
    assert wrong.status is None and "certificate" in (wrong.error or "").lower()


async def test_the_guard_still_refuses_a_private_target_and_the_proxy_hears_nothing() -> None:
    """The proxy on 127.0.0.1 is reachable although the policy refuses 127.0.0.1: it is the
    operator's. A target at the proxy's own address, or at a private one, is judged as any."""
    policy = AddressPolicy(allow=["127.0.0.2/32"])
    resolver = StaticResolver({"shop.test": ["127.0.0.2"], "intranet.test": ["10.0.0.1"]})
    guard = Guard(policy, resolver)
    async with proxying(LoopbackProxy()) as proxy, site("127.0.0.2") as target:
        proxy_url = f"http://127.0.0.1:{proxy.port}"
        allowed = lambda address: policy.check(address).allowed  # noqa: E731
        async with Fetcher(settings(proxy_url), allowed) as fetcher:
            good = await guarded_fetch(
                fetcher, guard, f"http://shop.test:{target.port}/", "shop.test"
            )
            private = await guarded_fetch(
                fetcher, guard, f"http://intranet.test:{target.port}/", "intranet.test"
            )
            itself = await guarded_fetch(fetcher, guard, f"{proxy_url}/", "127.0.0.1")
            # Past a guard that was skipped, the fetcher's own check still refuses.
            forced = await fetcher.fetch(
                f"http://10.0.0.1:{target.port}/", "10.0.0.1", ("10.0.0.1",)
            )
    assert isinstance(good, FetchResult) and good.status == 200, good
    assert private == "private" and itself == "loopback"
    assert forced.status is None and "refused by the address policy" in (forced.error or "")
    assert proxy.connects == [f"127.0.0.2:{target.port}"]  # no CONNECT for any refused target


async def test_proxy_credentials_are_sent_and_never_shown(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    proxy_setup = LoopbackProxy(credentials=f"{USER}:{PASSWORD}")
    async with proxying(proxy_setup) as proxy, site() as target:
        proxy_url = f"http://{USER}:{PROXY_URL_PASSWORD}@127.0.0.1:{proxy.port}"
        async with Fetcher(settings(proxy_url), lambda a: True) as fetcher:
            result = await fetcher.fetch(f"http://a.test:{target.port}/", "a.test", ("127.0.0.1",))
            shown = repr(fetcher.routes)
        bare = settings(f"http://127.0.0.1:{proxy.port}")
        async with Fetcher(bare, lambda a: True) as fetcher:
            refused = await fetcher.fetch(f"http://a.test:{target.port}/", "a.test", ("127.0.0.1",))
    assert result.status == 200, result.error
    assert f"Proxy-Authorization: Basic {TOKEN}\r\n".encode() in proxy.heads[0]
    assert all(b"Proxy-Authorization" not in head for head in target.heads)  # not tunnelled
    assert f"127.0.0.1:{proxy.port}" in caplog.text  # the proxy is named, by host:port only
    for secret in (PASSWORD, PROXY_URL_PASSWORD, TOKEN):
        assert secret not in caplog.text and secret not in shown
        assert secret not in repr(result) and secret not in repr(refused)
    assert refused.status is None and (refused.error or "").startswith("ProxyRefused: ")
    assert "407" in (refused.error or "")


def test_config_show_hides_the_proxy_password() -> None:
    item = f"fetch.proxy=http://{USER}:{PROXY_URL_PASSWORD}@proxy.internal:3128"
    resolved = resolve(None, [item], env={})
    assert resolved.config.fetch.proxy.endswith("@proxy.internal:3128")
    shown = to_toml(resolved) + str(to_json(resolved))
    assert f"http://{USER}:***@proxy.internal:3128" in shown
    assert PROXY_URL_PASSWORD not in shown and PASSWORD not in shown


@pytest.mark.parametrize(
    ("answer", "status"),
    [
        (b"HTTP/1.1 407 Proxy Authentication Required\r\n\r\n", "407"),
        (b"HTTP/1.1 403 Forbidden\r\nContent-Length: 9\r\n\r\nforbidden", "403"),
        (b"HTTP/1.0 502 Bad Gateway\r\n\r\n", "502"),
        (b"SSH-2.0-OpenSSH_9.6\r\n\r\n", "no HTTP status"),
    ],
)
async def test_a_refusal_of_the_proxy_is_a_clean_fetch_error(answer: bytes, status: str) -> None:
    async with (
        proxying(LoopbackProxy(answer=answer)) as proxy,
        Fetcher(settings(f"127.0.0.1:{proxy.port}"), lambda a: True) as fetcher,
    ):
        result = await fetcher.fetch("https://b.test:8443/", "b.test", ("127.0.0.1", "127.0.0.2"))
    assert result.status is None and result.body == b""
    assert (result.error or "").startswith(("ProxyRefused: ", "ProxyError: "))
    assert f"the proxy 127.0.0.1:{proxy.port}" in (result.error or "")
    assert status in (result.error or "")
    # 407 is the credentials' fault: the other address is not asked for in vain; after any
    # other refusal the next address is asked at once.
    tried = ["127.0.0.1:8443"] if status == "407" else ["127.0.0.1:8443", "127.0.0.2:8443"]
    assert proxy.connects == tried


async def test_an_unreachable_proxy_is_a_clean_fetch_error() -> None:
    async with proxying(LoopbackProxy()) as proxy:
        port = proxy.port
    async with Fetcher(settings(f"http://127.0.0.1:{port}"), lambda a: True) as fetcher:
        result = await fetcher.fetch("http://c.test/", "c.test", ("127.0.0.1", "127.0.0.2"))
    assert result.status is None
    assert (result.error or "").startswith(
        f"ProxyUnreachable: cannot reach the proxy 127.0.0.1:{port}"
    )


async def test_a_proxy_that_resolves_is_given_the_name() -> None:
    """``proxy_resolves``: the guard still judged the name, the proxy picks the address."""
    async with proxying(LoopbackProxy(names={"shop.test": "127.0.0.1"})) as proxy, site() as target:
        fetch_settings = settings(f"http://127.0.0.1:{proxy.port}", proxy_resolves=True)
        async with Fetcher(fetch_settings, lambda a: a != "10.0.0.1") as fetcher:
            result = await fetcher.fetch(
                f"http://shop.test:{target.port}/", "shop.test", ("127.0.0.1",)
            )
            # A name whose checked address the policy refuses is not handed to the proxy.
            refused = await fetcher.fetch(
                f"http://shop.test:{target.port}/", "shop.test", ("10.0.0.1",)
            )
    assert result.status == 200, result.error
    assert proxy.connects == [f"shop.test:{target.port}"]
    assert result.address is None  # the proxy chose it: we do not claim to know it
    assert refused.status is None and "refused by the address policy" in (refused.error or "")
