"""Header parsing under a hostile server: table tests, then properties (never raises)."""

from __future__ import annotations

import math
import sys
from datetime import UTC, datetime
from email.utils import format_datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from courtier.net.headers import (
    MAX_DELTA_SECONDS,
    MAX_ETAG,
    MAX_LINKS,
    MAX_LOCATION,
    cache_max_age,
    charset_of,
    etag,
    http_date,
    link_header,
    location,
    media_type,
    retry_after_seconds,
)
from courtier.politeness.backoff import parse_retry_after

NOW = 1_700_000_000.0
DATE_IN_30S = format_datetime(datetime.fromtimestamp(NOW + 30, UTC), usegmt=True)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        ("120", 120.0),
        (" 120\t", 120.0),
        ("0", 0.0),
        ("007", 7.0),
        ("²", None),  # str.isdigit() says yes, float() says no: not delta-seconds
        ("١٢٠", None),  # Arabic-Indic digits: int() reads them, RFC 9110 does not
        ("1e3", None),
        ("12.5", None),
        ("-5", None),
        ("+5", None),
        ("inf", None),
        ("NaN", None),
        ("1_000", None),
        ("", None),
        ("soon", None),
        ("12 0", None),
        ("120\x00", None),
        ("\ud800", None),
        ("9" * 400, sys.float_info.max),  # too large for a float: saturates
        ("9" * 10_000, sys.float_info.max),
        ("Mon, 01 Jan 1990 00:00:00 GMT", 0.0),  # a date in the past
        ("Sun, 06 Nov 99999 08:49:37 GMT", None),  # year out of range
        ("Sun, 06 Nov 1994 08:49:37 +9999", None),  # zone out of range
    ],
)
def test_retry_after_table(value: str | None, expected: float | None) -> None:
    assert retry_after_seconds(value, NOW) == expected


def test_retry_after_http_date_forms() -> None:
    assert retry_after_seconds(DATE_IN_30S, NOW) == pytest.approx(30.0, abs=1.0)
    # RFC 850 and asctime: HTTP-dates are GMT even when no zone is written.
    assert http_date("Sunday, 06-Nov-94 08:49:37 GMT") == 784111777.0
    assert http_date("Sun Nov  6 08:49:37 1994") == 784111777.0
    assert http_date("Sun, 06 Nov 1994 08:49:37 GMT") == 784111777.0
    assert http_date("Sun, 06 Nov 1994 08:49:37 +0100") == 784111777.0 - 3600
    for bad in (None, "", "0", "yesterday", "Sun, 06 Nov 1994 ²8:49:37 GMT", "x" * 500):
        assert http_date(bad) is None


def test_parse_retry_after_clamps_to_a_keyword_maximum() -> None:
    assert parse_retry_after("²", 0.0) is None
    assert parse_retry_after("999999999", 0.0) == 24 * 3600.0
    assert parse_retry_after("999999999", 0.0, maximum=600.0) == 600.0
    assert parse_retry_after("120", 0.0, maximum=600.0) == 120.0
    assert parse_retry_after("9" * 5000, 0.0) == 24 * 3600.0


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("text/html", ("text/html", {})),
        ("Text/HTML; Charset=UTF-8", ("text/html", {"charset": "utf-8"})),
        ('text/html;charset="utf-8"', ("text/html", {"charset": "utf-8"})),
        ("text/html;\tcharset=utf-8 ;", ("text/html", {"charset": "utf-8"})),
        (
            'multipart/mixed; boundary="AbC d"; Boundary=other',
            ("multipart/mixed", {"boundary": "AbC d"}),  # first occurrence wins, case kept
        ),
        ('text/plain; q="a\\"b"', ("text/plain", {"q": 'a"b'})),
        ("text/html; charset", ("text/html", {})),  # a malformed parameter is skipped
        ("text/html; charset=; x=1", ("text/html", {"x": "1"})),
        ("text/html; a=b c; d=e", ("text/html", {"d": "e"})),
        ('text/html; a="unterminated', ("text/html", {})),
        ("text/html garbage", None),
        ("text/html, text/plain", None),
        ("text / html", None),
        ("text/", None),
        ("/html", None),
        ("html", None),
        ("", None),
        (None, None),
        ("tëxt/html", None),
        ("text/html\x00", None),
        ("text/html; charset=utf-8\r\nX-Injected: 1", None),
    ],
)
def test_media_type_table(value: str | None, expected: object) -> None:
    assert media_type(value) == expected


