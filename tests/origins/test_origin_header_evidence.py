"""Header fingerprints: distinctive only when a platform chose something; tenant values ignored."""

from __future__ import annotations

from origin_facts import fingerprint, plinth

from courtier.origins.header_evidence import header_fingerprint, probe_response


def test_tenants_of_one_platform_share_a_signature_despite_per_tenant_values() -> None:
    a, b = plinth("alpha.test"), plinth("beta.test")
    assert a.signature is not None
    assert a.signature == b.signature
    assert a.platform_headers == ("x-plinth-tenant",)
    assert a.cookie_names == ("plinth_sid",)


def test_a_bare_server_header_is_not_distinctive() -> None:
    for server in ("nginx", "Apache/2.4.58"):
        fp = fingerprint("solo.test", server=server)
        assert not fp.distinctive
        assert fp.signature is None


def test_a_not_found_page_naming_the_host_is_not_shared_evidence() -> None:
    fp = fingerprint("solo.test")
    assert fp.not_found_hash is None


def test_a_shared_not_found_page_makes_a_fingerprint_distinctive() -> None:
    fp = fingerprint("solo.test", not_found=b"<h1>Oops</h1>")
    assert fp.not_found_hash is not None
    assert fp.distinctive


def test_framework_cookies_are_not_platform_cookies() -> None:
    fp = fingerprint("solo.test", ("Set-Cookie", "PHPSESSID=abc; path=/"))
    assert fp.cookie_names == ()
    assert not fp.distinctive


def test_standard_and_security_headers_are_not_platform_headers() -> None:
    fp = fingerprint(
        "solo.test",
        ("Strict-Transport-Security", "max-age=1"),
        ("X-Frame-Options", "DENY"),
        ("Cache-Control", "no-cache"),
    )
    assert fp.platform_headers == ()


def test_different_server_stacks_have_different_signatures() -> None:
    a = fingerprint("a.test", ("X-Shop", "1"), server="nginx")
    b = fingerprint("b.test", ("X-Shop", "1"), server="Apache")
    assert a.signature != b.signature
    assert a.conflicts_with(b)


def test_server_versions_do_not_conflict() -> None:
    a = fingerprint("a.test", server="nginx/1.24.0")
    b = fingerprint("b.test", server="nginx/1.25.3")
    assert not a.conflicts_with(b)


def test_cdn_headers_mark_the_fingerprint() -> None:
    # Any cache adds these names (a platform's own Varnish too): no CDN's mark.
    assert fingerprint("a.test", ("X-Cache", "MISS"), ("Age", "0")).cdn is None
    fp = fingerprint("a.test", ("X-Cache", "MISS"), ("X-Served-By", "cache-fra1-FRA"))
    assert fp.cdn is not None
    assert "x-cache" not in fp.platform_headers


def test_no_response_gives_no_fingerprint() -> None:
    assert header_fingerprint(None, None) is None


def test_one_response_is_enough_for_a_fingerprint() -> None:
    home = probe_response(200, [("Server", "Plinth/2.3"), ("X-Plinth-Tenant", "a")], b"", "a.test")
    fp = header_fingerprint(home, None)
    assert fp is not None and fp.platform_headers == ("x-plinth-tenant",)
