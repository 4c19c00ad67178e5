"""SHA-1 labels as base64 writes them; compressing each record with a window sized to it
gives the very same gzip member; every level (igzip's and zlib's) gives one whole gzip member
that any reader inflates; WARC dates as WARC 1.1 writes them."""

from __future__ import annotations

import base64
import hashlib
import random
import zlib
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from courtier.sinks import warc
from courtier.sinks.warc import (
    FAST_LEVELS,
    compress_member,
    payload_digest,
    sha1_label,
    warc_date,
    window_bits,
)


@pytest.mark.parametrize("level", [1, 3, 6])
def test_a_window_sized_to_the_record_compresses_to_the_same_bytes(level):
    rng = random.Random(level)
    words = [b"<p>", b"lorem ", b"ipsum ", b"</a>", bytes(range(256))]
    for size in [0, 1, 249, 250, 251, 256, 511, 512, 513, 8000, 8192, 16130, 16131, 40000]:
        data = b"".join(rng.choice(words) for _ in range(size))[:size]
        whole = zlib.compressobj(level, zlib.DEFLATED, zlib.MAX_WBITS | 16)
        sized = zlib.compressobj(level, zlib.DEFLATED, window_bits(size) | 16)
        expected = whole.compress(data) + whole.flush()
        assert sized.compress(data) + sized.flush() == expected, size
        assert zlib.decompress(expected, zlib.MAX_WBITS | 16) == data


@given(st.binary(max_size=70_000) | st.text(max_size=20_000).map(str.encode), st.integers(1, 9))
def test_every_level_gives_one_whole_gzip_member(data, level):
    member = compress_member(data, level)
    reader = zlib.decompressobj(zlib.MAX_WBITS | 16)  # Python's zlib: what warcio reads with
    assert reader.decompress(member) == data
    assert reader.eof and reader.unused_data == b""


def test_the_fast_levels_are_not_zlibs():
    page = b"".join(b"<p>%d lorem ipsum</p>" % i for i in range(3000))
    for level in FAST_LEVELS:
        zlibs = zlib.compressobj(level, zlib.DEFLATED, zlib.MAX_WBITS | 16)
        assert compress_member(page, level) != zlibs.compress(page) + zlibs.flush()
    assert compress_member(page, 6) == zlib.compress(page, 6, zlib.MAX_WBITS | 16)


def test_window_bits_stay_within_zlibs_range():
    assert window_bits(0) == 9 and window_bits(100) == 9
    assert window_bits(1 << 20) == zlib.MAX_WBITS
    assert window_bits(4000) == 13


@given(st.floats(min_value=0, max_value=4e9, allow_nan=False))
def test_warc_dates_are_the_strftime_ones(when):
    expected = datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    assert warc_date(when) == expected


@given(st.binary(min_size=20, max_size=20))
def test_a_sha1_label_is_base64s_base32(digest):
    assert sha1_label(digest) == "sha1:" + base64.b32encode(digest).decode()


def test_payload_digest_of_known_bodies():
    for body in [b"", b"abc", bytes(range(256)) * 40]:
        expected = base64.b32encode(hashlib.sha1(body).digest()).decode()
        assert payload_digest(body) == f"sha1:{expected}"
    assert payload_digest(b"") == "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"


_HEADER_TEXT = st.text(alphabet=st.sampled_from([*"aZ09 ;=-'\"/,*%", "é", "\u2603", "\x7f"]))


@given(
    st.sampled_from(["HTTP/1.1 200 OK", "HTTP/1.1 404 Not Found", "GET /a?b=c HTTP/1.1"]),
    st.lists(st.tuples(_HEADER_TEXT, _HEADER_TEXT), max_size=6),
)
def test_an_http_block_is_the_one_warcio_encodes(first_line, headers):
    """Joined here when ASCII, by warcio otherwise: the bytes of warcio's ``to_ascii_bytes``
    (for the blocks warcio can encode at all)."""
    from warcio.statusandheaders import StatusAndHeaders

    request = first_line.startswith("GET ")
    if request:
        http = StatusAndHeaders(first_line, list(headers), is_http_request=True)
    else:
        http = StatusAndHeaders(first_line[9:], list(headers), protocol="HTTP/1.1")
    try:
        expected = http.to_ascii_bytes()
    except UnicodeEncodeError:  # what warcio cannot encode is percent-encoded whole
        assert warc._http_block(first_line, list(headers)).isascii()
        return
    assert warc._http_block(first_line, list(headers)) == expected


def test_record_ids_are_random_version_4_uuids():
    import uuid

    ids = [warc._record_id() for _ in range(2000)]
    assert len(set(ids)) == len(ids)
    for record_id in ids:
        assert record_id.startswith("<urn:uuid:") and record_id.endswith(">")
        parsed = uuid.UUID(record_id[len("<urn:uuid:") : -1])
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122
        assert str(parsed) == record_id[len("<urn:uuid:") : -1]  # lower-case, hyphenated
