"""Which proxy a target goes through: the setting, HTTPS_PROXY / HTTP_PROXY / NO_PROXY, the
loopback exception; the CONNECT request and the reading of the proxy's answer. No sockets."""

from __future__ import annotations

import pytest

from courtier.config import ConfigError, load
from courtier.net.proxy import (
    NoProxy,
    ProxyError,
    ProxyRefused,
    authority,
    connect_request,
    parse_proxy,
    read_answer,
    redact,
    routes_from,
)

PUBLIC = ("93.184.215.14",)


def test_the_setting_wins_over_the_environment_and_none_turns_proxies_off() -> None:
    environ = {"HTTPS_PROXY": "http://env-proxy:3128", "HTTP_PROXY": "env-proxy:8080"}
    routes = routes_from("http://configured:3128", (), False, environ)
    assert routes.choose("https", "a.org", 443, PUBLIC).name == "configured:3128"  # type: ignore[union-attr]
    assert routes.choose("http", "a.org", 80, PUBLIC).name == "configured:3128"  # type: ignore[union-attr]
    off = routes_from("none", (), False, environ)
    assert off.choose("https", "a.org", 443, PUBLIC) is None
    assert routes_from("", (), False, {}).choose("https", "a.org", 443, PUBLIC) is None


def test_the_environment_gives_a_proxy_per_scheme_lower_case_first() -> None:
    environ = {
        "https_proxy": "http://lower:3128",
        "HTTPS_PROXY": "http://upper:3128",
        "HTTP_PROXY": "plain:8080",
    }
    routes = routes_from("", (), False, environ)
    https = routes.choose("https", "a.org", 443, PUBLIC)
    http = routes.choose("http", "a.org", 80, PUBLIC)
    assert https is not None and https.name == "lower:3128" and https.source == "https_proxy"
    assert http is not None and http.name == "plain:8080" and http.source == "HTTP_PROXY"
    only_https = routes_from("", (), False, {"HTTPS_PROXY": "p:1"})
    assert only_https.choose("http", "a.org", 80, PUBLIC) is None


def test_an_environment_proxy_is_never_used_for_loopback_but_a_configured_one_is() -> None:
    from_env = routes_from("", (), False, {"HTTPS_PROXY": "p:3128"})
    for host, addresses in (
        ("site.test", ("127.0.0.5",)),
        ("v6.test", ("::1",)),
        ("mapped.test", ("::ffff:127.0.0.1",)),
        ("localhost", ()),
    ):
        assert from_env.choose("https", host, 443, addresses) is None, host
    configured = routes_from("http://p:3128", (), False, {})
    assert configured.choose("https", "site.test", 443, ("127.0.0.5",)) is not None


@pytest.mark.parametrize(
    ("entries", "host", "port", "addresses", "direct"),
    [
        (["example.org"], "example.org", 443, PUBLIC, True),
        (["example.org"], "www.example.org", 443, PUBLIC, True),
        (["example.org"], "badexample.org", 443, PUBLIC, False),
        ([".example.org"], "www.example.org", 443, PUBLIC, True),
        (["*.example.org"], "example.org", 443, PUBLIC, True),
        (["example.org:8443"], "example.org", 443, PUBLIC, False),
        (["example.org:8443"], "example.org", 8443, PUBLIC, True),
        (["93.184.0.0/16"], "a.org", 443, PUBLIC, True),
        (["93.184.215.14"], "a.org", 443, PUBLIC, True),
        (["10.0.0.0/8"], "a.org", 443, PUBLIC, False),
        (["2001:db8::/32"], "b.org", 443, ("2001:db8::1",), True),
        (["*"], "anything.org", 443, PUBLIC, True),
        ([" Example.ORG ", ""], "example.org", 443, PUBLIC, True),
        ([], "example.org", 443, PUBLIC, False),
    ],
)
def test_no_proxy_entries(entries, host, port, addresses, direct) -> None:
    assert NoProxy.of(entries).matches(host, port, addresses) is direct


def test_no_proxy_comes_from_the_setting_and_the_environment_together() -> None:
    environ = {"NO_PROXY": "intranet.example, 10.0.0.0/8", "HTTPS_PROXY": "p:3128"}
    routes = routes_from("", ("partner.example",), False, environ)
    assert routes.choose("https", "docs.intranet.example", 443, PUBLIC) is None
    assert routes.choose("https", "partner.example", 443, PUBLIC) is None
    assert routes.choose("https", "a.org", 443, ("10.1.2.3",)) is None
    assert routes.choose("https", "a.org", 443, PUBLIC) is not None


