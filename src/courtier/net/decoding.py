"""Content-Encoding decoders that never give more than they are asked for.

Rules:
- ``gzip`` (and ``x-gzip``), ``deflate``, ``br`` and ``zstd`` are decoded: the ones the
  fetcher's ``Accept-Encoding`` names (``ACCEPT_ENCODING``). ``deflate`` is zlib-wrapped by
  the standard, raw in the wild: the first bytes tell which. No coding (or ``identity``)
  passes through as it came.
- ``zstd`` (RFC 8878) is decoded by the standard library's ``compression.zstd`` (Python
  3.14) or its backport ``backports.zstd`` (a dependency before 3.14): the one zstd API that
  bounds a call's output, as zlib's and brotli's do. Frames may follow each other; a frame
  asking for a window over 8 MiB is refused, as RFC 9659 lets an HTTP client do (and as
  browsers do), so a hostile frame header cannot make us allocate a large window.
- Stacked codings (``Content-Encoding: gzip, br``: gzip applied first) are undone in the
  reverse order.
- Any other coding (``compress``, a made-up one) is a ``DecodingError`` at the body's first
  bytes: a body we cannot decode is never kept as if it were the page. Whether some optional
  module could have decoded it does not matter: we never asked for it.
- ``decode(data, most)`` returns at most ``most`` bytes plus what one step of the
  decompressor overshoots, so a compression bomb is cut where the body limit stands, before
  it fills memory; the caller stops reading at the limit and never asks again.
- A corrupt stream raises ``DecodingError`` (a ``ValueError``): the fetch ends in an error.
"""

from __future__ import annotations

import sys
import zlib
from typing import Protocol

import brotli

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd

ACCEPT_ENCODING = "gzip, deflate, br, zstd"
"""The codings the fetcher asks for: exactly the ones decoded here."""
ZSTD_WINDOW_LOG_MAX = 23
"""A zstd frame's window is at most 2**23 bytes (8 MiB, RFC 9659 §3)."""


class DecodingError(ValueError):
    """The body is not in the coding its Content-Encoding names."""


class Decoder(Protocol):
    def decode(self, data: bytes, most: int) -> bytes: ...


class _Identity:
    __slots__ = ()

    def decode(self, data: bytes, most: int) -> bytes:
        return data


class _Zlib:
    __slots__ = ("_decompressor", "_gzip", "_start")

    def __init__(self, gzip: bool) -> None:
        self._gzip = gzip
        self._start = b""
        self._decompressor: zlib._Decompress | None = (
            zlib.decompressobj(16 + zlib.MAX_WBITS) if gzip else None
        )

    def decode(self, data: bytes, most: int) -> bytes:
        decompressor = self._decompressor
        if decompressor is None:  # deflate: wrapped or raw, seen in its first two bytes
            data = self._start + data
            if len(data) < 2:
                self._start = data
                return b""
            wrapped = data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0
            decompressor = zlib.decompressobj(zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS)
            self._decompressor = decompressor
        try:
            return decompressor.decompress(data, max(1, most))
        except zlib.error as exc:
            name = "gzip" if self._gzip else "deflate"
            raise DecodingError(f"the {name} body is corrupt: {exc}") from None


class _Brotli:
    __slots__ = ("_decompressor",)

    def __init__(self) -> None:
        self._decompressor = brotli.Decompressor()

    def decode(self, data: bytes, most: int) -> bytes:
        try:
            return bytes(self._decompressor.process(data, output_buffer_limit=max(1, most)))
        except brotli.error as exc:
            raise DecodingError(f"the br body is corrupt: {exc}") from None


class _Zstd:
    __slots__ = ("_decompressor",)

    def __init__(self) -> None:
        self._decompressor = _zstd_decompressor()

    def decode(self, data: bytes, most: int) -> bytes:
        most = max(1, most)
        pieces: list[bytes] = []
        size = 0
        try:
            while True:
                decompressor = self._decompressor
                if decompressor.eof:  # a frame ended: what follows is the next frame's
                    data = decompressor.unused_data + data
                    if not data:
                        break
                    decompressor = self._decompressor = _zstd_decompressor()
                piece = decompressor.decompress(data, most - size)
                data = b""
                pieces.append(piece)
                size += len(piece)
                if size >= most or not decompressor.eof:
                    break
        except zstd.ZstdError as exc:
            raise DecodingError(f"the zstd body is corrupt: {exc}") from None
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)


def _zstd_decompressor() -> zstd.ZstdDecompressor:
    window: dict[int, int] = {zstd.DecompressionParameter.window_log_max: ZSTD_WINDOW_LOG_MAX}
    return zstd.ZstdDecompressor(options=window)


class _Refused:
    __slots__ = ("_coding",)

    def __init__(self, coding: str) -> None:
        self._coding = coding

    def decode(self, data: bytes, most: int) -> bytes:
        raise DecodingError(f"the body is in the {self._coding!r} coding, which we do not decode")


class _Stacked:
    __slots__ = ("_decoders",)

    def __init__(self, decoders: list[Decoder]) -> None:
        self._decoders = decoders  # the outermost coding (listed last) first

    def decode(self, data: bytes, most: int) -> bytes:
        for decoder in self._decoders:
            data = decoder.decode(data, most)
        return data


IDENTITY = _Identity()


def decoder_for(content_encoding: str) -> Decoder:
    """The decoder of a Content-Encoding header value (see the module rules)."""
    codings = [c.strip().lower() for c in content_encoding.split(",")]
    decoders = [_one(c) for c in reversed(codings) if c and c != "identity"]
    if not decoders:
        return IDENTITY
    return decoders[0] if len(decoders) == 1 else _Stacked(decoders)


def _one(coding: str) -> Decoder:
    if coding in ("gzip", "x-gzip"):
        return _Zlib(gzip=True)
    if coding == "deflate":
        return _Zlib(gzip=False)
    if coding == "br":
        return _Brotli()
    if coding == "zstd":
        return _Zstd()
    return _Refused(coding)