def test_charset_of() -> None:
    assert charset_of("text/html; charset=ISO-8859-1") == "iso-8859-1"
    assert charset_of('text/html; charset="UTF-8"') == "utf-8"
    assert charset_of('text/html; charset="utf 8"') is None  # not a token
    assert charset_of('text/html; charset=""') is None
    assert charset_of("text/html") is None
    assert charset_of(None) is None
    assert charset_of("garbage") is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ('"abc"', '"abc"'),
        (' W/"abc" ', 'W/"abc"'),
        ('""', '""'),
        ('"çé"', '"çé"'),  # obs-text
        ("abc", None),  # unquoted
        ('w/"abc"', None),  # the weak prefix is case-sensitive
        ('"a"b"', None),
        ('"a b"', None),
        ('"a\tb"', None),
        ('"a\x01"', None),
        ('"\udcff"', None),
        ('"', None),
        ('W/"', None),
        ("", None),
        (None, None),
        ('"' + "x" * MAX_ETAG + '"', None),
    ],
)
def test_etag_table(value: str | None, expected: str | None) -> None:
    assert etag(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("max-age=600", 600),
        ("public, MAX-AGE=60, must-revalidate", 60),
        ('max-age="60"', 60),
        ("s-maxage=10", None),
        ("s-maxage=10, max-age=20", 20),
        ("max-age=20, max-age=30", 20),  # the first occurrence
        ('private="max-age=5", max-age=7', 7),
        ("max-age=0", 0),
        ("max-age=99999999999999999999", MAX_DELTA_SECONDS),
        ("max-age=" + "9" * 10_000, MAX_DELTA_SECONDS),
        ("max-age=-1", None),
        ("max-age=²", None),
        ("max-age=1e3", None),
        ("max-age=60 junk", None),
        ("max-age", None),
        ("no-store", None),
        ("", None),
        (None, None),
        (",,,", None),
    ],
)
def test_cache_max_age_table(value: str | None, expected: int | None) -> None:
    assert cache_max_age(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("https://a.test/x", "https://a.test/x"),
        ("  /relative?q=1 \t", "/relative?q=1"),
        ("", None),
        ("   ", None),
        (None, None),
        ("/a\r\nSet-Cookie: x", None),
        ("/a\x00b", None),
        ("/a\tb", None),
        ("/\udc80", None),
        ("/" + "a" * MAX_LOCATION, None),
        ("/" + "a" * (MAX_LOCATION - 1), "/" + "a" * (MAX_LOCATION - 1)),
    ],
)
def test_location_table(value: str | None, expected: str | None) -> None:
    assert location(value) == expected


def test_link_header_table() -> None:
    value = (
        '<https://a.test/p2>; rel="Next", <https://a.test/p1>; rel=prev; title="x, y", '
        "junk, <https://a.test/s.css>; rel=preload; as=style; crossorigin, "
        "<https://a.test/x>; rel=next; bad junk; rel=other, <https://a.test/\x00>; rel=next"
    )
    assert link_header(value) == [
        ("https://a.test/p2", {"rel": "next"}),
        ("https://a.test/p1", {"rel": "prev", "title": "x, y"}),
        ("https://a.test/s.css", {"rel": "preload", "as": "style", "crossorigin": ""}),
        ("https://a.test/x", {"rel": "next"}),
    ]
    assert link_header(None) == []
    assert link_header("") == []
    assert link_header("<unterminated") == []
    assert link_header("no links here") == []
    assert len(link_header("<a>, " * 10_000)) == 0  # longer than any header: not read
    assert len(link_header("<a>," * 1000)) == MAX_LINKS


# Properties: any text, and any bytes as the two decodings an HTTP client may hand over.
texts = st.one_of(
    st.text(),
    st.binary().map(lambda b: b.decode("latin-1")),
    st.binary().map(lambda b: b.decode("utf-8", errors="surrogateescape")),
    st.text(alphabet='0123456789²³¹٠١ ;,="<>/\\Wwe.+-:\t', max_size=40),
)


@given(texts, st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12))
def test_retry_after_never_raises_and_is_finite_non_negative(value: str, now: float) -> None:
    result = retry_after_seconds(value, now)
    assert result is None or (isinstance(result, float) and math.isfinite(result) and result >= 0)
    clamped = parse_retry_after(value, now, maximum=600.0)
    assert clamped is None or 0.0 <= clamped <= 600.0


@given(texts)
def test_http_date_never_raises(value: str) -> None:
    result = http_date(value)
    assert result is None or (isinstance(result, float) and math.isfinite(result))


@given(texts)
def test_media_type_never_raises(value: str) -> None:
    result = media_type(value)
    if result is not None:
        kind, params = result
        assert kind == kind.lower() and kind.count("/") == 1 and kind.isascii()
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in params.items())
        assert all(k == k.lower() and k.isascii() for k in params)
    charset = charset_of(value)
    assert charset is None or (charset and charset.isascii() and charset == charset.lower())


@given(texts)
def test_etag_never_raises(value: str) -> None:
    result = etag(value)
    if result is not None:
        assert len(result) <= MAX_ETAG and result.endswith('"')
        assert result.startswith(('"', 'W/"'))


@given(texts)
def test_cache_max_age_never_raises(value: str) -> None:
    result = cache_max_age(value)
    assert result is None or (type(result) is int and 0 <= result <= MAX_DELTA_SECONDS)


@given(texts)
def test_location_never_raises(value: str) -> None:
    result = location(value)
    if result is not None:
        assert 0 < len(result) <= MAX_LOCATION
        assert not any(ord(c) < 0x20 or c == "\x7f" or 0xD800 <= ord(c) <= 0xDFFF for c in result)


@given(texts)
def test_link_header_never_raises(value: str) -> None:
    links = link_header(value)
    assert isinstance(links, list) and len(links) <= MAX_LINKS
    for target, params in links:
        assert isinstance(target, str) and len(target) <= MAX_LOCATION
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in params.items())


@given(st.lists(st.sampled_from(['<a>; rel="next"', "<b>; rel=prev", "junk", '"q,"', ";"])))
def test_link_header_composed_lists_never_raise(parts: list[str]) -> None:
    assert len(link_header(", ".join(parts))) <= MAX_LINKS
