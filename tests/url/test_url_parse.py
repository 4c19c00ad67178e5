"""parse_url: the fetch URL stays faithful to the page, the canonical key is normalised."""

from __future__ import annotations

import pytest

from courtier.url import (
    DEFAULT_STRIP_PARAMS,
    MAX_URL_LENGTH,
    Url,
    UrlError,
    parse_url,
    site_key,
)


def test_fields_of_a_plain_url() -> None:
    url = parse_url("https://www.example.com/a/b?x=1")
    assert url == Url(
        scheme="https",
        host="www.example.com",
        port=None,
        fetch_url="https://www.example.com/a/b?x=1",
        canonical="https://www.example.com/a/b?x=1",
    )
    assert url.site == "www.example.com"
    assert url.target == "/a/b?x=1"


def test_fetch_url_keeps_the_page_spelling_but_drops_fragment_credentials_and_trailing_dot() -> (
    None
):
    url = parse_url(
        "HTTPS://user:secret@WWW.Example.COM.:443/a/./b/../c%7e?utm_source=x&b=2&a=1#top"
    )
    assert url.fetch_url == "https://www.example.com/a/c%7e?utm_source=x&b=2&a=1"
    assert url.target == "/a/c%7e?utm_source=x&b=2&a=1"
    assert url.canonical == "https://www.example.com/a/c~?a=1&b=2"


def test_an_empty_query_is_kept_in_the_fetch_url_and_dropped_from_the_key() -> None:
    url = parse_url("http://example.com/p?")
    assert url.fetch_url == "http://example.com/p?"
    assert url.target == "/p?"
    assert url.canonical == "http://example.com/p"


@pytest.mark.parametrize(
    ("raw", "port", "site"),
    [
        ("http://example.com:80/", None, "example.com"),
        ("https://example.com:443/", None, "example.com"),
        ("http://example.com:443/", 443, "example.com:443"),
        ("https://example.com:8443/", 8443, "example.com:8443"),
        ("http://[::1]:8080/", 8080, "[::1]:8080"),
        ("http://[::1]/", None, "::1"),
    ],
)
def test_default_ports_are_dropped_and_other_ports_kept_in_the_site(
    raw: str, port: int | None, site: str
) -> None:
    url = parse_url(raw)
    assert url.port == port
    assert url.site == site


def test_ipv6_hosts_are_bracketed_in_urls_but_not_in_host() -> None:
    url = parse_url("http://[2001:DB8::0001]:81/x")
    assert url.host == "2001:db8::1"
    assert url.fetch_url == "http://[2001:db8::1]:81/x"
    assert url.canonical == "http://[2001:db8::1]:81/x"


def test_relative_references_resolve_against_the_base() -> None:
    base = "https://example.com/dir/page.html?q=1"
    assert parse_url("../up", base).fetch_url == "https://example.com/up"
    assert parse_url("?z=2", base).fetch_url == "https://example.com/dir/page.html?z=2"
    assert parse_url("//other.example/x", base).fetch_url == "https://other.example/x"
    assert parse_url("#frag", base).fetch_url == "https://example.com/dir/page.html?q=1"


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("http://e.com/%7euser/%2fa%2Fb", "http://e.com/~user/%2Fa%2Fb"),  # only unreserved
        ("http://e.com/%c3%a9", "http://e.com/%C3%A9"),  # uppercase hex
        ("http://e.com/é", "http://e.com/%C3%A9"),  # percent-encoded UTF-8
        ("http://e.com/a%2Db%5Fc%2E", "http://e.com/a-b_c."),
        ("http://e.com/a/%2e%2e/b", "http://e.com/b"),  # encoded dot segments resolve
        ("http://e.com?b=%41&a=%2f", "http://e.com/?a=%2F&b=A"),
        ("http://e.com/100%", "http://e.com/100%"),  # a lone % stays as written
    ],
)
def test_percent_encoding_is_normalised_in_the_key(raw: str, canonical: str) -> None:
    assert parse_url(raw).canonical == canonical


@pytest.mark.parametrize(
    ("query", "canonical_query"),
    [
        ("b=2&a=1", "a=1&b=2"),
        ("a=2&b=0&a=1", "a=2&a=1&b=0"),  # stable: repeated names keep their order
        ("a&a=", "a&a="),  # a and a= stay distinct
        ("&&b=1&&a=1&", "a=1&b=1"),  # empty pieces go
        ("utm_source=x&utm_medium=y&UTM_Campaign=z&id=7", "id=7"),  # utm_ prefix, any case
        ("gclid=1&fbclid=2&msclkid=3&id=7", "id=7"),
        ("PHPSESSID=a&jsessionid=b&sid=c&sessionid=d&id=7", "id=7"),
        ("utm%5Fsource=x&id=7", "id=7"),  # names match after escapes are normalised
        ("utm_source=x", ""),  # nothing left: no "?"
        ("B=1&a=1", "B=1&a=1"),  # names are case-sensitive for ordering
    ],
)
def test_query_parameters_are_filtered_and_stably_sorted(query: str, canonical_query: str) -> None:
    expected = "http://e.com/p" + (f"?{canonical_query}" if canonical_query else "")
    assert parse_url(f"http://e.com/p?{query}").canonical == expected


