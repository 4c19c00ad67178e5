"""CDN edges known by behaviour: strangers behind one edge are origins of their own, a platform
behind the same edge stays one origin, and generic stack evidence never merges two sites."""

from __future__ import annotations

import pytest
from origin_facts import site

from courtier.origins.cdn import published_cdn_range
from courtier.origins.cluster import EDGE_SAMPLE, SiteFacts, cluster
from courtier.origins.evidence import Kind
from courtier.origins.header_evidence import (
    HeaderFingerprint,
    generic_cookie,
    generic_powered_by,
    header_fingerprint,
    probe_response,
    stock_not_found,
)

EDGE = "edge.quickserve.test"  # no CDN word in it: known only by how it answers
EDGE_ADDRESS = "203.0.113.50"
PLATFORM = "tenants.platform-c.test"

NGINX_404 = (
    b"<html><head><title>404 Not Found</title></head><body><center><h1>404 Not Found</h1>"
    b"</center><hr><center>nginx</center></body></html>"
)
APACHE_404 = (
    b'<!DOCTYPE HTML PUBLIC "-//IETF//DTD HTML 2.0//EN"><html><head><title>404 Not Found'
    b"</title></head><body><h1>Not Found</h1><p>The requested URL was not found on this "
    b"server.</p></body></html>"
)
IIS_404 = b"<h2>404 - File or directory not found.</h2>"
EXPRESS_404 = b"<pre>Cannot GET /no-such-page</pre>"
DJANGO_404 = b"<h1>Not Found</h1><p>The requested resource was not found on this server.</p>"
RAILS_404 = b"<h1>The page you were looking for doesn't exist.</h1>"

# (Server, extra headers, stock 404 page) of seven common stacks.
STACKS: tuple[tuple[str, tuple[tuple[str, str], ...], bytes], ...] = (
    ("nginx/1.24.0", (("X-Powered-By", "PHP/8.2.7"), ("Set-Cookie", "PHPSESSID=1")), NGINX_404),
    ("Apache/2.4.58 (Debian)", (("X-Powered-By", "PHP/7.4.33"),), APACHE_404),
    (
        "Microsoft-IIS/10.0",
        (
            ("X-Powered-By", "ASP.NET"),
            ("X-AspNet-Version", "4.0.30319"),
            ("Set-Cookie", "ASP.NET_SessionId=2"),
        ),
        IIS_404,
    ),
    ("", (("X-Powered-By", "Express"), ("Set-Cookie", "connect.sid=3")), EXPRESS_404),
    ("Puma", (("X-Runtime", "0.012"), ("X-Request-Id", "abc")), RAILS_404),
    ("gunicorn", (("Set-Cookie", "csrftoken=4"), ("X-Frame-Options", "DENY")), DJANGO_404),
    ("Caddy", (), b""),
)


def edge_answer(host: str, n: int, *backend: tuple[str, str], server: str) -> list[tuple[str, str]]:
    headers = [("Content-Type", "text/html"), ("CF-Ray", f"{n:016x}-SIM"), ("X-Cache", "MISS")]
    if server:
        headers.append(("Server", server))
    return [*headers, *backend]


def stranger(host: str, n: int) -> HeaderFingerprint:
    """A site of one of the common stacks, answering through the edge."""
    server, backend, not_found = STACKS[n % len(STACKS)]
    headers = edge_answer(host, n, *backend, server=server)
    fp = header_fingerprint(
        probe_response(200, headers, b"", host), probe_response(404, headers, not_found, host)
    )
    assert fp is not None
    return fp


def tenant(host: str, n: int) -> HeaderFingerprint:
    """A tenant of platform C behind the same edge: its own header, cookie and 404 page."""
    backend = (("X-PlatformC-Tenant", str(n)), ("Set-Cookie", f"pc_session={n}"))
    headers = edge_answer(host, n, *backend, server="nginx")
    not_found = b"<h1>This shop does not exist</h1><p>PlatformC</p>" * 3
    fp = header_fingerprint(
        probe_response(200, headers, b"", host), probe_response(404, headers, not_found, host)
    )
    assert fp is not None
    return fp


def world(
    observed_strangers: int, observed_tenants: int = 0, strangers: int = 20
) -> list[SiteFacts]:
    facts = [
        site(
            f"s{n}.test",
            EDGE_ADDRESS,
            cname=(EDGE,),
            headers=stranger(f"s{n}.test", n) if n < observed_strangers else None,
        )
        for n in range(strangers)
    ]
    facts += [
        site(
            f"t{n}.test",
            EDGE_ADDRESS,
            cname=(PLATFORM, EDGE),
            headers=tenant(f"t{n}.test", n) if n < observed_tenants else None,
        )
        for n in range(10)
    ]
    return facts