def test_proxy_urls_and_their_credentials() -> None:
    proxy = parse_proxy("http://crawler:pa%3Ass%40word@Proxy.Internal:3128/")
    assert (proxy.host, proxy.port, proxy.name) == ("proxy.internal", 3128, "proxy.internal:3128")
    assert proxy.authorization == "Basic Y3Jhd2xlcjpwYTpzc0B3b3Jk"  # crawler:pa:ss@word
    assert "Basic" not in repr(proxy) and "pa" not in repr(proxy).replace("parse", "")
    assert parse_proxy("proxy.internal").port == 80
    assert parse_proxy("http://[fd00::1]:3128").name == "[fd00::1]:3128"
    for bad in ("socks5://u:secret@p:1080", "https://p:443", "http://p:3128/path", "http://:1"):
        with pytest.raises(ValueError) as caught:
            parse_proxy(bad, "HTTPS_PROXY")
        assert "secret" not in str(caught.value) and "HTTPS_PROXY" in str(caught.value)


def test_an_unusable_environment_proxy_is_an_error_not_a_direct_connection() -> None:
    with pytest.raises(ValueError, match=r"HTTPS_PROXY: only http:// CONNECT proxies"):
        routes_from("", (), False, {"HTTPS_PROXY": "socks5://u:secret@p:1080"})


def test_redact_hides_only_the_password() -> None:
    assert redact("http://u:secret@p:3128") == "http://u:***@p:3128"
    assert redact("http://u@p:3128/") == "http://u@p:3128/"
    assert redact("u:secret@p:3128") == "u:***@p:3128"
    assert redact("http://p:3128") == "http://p:3128"


def test_the_settings_are_checked() -> None:
    config = load(
        overrides=[
            "fetch.proxy=http://proxy.internal:3128",
            'fetch.no_proxy=["internal.example", "10.0.0.0/8", "*"]',
            "fetch.proxy_resolves=true",
            "fetch.happy_eyeballs_delay=0.1",
        ],
        env={},
    )
    assert config.fetch.proxy_resolves and config.fetch.happy_eyeballs_delay == 0.1
    for bad in (
        "fetch.proxy=socks5://p:1080",
        'fetch.no_proxy=["http://x/"]',
        "fetch.happy_eyeballs_delay=0",
    ):
        with pytest.raises(ConfigError):
            load(overrides=[bad], env={})


def test_the_connect_request_names_the_target_and_carries_the_credentials() -> None:
    proxy = parse_proxy("http://u:p@proxy:3128")
    request = connect_request(proxy, authority("2001:db8::1", 443), "courtier-test")
    assert request == (
        b"CONNECT [2001:db8::1]:443 HTTP/1.1\r\nHost: [2001:db8::1]:443\r\n"
        b"User-Agent: courtier-test\r\nProxy-Authorization: Basic dTpw\r\n\r\n"
    )
    assert b"Proxy-Authorization" not in connect_request(parse_proxy("proxy:1"), "a:1", "x")


def test_the_proxy_answer() -> None:
    proxy = parse_proxy("proxy:3128")
    read_answer(b"HTTP/1.1 200 Connection established\r\n\r\n", proxy, "a:443")
    read_answer(b"HTTP/1.0 200\n\n", proxy, "a:443")
    with pytest.raises(ProxyRefused) as refused:
        read_answer(b"HTTP/1.1 407 Proxy Authentication Required\r\n\r\n", proxy, "a:443")
    assert refused.value.status == 407 and refused.value.for_every_address
    assert "proxy:3128 answered CONNECT a:443 with 407" in str(refused.value)
    with pytest.raises(ProxyRefused) as bad_gateway:
        read_answer(b"HTTP/1.1 502 Bad Gateway\x1b[31m\r\n\r\n", proxy, "a:443")
    assert not bad_gateway.value.for_every_address and "\x1b" not in str(bad_gateway.value)
    with pytest.raises(ProxyError, match="no HTTP status"):
        read_answer(b"hello\r\n\r\n", proxy, "a:443")