def test_session_path_parameters_are_removed_from_the_key() -> None:
    url = parse_url("http://e.com/shop;jsessionid=ABC123/item;v=2;JSESSIONID=x?id=1")
    assert url.canonical == "http://e.com/shop/item;v=2?id=1"
    assert url.fetch_url == "http://e.com/shop;jsessionid=ABC123/item;v=2;JSESSIONID=x?id=1"


def test_stripping_a_path_parameter_never_creates_a_dot_segment() -> None:
    url = parse_url("http://e.com/a/..;jsessionid=1/b")
    assert parse_url(url.canonical).canonical == url.canonical


def test_strip_params_is_configurable() -> None:
    url = parse_url("http://e.com/?ref=x&utm_source=y&id=1", strip_params=frozenset({"ref"}))
    assert url.canonical == "http://e.com/?id=1&utm_source=y"
    assert "utm_*" in DEFAULT_STRIP_PARAMS


def test_http_and_https_are_different_urls_but_one_site() -> None:
    plain, secure = parse_url("http://e.com/"), parse_url("https://e.com/")
    assert plain.canonical != secure.canonical
    assert plain.site == secure.site == "e.com"


@pytest.mark.parametrize(
    ("raw", "base", "message"),
    [
        ("ftp://example.com/file", None, "unsupported scheme 'ftp'"),
        ("mailto:someone@example.com", None, "unsupported scheme 'mailto'"),
        ("javascript:alert(1)", None, "unsupported scheme 'javascript'"),
        ("FILE:///etc/passwd", None, "unsupported scheme 'file'"),
        ("ws://example.com/", None, "unsupported scheme 'ws'"),
        ("/relative/path", None, "relative URL '/relative/path' and no base URL"),
        ("", None, "empty URL"),
        ("page.html", "not a url", "invalid base URL"),
        ("http://example.com:99999/", None, "invalid port '99999'"),
        ("http://example.com:8o/", None, "invalid port '8o'"),
        ("http://a..b/", None, "empty label"),
        ("http://xn--a.example/", None, "not a valid IDNA label"),
        ("http://[fe80::1%25eth0]/", None, "zone identifiers are not allowed"),
        ("http://1.2.3.4.5/", None, "invalid IPv4 address"),
        ("http://exa mple.com/", None, "forbidden character ' '"),
        ("http:///", None, "has no host"),
        ("http://ex\ud800.com/", None, "not valid Unicode"),
    ],
)
def test_invalid_urls_raise_a_clear_url_error(raw: str, base: str | None, message: str) -> None:
    with pytest.raises(UrlError, match=message.replace("(", r"\(")):
        parse_url(raw, base)


def test_overlong_urls_are_rejected_as_traps() -> None:
    parse_url("http://e.com/" + "a" * (MAX_URL_LENGTH - len("http://e.com/")))
    with pytest.raises(UrlError, match="the limit is 8192"):
        parse_url("http://e.com/" + "a" * MAX_URL_LENGTH)


@pytest.mark.parametrize(
    ("given", "site"),
    [
        ("https://WWW.Example.com:443/path", "www.example.com"),
        ("http://Example.com:8080/", "example.com:8080"),
        ("Example.COM.", "example.com"),
        ("0x7f.1", "127.0.0.1"),
        ("::1", "::1"),
        ("[::1]", "::1"),
        ("example.com:8080", "example.com:8080"),
        ("example.com:80", "example.com"),  # a bare authority is read as http
        ("[::1]:8080", "[::1]:8080"),
    ],
)
def test_site_key_accepts_urls_hosts_and_authorities(given: str, site: str) -> None:
    assert site_key(given) == site


def test_site_key_rejects_garbage() -> None:
    with pytest.raises(UrlError):
        site_key("a..b")
    with pytest.raises(UrlError):
        site_key("example.com:notaport")


def test_an_invalid_base_is_reported_as_such_even_for_absolute_urls() -> None:
    with pytest.raises(UrlError, match="invalid base URL"):
        parse_url("http://example.com/", "::not a base::")


@pytest.mark.parametrize(
    "raw",
    ["x" * 100_000, "http://" + "<" * 100_000 + "/", "http://e.com:" + "9" * 100_000],
    ids=["relative", "bad-host", "huge-port"],
)
def test_error_messages_stay_short_for_huge_inputs(raw: str) -> None:
    with pytest.raises(UrlError) as caught:
        parse_url(raw)
    assert len(str(caught.value)) < 300
