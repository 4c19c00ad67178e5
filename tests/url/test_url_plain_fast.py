"""``parse_url``'s plain fast path gives exactly what the WHATWG parser gives, or stands aside.

Every reference is parsed twice: as ``parse_url`` does (fast path first) and with the fast
path switched off; the two must agree on the Url or on the error."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from courtier.url import UrlError, canonical, parse_url


def _both(raw: str, base: str | None) -> tuple[object, object]:
    def run() -> object:
        try:
            return parse_url(raw, base)
        except UrlError as error:
            return ("error", str(error))

    fast = run()
    original = canonical._plain
    canonical._plain = lambda raw, base: None  # type: ignore[assignment]
    try:
        slow = run()
    finally:
        canonical._plain = original
    return fast, slow


_TRICKY = "aA0/.%2eE?#&=;:@-_~!$()*+,'\"<>^`{|}[]\\ \t\n\x00é"
_HOSTS = st.sampled_from(
    ["shop.example", "Shop.example", "a.b.c", "a..b", "a.", "a.123", "123", "a.123.", "0x7f",
     "a.0x7f", "xn--p1ai", "xn--zz", "-a-.b", "a" * 64 + ".com", ("a" * 60 + ".") * 5 + "com",
     "a_b.com", "[::1]", "1.2.3.4", "localhost", "ab", "example.com:80", "example.com:443",
     "example.com:8080", "example.com:0080", "example.com:99999", "example.com:", "u:p@h.com"]
)  # fmt: skip
_BASES = st.sampled_from(
    [None, "https://shop.example/garden/spades", "http://shop.example:8080/a/b?c#d",
     "https://u:p@shop.example./x", "file:///etc/passwd", "mailto:a@b.c", "not a url",
     "http://a..b/x", "https://[::1]/x", "http://127.1/x", "HTTPS://SHOP.EXAMPLE/"]
)  # fmt: skip


@st.composite
def _references(draw: st.DrawFn) -> str:
    tail = draw(st.text(alphabet=_TRICKY, max_size=24))
    kind = draw(st.sampled_from(["absolute", "path", "raw"]))
    if kind == "raw":
        return tail
    if kind == "path":
        return "/" + tail
    scheme = draw(st.sampled_from(["http", "https", "HTTP", "ftp"]))
    return f"{scheme}://{draw(_HOSTS)}{draw(st.sampled_from(['', '/']))}{tail}"


@settings(max_examples=3000, deadline=None)
@given(_references(), _BASES)
@example("/item/17?ref=grid&pos=17", "https://shop.example/garden/spades")
@example("/./x", "https://shop.example/")
@example("/a/%2E%2e/x", "https://shop.example/")
@example("//evil.example/x", "https://shop.example/")
@example("https://a.example/x?y='z'", None)
@example("http://example.com:80/", "https://shop.example/")
def test_fast_path_agrees_with_the_whatwg_parser(raw: str, base: str | None) -> None:
    fast, slow = _both(raw, base)
    assert fast == slow


@pytest.mark.parametrize(
    ("raw", "base"),
    [
        ("/item/17?ref=grid&pos=17", "https://shop.example/garden/spades"),
        ("https://other.example/a/b", None),
        ("https://other.example:8443/a/b#top", "https://shop.example/"),
        ("/", "http://shop.example:8080/x"),
    ],
)
def test_plain_references_take_the_fast_path(raw: str, base: str | None) -> None:
    assert canonical._plain(raw, base) is not None
    fast, slow = _both(raw, base)
    assert fast == slow


@pytest.mark.parametrize(
    ("raw", "base"),
    [
        ("/a/../b", "https://shop.example/"),
        ("//other.example/", "https://shop.example/"),
        ("/a b", "https://shop.example/"),
        ("https://xn--p1ai/", None),
        ("http://127.1/", None),
        ("/x", "not a url"),
        ("https://a.example/", "not a url"),
        ("x/y", "https://shop.example/"),
    ],
)
def test_doubtful_references_are_left_to_the_parser(raw: str, base: str | None) -> None:
    assert canonical._plain(raw, base) is None


@pytest.mark.parametrize("raw", ["/", "x", "?q", "//[::1]:8080/y"])
def test_relative_link_on_an_ipv6_literal_site_keeps_one_pair_of_brackets(raw: str) -> None:
    # ada 4.0 reports a host taken from the base as a domain, whatever it is.
    for url in _both(raw, "http://[::1]:8080/dir/page"):
        assert isinstance(url, canonical.Url)
        assert url.host == "::1" and url.site == "[::1]:8080"
        assert url.fetch_url.startswith("http://[::1]:8080/")
