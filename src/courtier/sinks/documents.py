"""Documents: one JSON object per fetched URL, in gzip-compressed JSON Lines segments.

Rules:
- **Segments.** ``OUT/documents/documents-TIMESTAMP-SERIAL-HOST-PID.jsonl.gz``, named like
  the WARC files (``courtier.sinks.warc``: workers sharing one output directory never take
  each other's names), written as ``....jsonl.gz.open`` and renamed when finished: once it
  holds ``segment_bytes`` (compressed), once it has been open ``segment_seconds`` (checked
  at each flush, so an idle segment is finished too), or at a clean stop. A segment is
  opened at its first document (a run that keeps nothing leaves none), and every writer
  (a resumed crawl too) starts a segment of its own.
- **A gzip member per flush.** Documents are gathered and each ``flush`` (the crawl's every
  ``crawl.flush_interval``) or ``MEMBER_BYTES`` of them compresses what was gathered into
  one gzip member, written in one ``write()``. A file of members is one gzip stream to
  every reader (gzip, zcat, DuckDB, pandas, Spark); a segment cut by a kill -9 is readable
  up to its last whole member.
- **A crash.** The ``.open`` segment of a writer that is gone is cut after its last whole
  member and renamed by the next writer in the same directory (``warc_orphans``, the rules
  of WARC files). A write that fails (a full disk) cuts the file back to its last whole
  member, finishes it and raises; the next document opens a new segment.
- **Records as given**, compact JSON in UTF-8; bytes that were no UTF-8 (lone surrogates in
  a header) are written as backslash escapes, never raised on. ``fetched_at`` is an RFC 3339
  UTC time with milliseconds (``rfc3339``; records before segments held epoch seconds).
- **Reading** (``read_documents``, ``document_files``): the ``documents.jsonl`` of an older
  version first (never rotated, never written again), then every segment in name order,
  finished and open alike; the lines of whole members only. An older record's
  ``fetched_at`` in epoch seconds is given as RFC 3339, like a new one's.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import time
import zlib
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Protocol

from courtier.runtime.processes import process_tag
from courtier.sinks.warc import compress_member
from courtier.sinks.warc_orphans import finish_orphans

DOCUMENTS_DIR: Final = "documents"
"""``OUT/documents/``: the segments."""
LEGACY_FILE: Final = "documents.jsonl"
"""One uncompressed file, before segments: still read, never written."""
SEGMENT_SUFFIX: Final = ".jsonl.gz"
OPEN_SUFFIX: Final = ".open"
PREFIX: Final = "documents"
MEMBER_BYTES: Final = 1 << 20
"""Gathered (uncompressed) bytes that make a member at once, flush or not."""
LEVEL: Final = 2
"""gzip level of each member: ISA-L's igzip level 2, as the WARC records
(docs/archive.md: zlib's level-3 ratio for a quarter of the CPU)."""
_CHUNK: Final = 1 << 20
_GZIP_WBITS: Final = zlib.MAX_WBITS | 16


class Sink(Protocol):
    """Where a crawl's document records go (one writer: the engine, on its event loop)."""

    def write(self, record: dict[str, Any]) -> None: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


def rfc3339(seconds: float) -> str:
    """Epoch ``seconds`` as RFC 3339 UTC, to the millisecond: ``2026-12-07T20:41:00.563Z``."""
    millis = round(seconds * 1000)
    whole, part = divmod(millis, 1000)
    return datetime.fromtimestamp(whole, UTC).strftime("%Y-%m-%dT%H:%M:%S") + f".{part:03d}Z"


class DocumentSink:
    """Writes documents to segments in ``OUT/documents/`` (see the module rules)."""

    def __init__(
        self,
        out_dir: Path,
        *,
        segment_bytes: int = 1 << 27,
        segment_seconds: float = 3600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.directory = out_dir / DOCUMENTS_DIR
        self.directory.mkdir(parents=True, exist_ok=True)
        # A crash left a segment open: finish it first (never one of this process's).
        finish_orphans(self.directory, writing=True, suffix=SEGMENT_SUFFIX)
        self.segment_bytes = segment_bytes
        self.segment_seconds = segment_seconds
        self._clock = clock
        self.finished: list[Path] = []
        """Segments this sink finished, in order."""
        self.written = 0
        """Documents written (gathered ones included)."""
        self.lost = 0
        """Documents whose write failed."""
        self._serial = 0
        self._file: io.FileIO | None = None
        self._path: Path | None = None
        self._opened = 0.0
        self._size = 0
        """Bytes of whole members in the current segment."""
        self._pending: list[bytes] = []
        self._pending_bytes = 0

    @property
    def path(self) -> Path | None:
        """The current segment's finished name (None: no segment open)."""
        return self._path

    def write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
        data = line.encode("utf-8", "backslashreplace")
        self._pending.append(data)
        self._pending_bytes += len(data)
        self.written += 1
        if self._pending_bytes >= MEMBER_BYTES:
            self.flush()

    def flush(self) -> None:
        """Write what was gathered as one member; finish the segment when it is full or old."""
        if self._pending:
            self._write_member()
        if self._file is not None and (
            self._size >= self.segment_bytes or self._clock() - self._opened >= self.segment_seconds
        ):
            self._close_file()

    def close(self) -> None:
        """Write what was gathered and finish the segment: a clean stop."""
        try:
            if self._pending:
                self._write_member()
        finally:
            self._close_file()

    def _open(self) -> io.FileIO:
        while True:
            stamp = datetime.now(UTC).strftime("%Y%m%d%H%M%S%f")[:17]
            name = f"{PREFIX}-{stamp}-{self._serial:05d}-{process_tag()}{SEGMENT_SUFFIX}"
            self._serial += 1
            try:
                # Unbuffered: a member is one write() straight to the kernel.
                file = io.FileIO(self.directory / f"{name}{OPEN_SUFFIX}", "xb")
            except FileExistsError:  # another sink of this process, in the same millisecond
                continue
            self._file, self._path = file, self.directory / name
            self._opened, self._size = self._clock(), 0
            return file

    def _write_member(self) -> None:
        data = b"".join(self._pending)
        records = len(self._pending)
        self._pending.clear()
        self._pending_bytes = 0
        member = compress_member(data, LEVEL)
        file = self._file if self._file is not None else self._open()
        view = memoryview(member)
        try:
            while view:
                written = file.write(view)
                if written is None:  # a regular file never says "would block"
                    raise OSError(f"document write to {self._path} would block")
                view = view[written:]
        except OSError:
            self.lost += records
            # Back to its last whole member (if that fails too, readers stop at the cut one).
            with contextlib.suppress(OSError):
                os.ftruncate(file.fileno(), self._size)
            self._close_file()
            raise
        self._size += len(member)

    def _close_file(self) -> None:
        file, path = self._file, self._path
        if file is None or path is None:
            return
        self._file = self._path = None
        file.close()
        (self.directory / f"{path.name}{OPEN_SUFFIX}").rename(path)
        self.finished.append(path)


# -- reading ------------------------------------------------------------------------------------


def segment_files(out_dir: Path) -> list[Path]:
    """The segments of ``out_dir``, finished and open, in name order (time, then serial)."""
    directory = out_dir / DOCUMENTS_DIR
    if not directory.is_dir():
        return []
    found = [
        path
        for path in directory.iterdir()
        if path.name.endswith((SEGMENT_SUFFIX, SEGMENT_SUFFIX + OPEN_SUFFIX)) and path.is_file()
    ]
    return sorted(found, key=lambda path: path.name.removesuffix(OPEN_SUFFIX))


def document_files(out_dir: Path) -> list[Path]:
    """Every file of ``out_dir``'s documents: an older version's ``documents.jsonl`` (when it
    holds anything) first, then the segments."""
    legacy = out_dir / LEGACY_FILE
    files = [legacy] if legacy.is_file() and legacy.stat().st_size > 0 else []
    return files + segment_files(out_dir)


def is_open(path: Path) -> bool:
    """A segment still written (or left by a writer that is gone): read its whole members."""
    return path.name.endswith(OPEN_SUFFIX)


def whole_members(path: Path) -> Iterator[bytes]:
    """The data of each whole gzip member of ``path``, in order; a member cut short (a writer
    killed, or still writing it) and what follows it are left out. A segment renamed while
    it is read (finished by its writer) is read on under its finished name."""
    try:
        stream = path.open("rb")
    except FileNotFoundError:
        if not is_open(path):
            return
        try:
            stream = path.with_name(path.name.removesuffix(OPEN_SUFFIX)).open("rb")
        except FileNotFoundError:
            return
    with stream:
        inflater = zlib.decompressobj(_GZIP_WBITS)
        parts: list[bytes] = []
        while chunk := stream.read(_CHUNK):
            while chunk:
                try:
                    parts.append(inflater.decompress(chunk))
                except zlib.error:
                    return
                if not inflater.eof:
                    break
                yield b"".join(parts)
                parts = []
                chunk = inflater.unused_data
                inflater = zlib.decompressobj(_GZIP_WBITS)


def _lines(path: Path) -> Iterator[bytes]:
    if path.name.endswith(".jsonl"):
        with path.open("rb") as stream:
            yield from stream
        return
    for data in whole_members(path):
        yield from data.split(b"\n")


def read_documents(out_dir: Path) -> Iterator[dict[str, Any]]:
    """Every document of ``out_dir``, as written (see the module rules on reading): lines
    that are no JSON object (a legacy file's last line cut by a crash) are skipped."""
    for path in document_files(out_dir):
        for line in _lines(path):
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if not isinstance(record, dict):
                continue
            stamp = record.get("fetched_at")
            if isinstance(stamp, int | float) and not isinstance(stamp, bool):
                record["fetched_at"] = rfc3339(stamp)
            yield record
