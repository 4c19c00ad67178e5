"""WARC 1.1 files of what the crawl fetched: warcinfo, request, response and revisit records.

Rules:
- **Files.** ``DIR/PREFIX-TIMESTAMP-SERIAL-HOST-PID.warc.gz``, written as ``....warc.gz.open`` and
  renamed when finished: when it passed ``max_bytes`` (checked between captures, so a
  request and its response stay together) or when the crawl stops cleanly. A crash leaves
  the ``.open`` file, readable up to its last whole record (the next crawl finishes it:
  ``courtier.sinks.warc_orphans``). Each file starts with a
  ``warcinfo`` record, which every other record of the file names (``WARC-Warcinfo-ID``).
  Every record is its own gzip member (a reader seeks to any offset).
- **Records of one fetch.** ``response`` (status line, headers, payload), then ``request``
  (``WARC-Concurrent-To`` the response). A 304 to a conditional request is a ``revisit``
  (profile *server-not-modified*); a 2xx whose payload digest equals the one kept last time
  is a ``revisit`` (profile *identical-payload-digest*, headers only). Both refer to the
  URL's earlier capture (``WARC-Refers-To-Target-URI``, ``-Date``). The response and the
  request carry ``WARC-IP-Address``, the pinned address the request went to.
- **The warcinfo a record names.** A capture is encoded (in a worker) with the warcinfo id
  of the file open when it was sent (``WarcFiles.info_id``, chosen before that file is
  opened); if that file was finished before the capture is appended, ``rebind`` rewrites
  the one header field on append (the captures in flight at a rotation, no more).
- **Payload as kept.** The fetcher decodes ``Content-Encoding`` and the crawl redacts secrets
  and personal data, so the payload is what we kept, not the bytes on the wire: the headers
  say so (``Content-Encoding``, ``Transfer-Encoding`` and ``Content-Length`` are replaced by
  the payload's own length, the originals kept as ``X-Courtier-Original-*``), digests are of
  the stored payload, a redacted record carries ``WARC-Courtier-Redactions`` (kind:count),
  and a body cut at the size limit carries ``WARC-Truncated: length``. The request record is
  the request as the fetcher sends it (its fixed headers plus the conditional ones). A
  ``raw`` capture (``[warc] payload = "raw"``) holds the body as received and its headers
  unredacted; only the content coding is still gone (the fetcher decoded it).
- **Encoding apart from writing.** ``encode_capture`` builds and compresses a capture's
  records (a pure function of the capture: a parse worker runs it, off the crawl's
  process); ``WarcFiles.append`` only writes the members and learns their offset. ``write``
  does both. ``WarcFiles`` is not thread safe: one owner appends
  (``courtier.pipeline.keeping.archive``: the event loop).
- **Appends are gathered, written in one go.** ``append`` hands out the record's offset at
  once and keeps its bytes until ``flush`` (the crawl calls it before it flushes the
  documents that name those offsets, every ``crawl.flush_interval``), until ``FLUSH_BYTES``
  wait, or until the file is finished. One write() per flush instead of one per capture:
  each syscall on the event loop's thread lets go of the GIL and waits ~90 us on average to
  get it back from the crawl's other threads (measured at 2,000 sites: py-spy over python
  bench/bench_rebook.py --sites 2000 --page-bytes 6000 --duration 40).
- **A failed write loses what it held, never misplaces a record.** The file is finished as
  it is (its tail records absent: their offsets lie past its end) and the next append opens
  a new file, so no later record lands at an offset handed out for a lost one.
  ``lost_records`` counts them; the write's ``OSError`` is raised to the caller of
  ``flush``.
"""

from __future__ import annotations

import hashlib
import io
import os
import socket
import time
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from http import HTTPStatus
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote

from isal import isal_zlib
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from courtier import __version__
from courtier.net.spool import Body, body_bytes, body_size
from courtier.runtime.processes import process_tag
from courtier.sinks.redact import DEFAULT_POLICY, RedactionPolicy, redact_url

