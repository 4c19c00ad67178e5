"""Canonical hosts: every spelling of one host gives one key; invalid hosts give clear errors."""

from __future__ import annotations

import pytest

from courtier.url import UrlError, canonical_host, is_ip_address, is_ipv6, registrable_domain
from courtier.url.host import HOST_CACHE_SIZE

LOOPBACK_SPELLINGS = [
    "127.0.0.1",
    "0177.0.0.1",  # octal
    "0x7f.0.0.1",  # hex
    "0x7F.1",  # hex, short form
    "2130706433",  # one 32-bit integer
    "017700000001",  # one octal integer
    "0x7f000001",  # one hex integer
    "127.1",  # short: last part fills the remaining octets
    "127.0.1",
    "0x7f.0.0.01",  # mixed
    "127.0.0.1.",  # trailing dot
    " 127.0.0.1 ",  # surrounding whitespace
]


@pytest.mark.parametrize("spelling", LOOPBACK_SPELLINGS)
def test_every_ipv4_spelling_of_loopback_is_the_dotted_quad(spelling: str) -> None:
    assert canonical_host(spelling) == "127.0.0.1"


@pytest.mark.parametrize(
    ("spelling", "canonical"),
    [
        ("[::1]", "::1"),
        ("::1", "::1"),  # bare
        ("[0:0:0:0:0:0:0:1]", "::1"),
        ("2001:DB8:0:0:1:0:0:1", "2001:db8::1:0:0:1"),  # longest zero run, first on a tie
        ("[2001:0db8::0001]", "2001:db8::1"),  # leading zeros dropped
        ("2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"),  # one zero group is not compressed
        ("[::FFFF:127.0.0.1]", "::ffff:7f00:1"),  # IPv4-mapped, dotted tail
    ],
)
def test_ipv6_is_rfc_5952_text_without_brackets(spelling: str, canonical: str) -> None:
    assert canonical_host(spelling) == canonical


@pytest.mark.parametrize(
    "spelling",
    [
        "tŷ.example",
        "TŶ.EXAMPLE",
        "xn--t-foa.example",
        "XN--T-FOA.Example.",
        "tŷ。example",  # ideographic full stop
        "tŷ．example",  # full-width full stop
        "tŷ｡example",  # half-width ideographic full stop
        "ｔŷ.ｅｘａｍｐｌｅ",  # full-width letters map to ASCII
    ],
)
def test_idn_spellings_share_the_punycode_key(spelling: str) -> None:
    assert canonical_host(spelling) == "xn--t-foa.example"


@pytest.mark.parametrize(
    ("spelling", "canonical"),
    [
        ("Example.COM", "example.com"),
        ("example.com.", "example.com"),
        ("ex%41mple.com", "example.com"),  # percent-decoded first, as WHATWG does
        ("faß.de", "xn--fa-hia.de"),  # nontransitional: ß is kept, not mapped to ss
        ("a_b.example", "a_b.example"),  # underscores occur in real names
        ("localhost", "localhost"),
        ("xn--ls8h.la", "xn--ls8h.la"),  # valid punycode (an emoji) round-trips
    ],
)
def test_domain_names_are_lowercase_punycode_without_trailing_dot(
    spelling: str, canonical: str
) -> None:
    assert canonical_host(spelling) == canonical


@pytest.mark.parametrize(
    ("host", "message"),
    [
        ("", "empty host"),
        ("   ", "empty host"),
        (".", "no name"),
        ("a..b", "empty label"),
        ("example.com..", "empty label"),
        ("a" * 64 + ".example", "64 octets long; the limit is 63"),
        (".".join(["a" * 63] * 4), "255 octets long; the limit is 253"),
        ("xn--a.example", "not a valid IDNA label"),
        ("xn--ls8h=.example", "not valid punycode"),
        ("xn--a-qc4g.example", "not a valid IDNA label"),  # decodes to a surrogate code point
        ("xn--.example", "does not encode a non-ASCII name"),
        ("xn--abc-.example", "does not encode a non-ASCII name"),
        ("fe80::1%eth0", "zone identifiers are not allowed"),
        ("[fe80::1%25eth0]", "zone identifiers are not allowed"),
        ("[1:2:3]", "invalid IPv6 address"),
        ("example.com:8080", "has a port"),
        ("example.com:", "has a port"),
        ("[::1]:80", "has text after the IPv6 address"),
        ("http://example.com", "is a URL, not a host"),
        ("1.2.3.4.5", "invalid IPv4 address"),
        ("256.256.256.256", "invalid IPv4 address"),
        ("example.0x100000000", "invalid IPv4 address"),
        ("evil.example/@good.example", "forbidden character '/'"),
        ("user@example.com", "forbidden character '@'"),
        ("exa mple.com", "forbidden character ' '"),
        ("exa<mple.com", "invalid host"),
        ("\x1fexample.com", "forbidden character"),
        ("\u1680example.com", "forbidden character"),  # a non-ASCII space is not trimmed
        ("bad\ud800.example", "not valid Unicode"),
    ],
)
def test_invalid_hosts_raise_a_clear_url_error(host: str, message: str) -> None:
    with pytest.raises(UrlError, match=message.replace("(", r"\(").replace("[", r"\[")):
        canonical_host(host)


def test_url_error_is_a_value_error_so_existing_guards_catch_it() -> None:
    with pytest.raises(ValueError):
        canonical_host("a..b")


def test_host_cache_is_bounded() -> None:
    assert canonical_host.cache_info().maxsize == HOST_CACHE_SIZE


@pytest.mark.parametrize(
    ("host", "ip", "v6"),
    [("127.0.0.1", True, False), ("::1", True, True), ("example.com", False, False)],
)
def test_address_predicates_on_canonical_hosts(host: str, ip: bool, v6: bool) -> None:
    assert is_ip_address(host) is ip
    assert is_ipv6(host) is v6


@pytest.mark.parametrize(
    ("host", "domain"),
    [
        ("www.example.com", "example.com"),
        ("WWW.BBC.CO.UK.", "bbc.co.uk"),
        ("a.b.example.test", "example.test"),  # unknown TLDs: the default "*" rule
        ("bucket.s3.amazonaws.com", "bucket.s3.amazonaws.com"),  # private section counts
        ("user.github.io", "user.github.io"),
        ("www.tŷ.example", "xn--t-foa.example"),
        ("com", None),  # a public suffix has no registrable domain
        ("github.io", None),
        ("localhost", None),
        ("127.1", None),  # addresses have none
        ("::1", None),
    ],
)
def test_registrable_domain_comes_from_the_offline_public_suffix_list(
    host: str, domain: str | None
) -> None:
    assert registrable_domain(host) == domain


def test_registrable_domain_rejects_invalid_hosts() -> None:
    with pytest.raises(UrlError):
        registrable_domain("a..b")
