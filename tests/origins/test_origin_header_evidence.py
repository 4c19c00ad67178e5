"""Header fingerprints: distinctive only when a platform chose something; tenant values ignored."""

from __future__ import annotations

from origin_facts import fingerprint, plinth

from courtier.origins.header_evidence import (
    STOCK_PAGE_MAX_BYTES,
    header_fingerprint,
    probe_response,
    stock_not_found,
)


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


def test_a_cookie_is_named_by_what_comes_before_its_first_equals_sign_or_semicolon() -> None:
    for value in (
        "plinth_sid=YWJj==; Path=/",
        "plinth_sid=a b;Path=/",
        "plinth_sid; HttpOnly; Secure",
    ):
        assert fingerprint("a.test", ("Set-Cookie", value)).cookie_names == ("plinth_sid",)


def test_a_platforms_x_powered_by_alone_is_distinctive_and_described() -> None:
    fp = fingerprint("a.test", ("X-Powered-By", "ShopWise Platform"))
    assert fp.powered_by == "ShopWise Platform"
    assert fp.distinctive and fp.signature is not None
    assert fp.chosen_marks == {"x-powered-by shopwise platform"}
    assert fp.describe() == "Server: nginx; X-Powered-By: ShopWise Platform"
    # The same header in another case is the same header.
    other = fingerprint("b.test", ("x-powered-by", "ShopWise Platform"))
    assert other.signature == fp.signature


def test_the_server_product_is_the_name_before_the_first_slash() -> None:
    fp = fingerprint("a.test", server="Apache/2.4.58 (Unix) OpenSSL/1.1.1k")
    assert fp.product == "apache"
    assert not fp.conflicts_with(fingerprint("b.test", server="apache/2.2"))


def test_the_header_order_signs_a_stack_but_per_answer_headers_do_not() -> None:
    def answers(host: str, *headers: tuple[str, str]) -> str | None:
        home = probe_response(200, list(headers), b"", host)
        fp = header_fingerprint(home, None)
        assert fp is not None
        return fp.signature

    base = answers("a.test", ("Server", "nginx"), ("X-Shop", "1"), ("Content-Type", "text/html"))
    # Dates, ages, lengths and cookies come and go with each answer, anywhere in the order.
    assert base == answers(
        "b.test",
        ("Date", "Mon, 30 Nov 2026 06:08:25 GMT"),
        ("Server", "nginx"),
        ("Age", "17"),
        ("X-Shop", "2"),
        ("Content-Length", "512"),
        ("Content-Type", "text/html"),
        ("Retry-After", "5"),
    )
    # The order of the rest is the stack's own: another order is another stack.
    assert base != answers(
        "c.test", ("X-Shop", "1"), ("Server", "nginx"), ("Content-Type", "text/html")
    )


def test_a_stock_page_is_stock_up_to_its_size_limit() -> None:
    page = b"<h1>404 Not Found</h1><hr><center>nginx</center>"
    padded = page + b" " * (STOCK_PAGE_MAX_BYTES - len(page))
    assert stock_not_found(padded)
    assert not stock_not_found(padded + b" ")