SERVER_NOT_MODIFIED: Final = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
IDENTICAL_PAYLOAD: Final = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
_REPLACED: Final = frozenset({"content-encoding", "transfer-encoding", "content-length"})
_CONTENT_TYPES: Final = {
    "response": "application/http; msgtype=response",
    "revisit": "application/http; msgtype=response",
    "request": "application/http; msgtype=request",
    "conversion": "text/html; charset=utf-8",
}
_PRINTABLE: Final = "".join(chr(c) for c in range(0x20, 0x7F) if chr(c) != "%")
_LOOKAHEAD: Final = 262
"""zlib's MIN_LOOKAHEAD: a window of 2**bits reaches back 2**bits - 262 bytes."""


@dataclass(frozen=True, slots=True)
class Capture:
    """One fetch as it is archived."""

    url: str
    fetched_at: float
    """Wall-clock time the request started."""
    status: int
    response_headers: tuple[tuple[str, str], ...]
    payload: Body
    """The body as kept: decoded and redacted (or its spool file, read where it is encoded)."""
    request_headers: tuple[tuple[str, str], ...] = ()
    truncated: bool = False
    redactions: Mapping[str, int] = field(default_factory=dict)
    not_modified: bool = False
    """A 304 answering a conditional request."""
    previous_digest: str | None = None
    """The payload digest kept for the URL last time (an identical one is a revisit)."""
    previous_date: float | None = None
    rendered: bool = False
    """The payload is the page's DOM as a browser rendered it: one ``conversion`` record
    (UTF-8 HTML, no HTTP block, no request record)."""
    ip_address: str | None = None
    """The address the request was sent to (the guard's pinned one): ``WARC-IP-Address``."""
    warcinfo_id: str | None = None
    """The ``WARC-Record-ID`` of the warcinfo record of the file the capture is meant for
    (``WarcFiles.info_id``): ``WARC-Warcinfo-ID`` on each record."""
    raw: bool = False
    """``[warc] payload = "raw"``: the payload is the body as received and the headers are
    kept as they came (not redacted)."""


@dataclass(frozen=True, slots=True)
class WarcRef:
    """Where a capture's response (or revisit) record is: enough for a CDX line."""

    file: str
    """The file's finished name (without ``.open``)."""
    offset: int
    length: int
    """Compressed bytes of the record."""
    digest: str | None
    """The payload digest (``sha1:BASE32``) of a response, or of an identical revisit."""
    record: str
    """``response``, ``revisit`` or ``conversion`` (a rendered DOM)."""
    seconds: float = 0.0
    """Time spent writing the capture (both records)."""


def payload_digest(payload: bytes) -> str:
    return sha1_label(hashlib.sha1(payload, usedforsecurity=False).digest())


_BASE32: Final = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"  # RFC 4648's alphabet
_BASE32_PAIRS: Final = tuple(a + b for a in _BASE32 for b in _BASE32)
"""Every 10-bit group's two base32 characters."""
_SHA1_SHIFTS: Final = tuple(range(150, -1, -10))


def sha1_label(digest: bytes) -> str:
    """``sha1:`` and the base32 of a 20-byte SHA-1 digest, as WARC digests are written: what
    ``base64.b32encode`` gives (160 bits need no padding), in 3.5 us instead of 5.6 (its
    encoder is Python in 3.11; three a capture)."""
    bits = int.from_bytes(digest, "big")
    return "sha1:" + "".join([_BASE32_PAIRS[(bits >> shift) & 1023] for shift in _SHA1_SHIFTS])


_EMPTY_DIGEST: Final = payload_digest(b"")


def window_bits(size: int) -> int:
    """The smallest deflate window that holds ``size`` bytes (zlib's 9 to 15): a record that
    fits compresses to the very same bytes, and zlib sets up a 32 KB window's state at a cost
    of up to 100 us per record, more than compressing a 6 KB page at level 1 (measured)."""
    return min(zlib.MAX_WBITS, max(9, (size + _LOOKAHEAD - 1).bit_length()))


