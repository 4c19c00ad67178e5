"""Compressing each record with a window sized to it gives the very same gzip member; WARC
dates as WARC 1.1 writes them."""

from __future__ import annotations

import random
import zlib
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from courtier.sinks.warc import warc_date, window_bits


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


def test_window_bits_stay_within_zlibs_range():
    assert window_bits(0) == 9 and window_bits(100) == 9
    assert window_bits(1 << 20) == zlib.MAX_WBITS
    assert window_bits(4000) == 13


@given(st.floats(min_value=0, max_value=4e9, allow_nan=False))
def test_warc_dates_are_the_strftime_ones(when):
    expected = datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    assert warc_date(when) == expected
