"""Sitemap parsing: the URLs (and their last modification times) a site lists for discovery.

The sitemap locations themselves come from robots.txt ``Sitemap:`` lines (protego reads
them). This module turns one fetched sitemap body into entries; fetching, following an index
to its child sitemaps and canonicalising the URLs are the caller's business.

Rules:
- Accepted forms: an XML ``<urlset>`` (entries are pages), an XML ``<sitemapindex>`` (entries
  are further sitemaps), and the protocol's plain-text form (one absolute http(s) URL per
  line). Either may be gzip-compressed: recognised by its magic bytes, not by a file name or a
  header, since servers mislabel both ways.
- Element names are matched on their local name, so a missing or wrong namespace does not
  matter; only ``loc`` and ``lastmod`` directly inside an entry count (an ``image:loc`` deep
  inside is not a page).
- Limits (the protocol's own by default): at most ``max_bytes`` after decompression and
  ``max_urls`` entries. Past a limit parsing stops, and the result keeps every entry read so
  far and says why it stopped (``truncated``). Decompression is incremental and capped, so a
  gzip bomb costs ``max_bytes`` and no more.
- A DOCTYPE is refused before parsing: sitemaps never need one, and it is the door for entity
  expansion attacks (and usually means an HTML error page was served instead).
- Malformed input raises ``SitemapError`` with what went wrong and where; the error carries
  every entry read before the fault (``partial``), so nothing already parsed is lost.
- An entry without a usable ``loc`` is skipped and counted; an unparseable ``lastmod`` becomes
  None and is counted; neither stops the parse.

Pure: bytes in, entries out.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from enum import StrEnum
from typing import Final
from xml.etree.ElementTree import Element, ParseError, XMLPullParser

MAX_BYTES: Final = 50 * 1024 * 1024  # the sitemap protocol's limit, uncompressed
MAX_URLS: Final = 50_000  # the sitemap protocol's limit per file
MAX_LOC_CHARS: Final = 2048  # the protocol's limit on one URL
_CHUNK: Final = 64 * 1024
_GZIP_MAGIC: Final = b"\x1f\x8b"
_BOM: Final = b"\xef\xbb\xbf"


class SitemapKind(StrEnum):
    URLSET = "urlset"
    INDEX = "sitemapindex"
    TEXT = "text"


@dataclass(frozen=True, slots=True)
class SitemapEntry:
    loc: str
    lastmod: float | None = None  # seconds since the epoch, UTC


@dataclass(frozen=True, slots=True)
class SitemapLimits:
    max_bytes: int = MAX_BYTES
    max_urls: int = MAX_URLS

    def __post_init__(self) -> None:
        if self.max_bytes < 1 or self.max_urls < 1:
            raise ValueError("sitemap limits must be at least 1")


@dataclass(frozen=True, slots=True)
class Sitemap:
    kind: SitemapKind | None  # None only in the partial result of input that never got going
    entries: tuple[SitemapEntry, ...]
    truncated: str | None = None  # why parsing stopped before the end, if it did
    skipped: int = 0  # entries without a usable loc
    bad_lastmod: int = 0  # lastmod values that did not parse (entry kept, lastmod None)

    @property
    def urls(self) -> list[str]:
        return [entry.loc for entry in self.entries]


class SitemapError(ValueError):
    """A sitemap body that cannot be parsed to the end; ``partial`` holds what was read."""

    def __init__(self, message: str, partial: Sitemap) -> None:
        super().__init__(message)
        self.partial = partial


def parse_sitemap(body: bytes, limits: SitemapLimits = SitemapLimits()) -> Sitemap:
    """Parse one sitemap, sitemap index or text sitemap, gzip-compressed or not."""
    data, truncated, fault = _decompressed(body, limits.max_bytes)
    builder = _Builder(limits)
    complete = truncated is None and fault is None
    if _looks_like_xml(data):
        _parse_xml(data, builder, complete=complete)
    else:
        _parse_text(data, builder, complete=complete)
    if fault is not None:
        raise SitemapError(fault, builder.result(None))
    return builder.result(builder.truncated or truncated)


def is_gzip(body: bytes) -> bool:
    return body[:2] == _GZIP_MAGIC


def _decompressed(body: bytes, max_bytes: int) -> tuple[bytes, str | None, str | None]:
    """The body to parse, why it was cut short (a limit), and a decompression fault."""
    if not is_gzip(body):
        if len(body) > max_bytes:
            return body[:max_bytes], f"body exceeds {max_bytes} bytes", None
        return body, None, None
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    out: list[bytes] = []
    produced = 0
    try:
        for start in range(0, len(body), _CHUNK):
            pending = body[start : start + _CHUNK]
            while pending:
                piece = inflater.decompress(pending, max_bytes + 1 - produced)
                out.append(piece)
                produced += len(piece)
                if produced > max_bytes:
                    whole = b"".join(out)[:max_bytes]
                    return whole, f"decompressed body exceeds {max_bytes} bytes", None
                pending = inflater.unconsumed_tail
            if inflater.eof:
                break
        out.append(inflater.flush())
    except zlib.error as exc:
        return b"".join(out), None, f"corrupt gzip data after {produced} bytes: {exc}"
    if not inflater.eof:
        return b"".join(out), None, f"gzip data ends early, after {produced} bytes"
    return b"".join(out), None, None


def _looks_like_xml(data: bytes) -> bool:
    return data.removeprefix(_BOM).lstrip()[:1] == b"<"


class _Builder:
    def __init__(self, limits: SitemapLimits) -> None:
        self.limits = limits
        self.kind: SitemapKind | None = None
        self.entries: list[SitemapEntry] = []
        self.skipped = 0
        self.bad_lastmod = 0
        self.truncated: str | None = None

    @property
    def full(self) -> bool:
        return self.truncated is not None

    def add(self, loc: str | None, lastmod: str | None) -> None:
        loc = (loc or "").strip()
        if not loc or len(loc) > MAX_LOC_CHARS or any(ch.isspace() for ch in loc):
            self.skipped += 1
            return
        if len(self.entries) >= self.limits.max_urls:
            self.truncated = f"more than {self.limits.max_urls} entries"
            return
        when = None
        if lastmod is not None and lastmod.strip():
            when = parse_lastmod(lastmod)
            if when is None:
                self.bad_lastmod += 1
        self.entries.append(SitemapEntry(loc, when))

    def result(self, truncated: str | None) -> Sitemap:
        return Sitemap(self.kind, tuple(self.entries), truncated, self.skipped, self.bad_lastmod)


_ROOTS: Final = {"urlset": SitemapKind.URLSET, "sitemapindex": SitemapKind.INDEX}
_ENTRIES: Final = {SitemapKind.URLSET: "url", SitemapKind.INDEX: "sitemap"}
_DOCTYPE: Final = re.compile(rb"<!DOCTYPE|<!ENTITY", re.IGNORECASE)


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _parse_xml(data: bytes, builder: _Builder, *, complete: bool) -> None:
    if _DOCTYPE.search(_prolog(data)):
        raise SitemapError(
            "sitemap XML has a DOCTYPE (refused; an HTML page?)", builder.result(None)
        )
    parser: XMLPullParser[Element] = XMLPullParser(events=("start", "end"))
    depth = 0
    root: Element | None = None
    entry_tag = ""
    try:
        for chunk in _chunks(data):
            parser.feed(chunk)
            for item in parser.read_events():
                event, element = item[0], item[-1]
                if not isinstance(element, Element):
                    continue  # namespace events carry no element; not requested anyway
                if event == "start":
                    depth += 1
                    if depth == 1:
                        root, entry_tag = element, _root_entry_tag(element, builder)
                    continue
                depth -= 1
                if depth == 1 and _local(element.tag) == entry_tag:
                    builder.add(*_loc_and_lastmod(element))
                    if root is not None:
                        root.clear()  # processed entries are dropped: memory stays flat
                    if builder.full:
                        return
        if complete:
            parser.close()
    except ParseError as exc:
        line, column = exc.position
        raise SitemapError(
            f"malformed sitemap XML at line {line}, column {column}: {exc}", builder.result(None)
        ) from exc
    if builder.kind is None and complete:
        raise SitemapError("sitemap XML has no root element", builder.result(None))


def _prolog(data: bytes) -> bytes:
    """Everything before the root element's start tag (where a DOCTYPE would be)."""
    for match in re.finditer(rb"<(?![?!])", data):
        return data[: match.start()]
    return data


