"""A body as it arrives: decoded in pieces of any size, cut exactly at the limit."""

from __future__ import annotations

import gzip
import itertools
import zlib
from collections.abc import Callable

import brotli
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from courtier.net.body import BodySink
from courtier.net.decoding import ACCEPT_ENCODING, DecodingError, decoder_for, zstd

CODINGS: dict[str, Callable[[bytes], bytes]] = {
    "": lambda data: data,
    "gzip": gzip.compress,
    "deflate": zlib.compress,
    "raw-deflate": lambda data: zlib.compress(data)[2:-4],
    "br": brotli.compress,
    "zstd": zstd.compress,
    "zstd-frames": lambda data: (
        zstd.compress(data[: len(data) // 2]) + zstd.compress(data[len(data) // 2 :])
    ),
}


def pieces(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


@settings(max_examples=150, deadline=None)
@given(
    page=st.binary(max_size=4000) | st.builds(lambda n: b"ab" * n, st.integers(0, 20000)),
    coding=st.sampled_from(sorted(CODINGS)),
    cuts=st.lists(st.integers(0, 10**6), max_size=8),
    limit=st.integers(0, 50000),
)
def test_any_body_in_any_pieces_is_decoded_and_cut_at_the_limit(page, coding, cuts, limit):
    wire = CODINGS[coding](page)
    sink = BodySink(limit)
    sink.decoder = decoder_for(
        {"raw-deflate": "deflate", "zstd-frames": "zstd"}.get(coding, coding)
    )
    for piece in pieces(wire, cuts):
        if not sink.add(piece):
            break
    body, spooled = sink.finish()
    assert spooled is None
    assert body == page[:limit]
    assert sink.truncated == (len(page) > limit)


def test_a_bomb_is_never_decoded_much_past_the_limit():
    # 256 MiB of zeros in 405 bytes; quality 5 builds it in 0.3 s (the default 11: 5 s).
    bomb = brotli.compress(b"\0" * (256 * 1024 * 1024), quality=5)
    sink = BodySink(1000)
    sink.decoder = decoder_for("br")
    assert not sink.add(bomb)
    assert sink.truncated and sink.finish()[0] == b"\0" * 1000


def test_a_zstd_bomb_is_never_decoded_much_past_the_limit():
    # 256 MiB of zeros in 8 KiB: fed in network-sized pieces, it stops at the limit.
    bomb = zstd.compress(b"\0" * (256 << 20))
    assert len(bomb) < 16 * 1024
    sink = BodySink(100_000)
    sink.decoder = decoder_for("zstd")
    for start in range(0, len(bomb), 4096):
        if not sink.add(bomb[start : start + 4096]):
            break
    assert sink.truncated and sink.finish()[0] == b"\0" * 100_000


def test_a_zstd_frame_asking_for_a_window_over_8_mib_is_refused():
    """RFC 9659: an HTTP zstd window is at most 8 MiB; a frame header asking for more must
    not make us allocate it."""
    wide = zstd.CompressionParameter.window_log
    page = bytes(range(256)) * (48 * 1024)  # 12 MiB, the window is set to 16 MiB
    wire = zstd.compress(page, options={wide: 24, zstd.CompressionParameter.content_size_flag: 0})
    sink = BodySink(len(page))
    sink.decoder = decoder_for("zstd")
    with pytest.raises(DecodingError, match="zstd body is corrupt"):
        sink.add(wire)


def test_what_we_ask_for_is_what_we_decode():
    for coding in ACCEPT_ENCODING.split(", "):
        assert type(decoder_for(coding)).__name__ != "_Refused", coding


def test_a_coding_we_do_not_decode_is_an_error_never_the_page():
    """compress was never asked for (Accept-Encoding names gzip, deflate, br, zstd): its
    bytes are not the page, whatever modules happen to be installed."""
    for coding in ("compress", "made-up", "gzip, compress"):
        sink = BodySink(100)
        sink.decoder = decoder_for(coding)
        with pytest.raises(DecodingError, match=r"compress|made-up"):
            sink.add(b"\x1f\x9d as it came")


def test_no_coding_and_identity_pass_through():
    for coding in ("", "identity", " Identity "):
        sink = BodySink(100)
        sink.decoder = decoder_for(coding)
        assert sink.add(b"as it came")
        assert sink.finish() == (b"as it came", None)


def test_stacked_codings_are_undone_in_reverse_order():
    page = b"<p>twice wrapped</p>" * 50
    body = brotli.compress(gzip.compress(page))  # gzip first, then br: "gzip, br"
    sink = BodySink(10_000)
    sink.decoder = decoder_for("gzip, br")
    sink.add(body)
    assert sink.finish()[0] == page


def test_a_corrupt_stream_is_a_decoding_error():
    for coding in ("gzip", "deflate", "br"):
        sink = BodySink(100)
        sink.decoder = decoder_for(coding)
        try:
            sink.add(b"\xff" * 64)
        except DecodingError as exc:
            assert coding in str(exc)
        else:
            raise AssertionError(f"{coding}: no error")