@dataclass(frozen=True, slots=True)
class EncodedCapture:
    """A capture's records, compressed, ready to append: the response (or revisit) member
    first, then the request member."""

    members: tuple[bytes, ...]
    digest: str | None
    record: str
    seconds: float
    """Time spent encoding."""
    warcinfo_id: str | None = None
    """The ``WARC-Warcinfo-ID`` the records carry (None: none)."""


FLUSH_BYTES: Final = 1 << 20
"""Pending bytes that make an append write them at once (bounds the memory they hold)."""

_builders: dict[int, WARCWriter] = {}


def _builder() -> WARCWriter:
    """This process's record builder (record ids and dates only; it writes nowhere)."""
    builder = _builders.get(os.getpid())
    if builder is None:
        builder = _builders[os.getpid()] = WARCWriter(io.BytesIO(), gzip=False, warc_version="1.1")
    return builder


def gzip_member(record: Any, level: int) -> bytes:
    """One warcio record as its own gzip member (the warcinfo record, once per file)."""
    builder = _builder()
    raw = io.BytesIO()
    builder.out = raw
    builder.write_record(record)
    return compress_member(raw.getvalue(), level)


FAST_LEVELS: Final = range(1, 4)
"""Levels compressed by ISA-L's igzip (``isal``), at its own levels 1-3; 4-9 are zlib's.
igzip's level 2 gives zlib's level-3 ratio on small pages (1-6 % less on 100 KB ones) for a
quarter to a sixth of the CPU (docs/archive.md)."""
_GZIP_WBITS: Final = zlib.MAX_WBITS | 16


def compress_member(data: bytes, level: int) -> bytes:
    """One record's bytes as their own gzip member."""
    if level in FAST_LEVELS:
        return isal_zlib.compress(data, level, _GZIP_WBITS)
    packer = zlib.compressobj(level, zlib.DEFLATED, window_bits(len(data)) | 16)
    return packer.compress(data) + packer.flush()


def encode_capture(
    capture: Capture, policy: RedactionPolicy = DEFAULT_POLICY, level: int = 2
) -> EncodedCapture:
    """The records of ``capture`` (see the module rules), compressed."""
    started = time.perf_counter()
    payload = body_bytes(capture.payload)  # a spooled body is read here, in the worker
    headers, redactions = _response_headers(capture, policy)
    date = warc_date(capture.fetched_at)
    common = [("WARC-Date", date)]
    if capture.warcinfo_id is not None:
        common.append(("WARC-Warcinfo-ID", capture.warcinfo_id))
    warc = list(common)
    if capture.ip_address is not None and not capture.rendered:
        warc.append(("WARC-IP-Address", capture.ip_address))
    counts = dict(capture.redactions)
    for kind, n in redactions.items():
        counts[kind] = counts.get(kind, 0) + n
    if counts:
        warc.append(
            ("WARC-Courtier-Redactions", "; ".join(f"{k}:{n}" for k, n in sorted(counts.items())))
        )
    if capture.truncated:
        warc.append(("WARC-Truncated", "length"))
    digest: str | None = payload_digest(payload)
    if capture.rendered:
        warc.append(("WARC-Payload-Digest", digest or ""))
        record = _record(warc, "conversion", _record_id(), capture.url, b"", payload)
        converted = (compress_member(record, level),)
        took = time.perf_counter() - started
        return EncodedCapture(converted, digest, "conversion", took, capture.warcinfo_id)
    status_line = f"{capture.status} {_reason(capture.status)}"
    http = _http_block(f"HTTP/1.1 {status_line}", headers)
    record_id = _record_id()
    if capture.not_modified or (
        capture.previous_digest is not None and capture.previous_digest == digest
    ):
        record = _revisit(capture, record_id, http, warc, digest)
        kind = "revisit"
        digest = None if capture.not_modified else digest
    else:
        warc.append(("WARC-Payload-Digest", digest or ""))
        record = _record(warc, "response", record_id, capture.url, http, payload)
        kind = "response"
    request = _request(capture, record_id, common)
    members = (compress_member(record, level), compress_member(request, level))
    took = time.perf_counter() - started
    return EncodedCapture(members, digest, kind, took, capture.warcinfo_id)