def _root_entry_tag(root: Element, builder: _Builder) -> str:
    name = _local(root.tag)
    kind = _ROOTS.get(name)
    if kind is None:
        raise SitemapError(
            f"root element <{name}> is neither <urlset> nor <sitemapindex>", builder.result(None)
        )
    builder.kind = kind
    return _ENTRIES[kind]


def _loc_and_lastmod(entry: Element) -> tuple[str | None, str | None]:
    loc = lastmod = None
    for child in entry:
        name = _local(child.tag)
        if name == "loc" and loc is None:
            loc = child.text or ""
        elif name == "lastmod" and lastmod is None:
            lastmod = child.text or ""
    return loc, lastmod


def _chunks(data: bytes) -> Iterator[bytes]:
    for start in range(0, len(data), _CHUNK):
        yield data[start : start + _CHUNK]


def _parse_text(data: bytes, builder: _Builder, *, complete: bool) -> None:
    builder.kind = SitemapKind.TEXT
    lines = data.removeprefix(_BOM).decode("utf-8", errors="replace").splitlines()
    if not complete and lines:
        lines.pop()  # cut at a limit: the last line may be half a URL
    for line in lines:
        text = line.strip()
        if not text:
            continue
        if not text.lower().startswith(("http://", "https://")):
            builder.skipped += 1
            continue
        builder.add(text, None)
        if builder.full:
            return