def origins_of(result: dict[str, object], prefix: str) -> set[str]:
    return {a.origin for h, a in result.items() if h.startswith(prefix)}  # type: ignore[attr-defined]


def test_before_any_answer_a_shared_unknown_name_is_one_origin() -> None:
    """The safe start: nothing tells an edge from a platform's load balancer yet."""
    result = cluster(world(observed_strangers=0))
    assert len({a.origin for a in result.values()}) == 1


def test_one_answer_short_of_the_sample_decides_nothing() -> None:
    result = cluster(world(observed_strangers=EDGE_SAMPLE - 1))
    assert len({a.origin for a in result.values()}) == 1


def test_unrelated_sites_behind_one_edge_become_origins_of_their_own() -> None:
    result = cluster(world(observed_strangers=EDGE_SAMPLE))
    strangers = [a for h, a in result.items() if h.startswith("s")]
    assert len({a.origin for a in strangers}) == len(strangers)
    assert all(a.origin == f"site:{a.site}" for a in strangers)
    for assignment in strangers:
        cdn = [e for e in assignment.evidence if e.kind is Kind.CDN]
        assert cdn and EDGE in cdn[0].detail and "own" in cdn[0].detail


def test_a_platform_behind_the_same_edge_stays_one_origin() -> None:
    for tenants_seen in (0, 4, 10):
        result = cluster(world(observed_strangers=EDGE_SAMPLE, observed_tenants=tenants_seen))
        assert origins_of(result, "t") == {f"cname:{PLATFORM}"}
        assert len(origins_of(result, "s")) == 20


def test_generic_stack_evidence_never_merges_two_sites_behind_an_edge() -> None:
    # Every stranger answered: the seven stacks repeat, so same-stack pairs exist.
    result = cluster(world(observed_strangers=20))
    assert len(origins_of(result, "s")) == 20


def test_a_platform_straight_behind_an_unknown_name_stays_one_origin() -> None:
    """Tenants CNAME straight to a name that answers with edge headers, all of them with one
    distinctive backend: a platform behind a CDN, not strangers."""
    facts = [
        site(f"t{n}.test", EDGE_ADDRESS, cname=(EDGE,), headers=tenant(f"t{n}.test", n))
        for n in range(6)
    ]
    result = cluster(facts)
    assert len({a.origin for a in result.values()}) == 1


def test_platform_tenants_on_an_edge_among_strangers_are_grouped_by_their_headers() -> None:
    facts = world(observed_strangers=EDGE_SAMPLE)
    facts += [
        site(f"u{n}.test", EDGE_ADDRESS, cname=(EDGE,), headers=tenant(f"u{n}.test", n))
        for n in range(3)
    ]
    result = cluster(facts)
    assert len(origins_of(result, "u")) == 1
    assert next(iter(origins_of(result, "u"))).startswith("hdr:")


def test_a_shared_name_without_edge_headers_stays_one_origin() -> None:
    """A platform's own load balancer: differing stacks behind it do not make it an edge."""
    facts = []
    for n in range(6):
        server, backend, not_found = STACKS[n]
        headers = [("Server", server or "x"), *backend]
        fp = header_fingerprint(
            probe_response(200, headers, b"", f"p{n}.test"),
            probe_response(404, headers, not_found, f"p{n}.test"),
        )
        facts.append(site(f"p{n}.test", "192.0.2.7", cname=("lb.hosting.test",), headers=fp))
    assert len({a.origin for a in cluster(facts).values()}) == 1


def test_strangers_on_a_shared_address_with_edge_headers_split_without_a_cname() -> None:
    facts = [
        site(f"a{n}.test", EDGE_ADDRESS, headers=stranger(f"a{n}.test", n) if n < 3 else None)
        for n in range(8)
    ]
    result = cluster(facts)
    assert len({a.origin for a in result.values()}) == 8


def test_addresses_in_published_cdn_ranges_are_edges() -> None:
    assert published_cdn_range("104.16.1.1") is not None
    assert published_cdn_range("151.101.1.57") is not None
    assert published_cdn_range("2606:4700::6810:1") is not None
    assert published_cdn_range("192.0.2.1") is None
    assert published_cdn_range("not an address") is None
    facts = [site(f"c{n}.test", "104.16.1.1") for n in range(4)]
    assert len({a.origin for a in cluster(facts).values()}) == 4


@pytest.mark.parametrize(
    "value", ["PHP/8.2.7", "ASP.NET", "Express", "Next.js", "WordPress", "PleskLin", "Servlet/3.1"]
)
def test_common_stacks_powered_by_is_generic(value: str) -> None:
    assert generic_powered_by(value)


