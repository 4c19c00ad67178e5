"""Properties: canonicalisation is idempotent, and every spelling of a host gives one key.

The spellings are generated here independently of the code under test (Python's punycode
codec, ``ipaddress``, hand-written radix conversions), so a property can fail.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import unquote

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from courtier.url import UrlError, canonical_host, parse_url, site_key

PROPERTY_SETTINGS = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

# Lowercase, NFC, left-to-right letters that UTS-46 leaves as they are.
_UNICODE_LETTERS = "éüŷñøçåж日本"
_ASCII = "abcdefghijklmnopqrstuvwxyz0123456789"
_SEPARATORS = [".", "。", "．", "｡"]  # full stop, ideographic, full-width, half-width


@st.composite
def _label(draw: st.DrawFn) -> str:
    text = draw(st.text(alphabet=_ASCII + _UNICODE_LETTERS, min_size=1, max_size=12))
    if draw(st.booleans()) and len(text) >= 2:
        text = text[0] + "-" + text[1:]  # a hyphen inside, never at either end
    return text


@st.composite
def domain_names(draw: st.DrawFn) -> list[str]:
    labels = draw(st.lists(_label(), min_size=1, max_size=3))
    tld = draw(st.sampled_from(["com", "example", "test", "co.uk", "org"]))
    return [*labels, *tld.split(".")]


def _ace(label: str) -> str:
    return label if label.isascii() else "xn--" + label.encode("punycode").decode("ascii")


def _random_case(draw: st.DrawFn, text: str) -> str:
    flips = draw(st.lists(st.booleans(), min_size=len(text), max_size=len(text)))
    return "".join(
        char.upper() if flip and len(char.upper()) == 1 else char
        for char, flip in zip(text, flips, strict=True)
    )


@st.composite
def domain_spelling(draw: st.DrawFn, labels: list[str]) -> str:
    """One way a page might write the domain: IDN form, case, separators, trailing dot."""
    pieces = [_ace(label) if draw(st.booleans()) else label for label in labels]
    pieces = [_random_case(draw, piece) for piece in pieces]
    text = pieces[0]
    for piece in pieces[1:]:
        text += draw(st.sampled_from(_SEPARATORS)) + piece
    if draw(st.booleans()):
        text += "."
    return text


def _is_dns_valid(labels: list[str]) -> bool:
    ace = [_ace(label) for label in labels]
    return all(len(label) <= 63 for label in ace) and len(".".join(ace)) <= 253


@PROPERTY_SETTINGS
@given(st.data())
def test_every_spelling_of_a_domain_yields_one_key(data: st.DataObject) -> None:
    labels = data.draw(domain_names())
    expected = ".".join(_ace(label) for label in labels)
    first = data.draw(domain_spelling(labels))
    second = data.draw(domain_spelling(labels))
    assert _is_dns_valid(labels)
    assert canonical_host(first) == canonical_host(second) == expected
    port = data.draw(st.sampled_from(["", ":80"]))
    assert site_key(f"http://{first}{port}/x") == site_key(second) == expected


@st.composite
def _ipv4_part(draw: st.DrawFn, value: int) -> str:
    style = draw(st.sampled_from(["dec", "oct", "hex", "HEX"]))
    if style == "oct":
        return "0" + format(value, "o")
    if style == "hex":
        return "0x" + format(value, "x")
    if style == "HEX":
        return "0X" + format(value, "X")
    return str(value)


@st.composite
def ipv4_spelling(draw: st.DrawFn, address: int) -> str:
    """Dotted, short (a.b.c16, a.b24, a32) and mixed-radix spellings of one address."""
    parts = draw(st.integers(min_value=1, max_value=4))
    octets = address.to_bytes(4, "big")
    leading = list(octets[: parts - 1])
    rest = int.from_bytes(octets[parts - 1 :], "big")
    return ".".join([*(draw(_ipv4_part(v)) for v in leading), draw(_ipv4_part(rest))])


@PROPERTY_SETTINGS
@given(st.integers(min_value=0, max_value=2**32 - 1), st.data())
def test_every_spelling_of_an_ipv4_address_yields_the_dotted_quad(
    address: int, data: st.DataObject
) -> None:
    expected = str(ipaddress.IPv4Address(address))
    spelling = data.draw(ipv4_spelling(address))
    assert canonical_host(spelling) == expected
    assert site_key(f"https://{spelling}:443/") == expected


@st.composite
def ipv6_spelling(draw: st.DrawFn, address: int) -> str:
    ip = ipaddress.IPv6Address(address)
    style = draw(st.sampled_from(["compressed", "exploded", "v4-tail"]))
    if style == "exploded":
        text = ip.exploded
    elif style == "v4-tail":
        head = ip.exploded.rsplit(":", 2)[0]
        text = f"{head}:{ipaddress.IPv4Address(address & 0xFFFFFFFF)}"
    else:
        text = ip.compressed
    text = _random_case(draw, text)
    return f"[{text}]" if draw(st.booleans()) else text


@PROPERTY_SETTINGS
@given(
    st.one_of(
        st.integers(min_value=0, max_value=2**128 - 1),
        st.integers(min_value=0, max_value=2**16 - 1).map(lambda low: low << 64),  # zero runs
        st.integers(min_value=0, max_value=2**32 - 1).map(lambda v4: 0xFFFF << 32 | v4),
    ),
    st.data(),
)
def test_every_spelling_of_an_ipv6_address_yields_rfc_5952_text(
    address: int, data: st.DataObject
) -> None:
    expected = str(ipaddress.IPv6Address(address))
    spelling = data.draw(ipv6_spelling(address))
    assert canonical_host(spelling) == expected
    assert parse_url(f"http://[{spelling.strip('[]')}]:80/").site == expected


_PATH_PIECES = ["a", "B", "é", "%7e", "%7E", "%2f", "%c3%a9", ".", "..", "%2e", ";jsessionid=1",
                ";v=2", " ", "%", "~", "+", "'", "|"]  # fmt: skip
_QUERY_NAMES = ["a", "b", "B", "utm_source", "UTM_medium", "sid", "q", "%61", "é", ""]


@st.composite
def urls(draw: st.DrawFn) -> str:
    scheme = draw(st.sampled_from(["http", "https", "HTTP"]))
    labels = draw(domain_names())
    host = draw(domain_spelling(labels))
    port = draw(st.sampled_from(["", ":80", ":443", ":8080"]))
    segments = draw(st.lists(st.lists(st.sampled_from(_PATH_PIECES), max_size=3), max_size=4))
    path = "/" + "/".join("".join(segment) for segment in segments)
    pairs = draw(
        st.lists(
            st.tuples(st.sampled_from(_QUERY_NAMES), st.sampled_from(["", "=1", "=%41", "=x=y"])),
            max_size=5,
        )
    )
    query = ("?" + "&".join(name + value for name, value in pairs)) if pairs else ""
    fragment = draw(st.sampled_from(["", "#", "#top"]))
    return f"{scheme}://{host}{port}{path}{query}{fragment}"


@PROPERTY_SETTINGS
@given(urls())
def test_canonicalisation_is_idempotent(raw: str) -> None:
    url = parse_url(raw)
    again = parse_url(url.canonical)
    assert again.canonical == url.canonical
    assert parse_url(url.fetch_url).fetch_url == url.fetch_url
    assert canonical_host(url.host) == url.host
    assert again.site == url.site


@PROPERTY_SETTINGS
@given(urls(), st.data())
def test_query_order_does_not_change_the_key(raw: str, data: st.DataObject) -> None:
    url = parse_url(raw)
    head, _, query = url.fetch_url.partition("?")
    pieces = [piece for piece in query.split("&") if piece]
    # Reordering pieces with different names must not change the key (same names keep order).
    names = [unquote(piece.partition("=")[0]) for piece in pieces]
    if len(set(names)) != len(names):
        return
    shuffled = data.draw(st.permutations(pieces))
    assert parse_url(head + "?" + "&".join(shuffled)).canonical == url.canonical


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=40), st.one_of(st.none(), st.just("http://base.example/dir/")))
def test_arbitrary_text_parses_or_raises_url_error_and_nothing_else(
    raw: str, base: str | None
) -> None:
    try:
        url = parse_url(raw, base)
    except UrlError as error:
        assert str(error)
        return
    assert url.scheme in ("http", "https")
    assert parse_url(url.canonical).canonical == url.canonical


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=30))
def test_arbitrary_text_as_a_host_is_canonical_or_a_url_error(raw: str) -> None:
    try:
        host = canonical_host(raw)
    except UrlError as error:
        assert str(error)
        return
    assert canonical_host(host) == host


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=12))
def test_any_xn_label_is_canonical_or_a_url_error(suffix: str) -> None:
    try:
        host = canonical_host(f"xn--{suffix}.example")
    except UrlError as error:
        assert "label" in str(error)
        return
    assert canonical_host(host) == host