def warc_date(when: float) -> str:
    """``when`` as WARC 1.1 writes it (UTC, microseconds); ``isoformat``, as it takes half
    the time of ``strftime("%Y-%m-%dT%H:%M:%S.%fZ")``."""
    return datetime.fromtimestamp(when, UTC).isoformat(timespec="microseconds")[:-6] + "Z"


class WarcFiles:
    """The WARC files of one writer: the current one, rotated by size, finished on close."""

    def __init__(
        self,
        directory: Path,
        *,
        prefix: str = "courtier",
        max_bytes: int = 1 << 30,
        level: int = 2,
        info: Mapping[str, str] | None = None,
        policy: RedactionPolicy = DEFAULT_POLICY,
    ) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.prefix = prefix
        self.max_bytes = max_bytes
        # Level 3, not zlib's 6: measured on 100 KB HTML pages it compresses 2.4-3.5x faster
        # (470 vs 1140 us on a real page) for files 6-14 % larger; on a 6 KB page 1.3-1.9x.
        # The writer's CPU is the crawl's CPU, and disk is cheaper (docs/archive.md).
        self.level = level
        self.info = dict(info or {})
        self.policy = policy
        self.finished: list[Path] = []
        self._serial = 0
        self._file: io.FileIO | None = None
        self._path: Path | None = None
        self._size = 0
        """Bytes in the current file, written or pending: the next record's offset."""
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self._pending_records = 0
        self.lost_records = 0
        """Captures whose write failed (see the module rules)."""
        self.info_id = _record_id()
        """The warcinfo record id of the current file, or of the next one when none is open:
        captures are encoded with it (``Capture.warcinfo_id``) before they are appended."""
        self.rebound = 0
        """Captures encoded for a file that was finished before they were appended, given
        the current file's warcinfo id on append (see ``rebind``)."""

    # -- files ----------------------------------------------------------------------------

    def _open(self) -> io.FileIO:
        stamp = datetime.now(UTC).strftime("%Y%m%d%H%M%S%f")[:17]
        name = f"{self.prefix}-{stamp}-{self._serial:05d}-{process_tag()}.warc.gz"
        self._serial += 1
        self._path = self.directory / name
        # Unbuffered: ``flush`` is one write() straight to the kernel (the page cache survives
        # a kill -9), with no buffer of Python's in between to flush or to ask for positions.
        self._file = io.FileIO(self.directory / f"{name}.open", "xb")
        self._size = 0
        info = {
            "software": f"courtier/{__version__}",
            "format": "WARC File Format 1.1",
            "conformsTo": "https://iipc.github.io/warc-specifications/specifications/"
            "warc-format/warc-1.1/",
            "hostname": socket.gethostname(),
            **self.info,
        }
        assert self._file is not None
        record = _builder().create_warcinfo_record(name, info)
        record.rec_headers.replace_header("WARC-Record-ID", self.info_id)
        self._keep(gzip_member(record, self.level), 0)
        return self._file

    def _keep(self, data: bytes, records: int) -> None:
        self._pending.append(data)
        self._pending_bytes += len(data)
        self._pending_records += records
        self._size += len(data)

    def flush(self) -> None:
        """Write what the appends gathered (see the module rules on failure)."""
        if not self._pending or self._file is None:
            return
        data = b"".join(self._pending)
        records = self._pending_records
        self._pending.clear()
        self._pending_bytes = self._pending_records = 0
        view = memoryview(data)
        try:
            while view:
                written = self._file.write(view)
                if written is None:  # a regular file never says "would block"
                    raise OSError(f"WARC write to {self._path} would block")
                view = view[written:]
        except OSError:
            self.lost_records += records
            self._close_file()
            raise

    def _finish(self) -> None:
        if self._file is None or self._path is None:
            return
        try:
            self.flush()
        finally:
            self._close_file()

    def _close_file(self) -> None:
        if self._file is None or self._path is None:
            return
        self._file.close()
        (self.directory / f"{self._path.name}.open").rename(self._path)
        self.finished.append(self._path)
        self._file = self._path = None
        self.info_id = _record_id()  # the next file's

    def close(self) -> None:
        """Finish the current file (rename it): a clean stop."""
        self._finish()

    # -- records --------------------------------------------------------------------------

    def write(self, capture: Capture) -> WarcRef:
        """Encode and append ``capture`` (both here)."""
        if capture.warcinfo_id is None:
            capture = replace(capture, warcinfo_id=self.info_id)
        return self.append(encode_capture(capture, self.policy, self.level))

    def append(self, encoded: EncodedCapture) -> WarcRef:
        """Append an encoded capture; where its first record is."""
        started = time.perf_counter()
        if self._file is None:
            self._open()
        members = encoded.members
        if encoded.warcinfo_id != self.info_id:
            members = tuple(
                rebind(m, encoded.warcinfo_id, self.info_id, self.level) for m in members
            )
            self.rebound += 1
        offset = self._size
        self._keep(b"".join(members), 1)
        length = len(members[0])
        name = self._path.name if self._path is not None else ""
        if self._size >= self.max_bytes:
            self._finish()
        elif self._pending_bytes >= FLUSH_BYTES:
            self.flush()
        took = encoded.seconds + time.perf_counter() - started
        return WarcRef(name, offset, length, encoded.digest, encoded.record, took)


