"""What a page says: its bytes decoded with the right character encoding.

Rules (the WHATWG encoding sniffing order, with w3lib's implementation of it):
- A byte order mark wins (UTF-8, UTF-16 LE/BE): browsers honour it over every declaration.
- Then the charset of the ``Content-Type`` header, then a ``<meta charset>`` /
  ``<meta http-equiv="Content-Type">`` (or an XML declaration) near the start of the body.
- Then detection: a body that is valid UTF-8 is UTF-8 (ASCII is too); anything else goes to
  ``charset-normalizer`` (the first ``DETECT_BYTES``); failing that, windows-1252, the web's
  default. Between the Latin single-byte code pages the detector is unsure on a page of a
  few sentences (a French page came out Baltic, cp1257, a Portuguese one Central European,
  cp1250): when it names one of those and windows-1252 reads the page nearly as well
  (``LATIN_MARGIN``), windows-1252 it is, as a browser's default for an undeclared page.
- Labels resolve as browsers resolve them: ``iso-8859-1`` and ``latin1`` are windows-1252,
  ``Shift_JIS`` is cp932 (windows-31J), an unknown label is ignored.
- Decoding never fails: bytes the encoding cannot read become lone surrogates
  (``surrogateescape``), so a redacted text encodes back to the very same bytes where nothing
  was redacted; the HTML parser reads them as U+FFFD.

Links (WHATWG URL parsing with an encoding): the path of a URL is always UTF-8, but the query
of a link on a page in a legacy encoding is percent-encoded in that encoding (a character it
cannot encode becomes ``&#N;``, percent-encoded); ``encode_query`` does that before the URL
parser sees the reference.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from typing import Final
from urllib.parse import quote

from w3lib.encoding import (
    html_body_declared_encoding,
    http_content_type_encoding,
    read_bom,
    resolve_encoding,
)

DETECT_BYTES: Final = 64 * 1024
"""Bytes given to detection when nothing declares the encoding."""
DEFAULT: Final = "cp1252"

_UTF: Final = frozenset({"utf-8", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le"})


@dataclass(frozen=True, slots=True)
class Decoded:
    text: str
    encoding: str
    """Python codec name (``utf-8``, ``cp1252``, ``cp1251``, ``cp932``...)."""
    source: str
    """Where it came from: ``bom``, ``header``, ``meta``, ``utf-8`` (valid UTF-8 without a
    declaration), ``detected`` or ``default``."""
    offset: int = 0
    """Bytes of a byte order mark before the text."""


def _codec(label: str | None) -> str | None:
    if not label:
        return None
    name = resolve_encoding(label)
    if name is None:
        return None
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def sniff(body: bytes, content_type: str = "") -> tuple[str, str, int]:
    """(codec, source, BOM length) for ``body`` served with ``content_type``."""
    bom, mark = read_bom(body)
    if bom is not None and mark is not None:
        codec = _codec(bom)
        if codec is not None:
            return codec, "bom", len(mark)
    # w3lib reads the header's charset (tolerantly, never raising) in the parse worker:
    # ``courtier.net.headers`` would import the whole network stack into every worker.
    codec = _codec(http_content_type_encoding(content_type))
    if codec is not None:
        return codec, "header", 0
    codec = _codec(html_body_declared_encoding(body[:4096]))
    if codec is not None:
        # A page declaring UTF-16 in ASCII bytes is not UTF-16 (WHATWG: it is UTF-8).
        return ("utf-8" if codec.startswith("utf-16") else codec), "meta", 0
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start >= len(body) - 3 and exc.reason == "unexpected end of data":
            return "utf-8", "utf-8", 0  # valid, cut inside a character by the body limit
    else:
        return "utf-8", "utf-8", 0
    return _detect(body[:DETECT_BYTES])


_COMMON: Final = ("cp1252", "cp1251", "cp932", "gb18030", "gbk", "big5", "euc_kr", "euc_jp")
"""The web's common legacy encodings: preferred among equally good detections (a short
French page reads the same in windows-1252 and windows-1250 as far as statistics go)."""


_LATIN: Final = frozenset(
    {
        "cp1250", "cp1254", "cp1257", "cp1258", "cp437", "cp775", "cp850", "cp852", "cp858",
        "iso8859_2", "iso8859_3", "iso8859_4", "iso8859_9", "iso8859_10", "iso8859_13",
        "iso8859_14", "iso8859_15", "iso8859_16", "latin_1", "mac_roman", "mac_latin2",
        "mac_iceland", "mac_turkish",
    }
)  # fmt: skip
"""Single-byte code pages for Latin scripts other than windows-1252."""
LATIN_MARGIN: Final = 0.1
"""How much more chaos (``charset-normalizer``'s mess ratio) windows-1252 may show than the
Latin code page detected and still be preferred to it."""


def _detect(sample: bytes) -> tuple[str, str, int]:
    from charset_normalizer import from_bytes

    results = list(from_bytes(sample))
    if not results:
        return DEFAULT, "default", 0
    best = results[0]
    ties = [
        r.encoding
        for r in results
        if r.chaos <= best.chaos and r.coherence >= best.coherence - 0.01
    ]
    common = [name for name in _COMMON if name in ties]
    chosen = common[0] if common else best.encoding
    if chosen in _LATIN:
        western = next((r for r in results if r.encoding == "cp1252"), None)
        if western is not None and western.chaos <= best.chaos + LATIN_MARGIN:
            chosen = "cp1252"
    codec = _codec(chosen)
    if codec is None:
        return DEFAULT, "default", 0
    return codec, "detected", 0


def decode(body: bytes, content_type: str = "") -> Decoded:
    codec, source, offset = sniff(body, content_type)
    try:
        text = body[offset:].decode(codec, "surrogateescape")
    except UnicodeDecodeError:  # a charset that lies (odd-length "utf-16"): keep the bytes
        codec, source, offset = DEFAULT, "fallback", 0
        text = body.decode(codec, "surrogateescape")
    return Decoded(text, codec, source, offset)


def encode_back(text: str, decoded: Decoded, body: bytes) -> bytes:
    """``text`` (``decoded.text`` after some change) as bytes in the page's own encoding,
    BOM kept; characters the encoding lacks become numeric character references."""
    try:
        return body[: decoded.offset] + text.encode(decoded.encoding, "surrogateescape")
    except UnicodeEncodeError:
        return body[: decoded.offset] + text.encode(decoded.encoding, "xmlcharrefreplace")


def parse_text(text: str) -> bytes:
    """UTF-8 for the HTML parser (lexbor reads bytes as UTF-8 and sniffs nothing). Bytes the
    encoding could not read go through as they were: invalid UTF-8, which lexbor reads as
    U+FFFD, as a browser shows it."""
    return text.encode("utf-8", "surrogateescape")


def encode_query(reference: str, codec: str) -> str:
    """``reference`` with the non-ASCII characters of its query percent-encoded in ``codec``
    (WHATWG: the query of a URL parsed on a page in a legacy encoding); unchanged on a UTF
    page, or when the query is ASCII."""
    if codec in _UTF or reference.isascii():
        return reference
    hash_at = reference.find("#")
    query_at = reference.find("?", 0, hash_at if hash_at >= 0 else len(reference))
    if query_at < 0:
        return reference
    end = hash_at if hash_at >= 0 else len(reference)
    query = reference[query_at + 1 : end]
    if query.isascii():
        return reference
    encoded = "".join(
        ch if ch.isascii() else quote(ch.encode(codec, "xmlcharrefreplace"), safe="")
        for ch in query
    )
    return reference[: query_at + 1] + encoded + reference[end:]