@pytest.mark.parametrize("value", ["PlinthSites", "ShopWise Platform", "Wix.com"])
def test_a_platforms_powered_by_is_not_generic(value: str) -> None:
    assert not generic_powered_by(value)


@pytest.mark.parametrize("body", [NGINX_404, APACHE_404, IIS_404, EXPRESS_404, DJANGO_404, b""])
def test_stock_not_found_pages_are_recognised(body: bytes) -> None:
    assert stock_not_found(body)


def test_a_platforms_own_not_found_page_is_not_stock() -> None:
    assert not stock_not_found(b"<h1>This shop does not exist</h1><p>PlatformC</p>")


def test_each_common_stack_alone_is_not_distinctive() -> None:
    for n in range(len(STACKS)):
        assert stranger(f"s{n}.test", n).signature is None, STACKS[n][0]


def test_a_via_name_over_differing_stacks_is_no_proof_of_an_edge() -> None:
    """A platform's own proxy names itself in Via too, and one shared front may pass on each
    app's Server: without a CDN's own mark or two distinctive backends, one origin."""
    facts = []
    for n in range(5):
        server, backend, not_found = STACKS[n]
        headers = [("Via", "1.1 hiddenedge"), ("Server", server or "x"), *backend]
        fp = header_fingerprint(
            probe_response(200, headers, b"", f"v{n}.test"),
            probe_response(404, headers, not_found, f"v{n}.test"),
        )
        facts.append(site(f"v{n}.test", EDGE_ADDRESS, cname=(EDGE,), headers=fp))
    result = cluster(facts)
    assert len({a.origin for a in result.values()}) == 1
    assert all("kept together" in " ".join(e.detail for e in a.evidence) for a in result.values())


def test_unknown_ray_and_cache_headers_are_the_edges_not_a_platforms() -> None:
    fp = header_fingerprint(
        probe_response(200, [("QS-Ray", "ab12-SIM"), ("X-Edge-Cache", "HIT")], b"", "a.test"),
        None,
    )
    # Not a platform's choice; but no CDN's mark either: the value has no ray id's shape.
    assert fp is not None and fp.platform_headers == () and fp.cdn is None
    shaped = header_fingerprint(
        probe_response(200, [("QS-Ray", "0123456789abcdef-SIM")], b"", "a.test"), None
    )
    assert shaped is not None and shaped.platform_headers == () and shaped.cdn is not None


def test_a_shared_name_waiting_for_its_sample_is_provisional_until_told_apart() -> None:
    before = cluster(world(observed_strangers=0))
    assert all(a.provisional for a in before.values())  # strangers and tenants alike
    # Tenants' answers decide their platform's name and show the address is an edge's, but
    # the strangers' shared name still waits for its own sample: all of them stay provisional.
    mixed = cluster(world(observed_strangers=EDGE_SAMPLE - 1, observed_tenants=3))
    assert len({a.origin for a in mixed.values()}) == 1
    assert all(a.provisional for a in mixed.values())
    after = cluster(world(observed_strangers=EDGE_SAMPLE))
    assert not any(a.provisional for h, a in after.items() if h.startswith("s"))
    # The platform's own name waits for its tenants' answers in turn (it could be an edge).
    assert all(a.provisional for h, a in after.items() if h.startswith("t"))
    told = cluster(world(observed_strangers=EDGE_SAMPLE, observed_tenants=EDGE_SAMPLE))
    assert not any(a.provisional for a in told.values())
    platform = [
        site(f"t{n}.test", EDGE_ADDRESS, cname=(EDGE,), headers=tenant(f"t{n}.test", n))
        for n in range(4)
    ]
    assert not any(a.provisional for a in cluster(platform).values())  # a platform: decided
    alone = [site("own.test", "192.0.2.40"), site("other.test", "192.0.2.41")]
    assert not any(a.provisional for a in cluster(alone).values())


@pytest.mark.parametrize(
    "name",
    [
        "PHPSESSID",
        "_myshop_session",  # Rails: every Rails app names its session cookie like this
        "SESS0123456789abcdef0123456789abcdef",  # Drupal
        ".AspNetCore.Session",
        "wordpress_logged_in_abc",
        "BIGipServerpool_web",
    ],
)
def test_framework_session_cookies_are_generic(name: str) -> None:
    assert generic_cookie(name.lower())


@pytest.mark.parametrize("name", ["_shopwise_s", "plinth_sid", "tenant_id"])
def test_a_platforms_own_cookie_is_not_generic(name: str) -> None:
    assert not generic_cookie(name)