def rebind(member: bytes, old: str | None, new: str, level: int) -> bytes:
    """A record's gzip member with its ``WARC-Warcinfo-ID`` made ``new`` (added when it had
    none). For a capture encoded in a worker while the file it was meant for was finished
    (past ``max_bytes``) before it was appended: no more than the captures in flight at a
    rotation, once a file. The block and its digests are untouched."""
    data = zlib.decompress(member, _GZIP_WBITS)
    end = data.index(b"\r\n\r\n")
    head, rest = data[:end], data[end:]
    line = f"WARC-Warcinfo-ID: {new}".encode()
    if old is not None and f"WARC-Warcinfo-ID: {old}".encode() in head:
        head = head.replace(f"WARC-Warcinfo-ID: {old}".encode(), line, 1)
    else:
        first, _, fields = head.partition(b"\r\n")
        head = first + b"\r\n" + line + (b"\r\n" + fields if fields else b"")
    return compress_member(head + rest, level)


def _revisit(
    capture: Capture, record_id: str, http: bytes, warc: list[tuple[str, str]], digest: str | None
) -> bytes:
    warc.append(
        ("WARC-Profile", SERVER_NOT_MODIFIED if capture.not_modified else IDENTICAL_PAYLOAD)
    )
    warc.append(("WARC-Refers-To-Target-URI", capture.url))
    if capture.previous_date is not None:
        warc.append(("WARC-Refers-To-Date", warc_date(capture.previous_date)))
    if not capture.not_modified and digest is not None:
        warc.append(("WARC-Payload-Digest", digest))
    return _record(warc, "revisit", record_id, capture.url, http, b"")


def _request(capture: Capture, concurrent_to: str, common: list[tuple[str, str]]) -> bytes:
    target = _target(capture.url)
    host = capture.url.split("/", 3)[2]
    lines = [("Host", host), *capture.request_headers]
    http = _http_block(f"GET {target} HTTP/1.1", lines)
    warc = [*common]
    if capture.ip_address is not None:
        warc.append(("WARC-IP-Address", capture.ip_address))
    warc.append(("WARC-Concurrent-To", concurrent_to))
    return _record(warc, "request", _record_id(), capture.url, http, b"")


