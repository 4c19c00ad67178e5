"""CDN edges are recognised from names (CNAME targets, PTR names) and from response headers."""

from __future__ import annotations

import pytest

from courtier.origins.cdn import CdnRules, headers_cdn_reason


@pytest.mark.parametrize(
    "name",
    [
        "d1234abcd.cloudfront.net",
        "www.example.com.edgekey.net",
        "shop.global.ssl.fastly.net",
        "example.com.cdn.cloudflare.net.",
        "a23-45-67-89.deploy.static.akamaitechnologies.com",
        "cdn.simcdn.test",
        "zone-1.kxcdn.com",
        "files.cdn77.org",
        "pull.b-cdn.net",
    ],
)
def test_cdn_edge_names_are_recognised(name: str) -> None:
    assert CdnRules().name_reason(name) is not None
    assert CdnRules().name_reason(name.upper() + ".") is not None  # DNS names ignore case


@pytest.mark.parametrize(
    "name",
    [
        "edge.platform-a.test",
        "tenants.platform-a.test",
        "web1.example.com",
        "shops.myplatform.io",
        "cdn-nectar-saffron30.test",
        "www.cdnblog.example",
    ],
)
def test_platform_names_are_not_cdn_edges(name: str) -> None:
    assert CdnRules().name_reason(name) is None


def test_configured_suffixes_add_to_the_known_ones() -> None:
    rules = CdnRules(extra_suffixes=("edgeco.example",))
    assert rules.name_reason("x.edgeco.example") is not None
    assert rules.name_reason("d1.cloudfront.net") is not None
    assert CdnRules().name_reason("x.edgeco.example") is None


@pytest.mark.parametrize(
    "headers",
    [
        [("CF-Ray", "8a1b2c3d4e5f6789-FRA"), ("Server", "nginx")],
        [("QS-Ray", "0123456789abcdef-SIM")],  # a ray id under another edge's name
        [("CF-Cache-Status", "DYNAMIC")],
        [("X-Served-By", "cache-lhr7341-LHR")],  # Fastly's cache nodes
        [("X-Served-By", "cache-iad-kiad7000123-IAD, cache-lhr7341-LHR")],
        [("X-Cache", "Miss from cloudfront")],
        [("Via", "1.1 0123abcd.cloudfront.net (CloudFront)")],
        [("Server", "cloudflare")],
        [("Server", "SimCDN")],
        [("Server", "AkamaiGHost")],
        [("Server", "ECAcc (nyb/1D2E)")],
        [("X-Amz-Cf-Id", "abc==")],
        [("X-Azure-Ref", "0Hk2bZAAAAAB4dGlkVGVzdFJlZmVyZW5jZQ==")],
    ],
)
def test_cdn_response_headers_are_recognised(headers: list[tuple[str, str]]) -> None:
    assert headers_cdn_reason(headers) is not None


@pytest.mark.parametrize(
    "headers",
    [
        [("Server", "Apache/2.4.58"), ("X-Powered-By", "PHP/8.2")],
        # What a platform's own Varnish, nginx or HAProxy front adds: names, not a CDN's values.
        [("Server", "nginx"), ("X-Cache", "HIT")],
        [("X-Served-By", "web1")],
        [("X-Served-By", "haproxy-02")],
        [("Via", "1.1 varnish (Varnish/6.0)"), ("X-Varnish", "32768 3")],
        [("Age", "12"), ("X-Cache", "HIT from varnish1"), ("X-Cache-Hits", "3")],
        [("Server", "Varnish")],
        [("CF-Ray", "8a1b2c3d-FRA")],  # too short for a ray id
        [("X-Request-Ray", "abc")],
    ],
)
def test_ordinary_server_headers_are_not_a_cdn(headers: list[tuple[str, str]]) -> None:
    assert headers_cdn_reason(headers) is None


@pytest.mark.parametrize(
    ("name", "domain"),
    [
        ("d111111abcdef8.cloudfront.net", "cloudfront.net"),  # the suffix, not the PSL entry
        ("e123.a.akamaiedge.net.", "akamaiedge.net"),
        ("acme.b-cdn.net", "b-cdn.net"),
        ("edge7.simcdn.test", "simcdn.test"),
        ("cdn-photos.example.com", None),
        ("www.example.com", None),
    ],
)
def test_the_cdn_an_edge_name_belongs_to(name: str, domain: str | None) -> None:
    assert CdnRules().cdn_domain(name) == domain


def test_a_cdn_mark_quotes_at_most_40_characters_of_its_value() -> None:
    value = "Z" * 40 + "-tail-of-a-long-id"
    assert headers_cdn_reason([("X-Amz-Cf-Id", f"  {value}  ")]) == (
        f"response header X-Amz-Cf-Id: {'Z' * 40} has CloudFront's shape"
    )


def test_a_cdn_names_reason_names_it_as_dns_writes_it_lower_case_without_the_root_dot() -> None:
    assert CdnRules().name_reason("D111.CloudFront.NET.") == (
        "d111.cloudfront.net is under the CDN suffix cloudfront.net"
    )