_W3C_DATETIME: Final = re.compile(
    r"(?P<year>\d{4})(?:-(?P<month>\d{2})(?:-(?P<day>\d{2})"
    r"(?:[Tt ](?P<hour>\d{2}):(?P<minute>\d{2})(?::(?P<second>\d{2})(?:[.,](?P<fraction>\d+))?)?"
    r"(?P<zone>[Zz]|[+-]\d{2}(?::?\d{2})?)?)?)?)?"
)


def parse_lastmod(text: str) -> float | None:
    """A W3C datetime (``2026``, ``2026-11``, ``2026-11-30``, ``2026-11-30T06:08:25+01:00``, with
    optional fractions) as seconds since the epoch; a value without a zone is taken as UTC.
    None when it does not parse or names an impossible date."""
    match = _W3C_DATETIME.fullmatch(text.strip())
    if match is None:
        return None
    parts = match.groupdict()
    try:
        moment = datetime(
            int(parts["year"]),
            int(parts["month"] or 1),
            int(parts["day"] or 1),
            int(parts["hour"] or 0),
            int(parts["minute"] or 0),
            int(parts["second"] or 0),
            int((parts["fraction"] or "0")[:6].ljust(6, "0")),
            tzinfo=_zone(parts["zone"]),
        )
    except ValueError:
        return None
    return moment.timestamp()


def _zone(text: str | None) -> timezone:
    if text is None or text in "Zz":
        return UTC
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:4] or 0)
    if hours > 23 or minutes > 59:
        raise ValueError(f"bad zone offset {text}")
    return timezone(sign * timedelta(hours=hours, minutes=minutes))


__all__ = [
    "MAX_BYTES",
    "MAX_URLS",
    "Sitemap",
    "SitemapEntry",
    "SitemapError",
    "SitemapKind",
    "SitemapLimits",
    "is_gzip",
    "parse_lastmod",
    "parse_sitemap",
]