def _record(
    fields: list[tuple[str, str]],
    kind: str,
    record_id: str,
    uri: str,
    http: bytes,
    payload: bytes,
) -> bytes:
    """One WARC record's bytes: the ``fields`` given, then the ones every record has, in
    the order (and with the digests) warcio's ``create_warc_record`` and ``write_record``
    give them (a test holds them to warcio's, byte for byte). Built here, not by warcio:
    its record objects cost a fifth of a capture's encoding in the parse workers, 169-231 us
    against 134-155 us for a 6 KB page (`python bench/bench_parse.py --stages`). warcio still
    encodes the HTTP header blocks (``http``), the warcinfo records, and reads the files."""
    block = hashlib.sha1(http, usedforsecurity=False)
    block.update(payload)
    head = [
        *fields,
        ("WARC-Type", kind),
        ("WARC-Record-ID", record_id),
        ("WARC-Target-URI", uri),
    ]
    if kind == "request":  # as warcio: the digest of its (empty) payload
        head.append(("WARC-Payload-Digest", _EMPTY_DIGEST))
    head += (
        ("WARC-Block-Digest", sha1_label(block.digest())),
        ("Content-Type", _CONTENT_TYPES[kind]),
        ("Content-Length", str(len(http) + len(payload))),
    )
    text = "WARC/1.1\r\n" + "".join(f"{name}: {value}\r\n" for name, value in head) + "\r\n"
    return b"".join((text.encode("utf-8"), http, payload, b"\r\n\r\n"))


def _http_block(first_line: str, headers: list[tuple[str, str]]) -> bytes:
    """The HTTP header block (a status or request line, then ``headers``) as warcio's
    ``StatusAndHeaders.to_ascii_bytes`` encodes it: ASCII, a value that is not percent-encoded
    (RFC 8187 for its ``name=value`` parameters). warcio leaves what is outside a parameter
    as it was (``X: café; a=b``) and then fails: that is percent-encoded whole here. An
    ASCII block (nearly all) is joined here, in 1.5 us against warcio's 4.2 for a response's
    block (two blocks a capture; a test holds the bytes to warcio's)."""
    text = first_line + "\r\n" + "".join([f"{n}: {v}\r\n" for n, v in headers]) + "\r\n"
    if text.isascii():
        return text.encode("ascii")
    protocol, _, rest = first_line.partition(" ")
    http = StatusAndHeaders(rest, headers, protocol=protocol)
    try:
        block: bytes = http.to_ascii_bytes()
    except UnicodeEncodeError:
        http.headers = [(_ascii(name), _ascii(value)) for name, value in http.headers]
        http.statusline = _ascii(http.statusline)
        block = http.to_ascii_bytes()
    return block


def _ascii(text: str) -> str:
    return text if text.isascii() else quote(text, safe=_PRINTABLE)


def _record_id() -> str:
    """A random (version 4) UUID's URN, as ``uuid.uuid4()`` makes it (16 bytes of
    ``os.urandom``, the version and variant bits set), in 1.3-1.8 us against its 3.6-4.4
    (two a capture)."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40
    raw[8] = (raw[8] & 0x3F) | 0x80
    h = raw.hex()
    return f"<urn:uuid:{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}>"


def _response_headers(
    capture: Capture, policy: RedactionPolicy
) -> tuple[list[tuple[str, str]], dict[str, int]]:
    """The response's headers as they fit the kept payload, values redacted (unless the
    capture is ``raw``)."""
    headers: list[tuple[str, str]] = []
    counts: dict[str, int] = {}
    for raw_name, raw_value in capture.response_headers:
        name, value = _text(raw_name), _text(raw_value)
        if not capture.raw:
            redacted = redact_url(value, policy)
            for kind, n in redacted.counts.items():
                counts[kind] = counts.get(kind, 0) + n
            value = redacted.text
        lower = name.lower()
        if lower in _REPLACED:
            headers.append((f"X-Courtier-Original-{name}", value))
        else:
            headers.append((name, value))
    if not capture.not_modified:
        headers.append(("Content-Length", str(body_size(capture.payload))))
    return headers, counts


def _text(value: str) -> str:
    """A header as received may hold bytes that are no UTF-8 (aiohttp keeps them as lone
    surrogates): they become U+FFFD, and warcio percent-encodes what is not ASCII."""
    if value.isascii():
        return value
    return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _target(url: str) -> str:
    rest = url.split("/", 3)
    target = "/" + rest[3] if len(rest) > 3 else "/"
    return target.split("#", 1)[0]


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"
