"""The crawl's WARC output (``[warc]``): records encoded in a parse worker, appended on the loop.

Rules:
- Every fetched URL that gets a document record (pages, sitemaps, media) gets a
  WARC capture first (``courtier.sinks.warc``): the document then names the file, offset and
  length of its response (or revisit) record, so a CDX index can be built from documents.
- Building and compressing the records (``encode_capture``) runs in the parse pool when the
  lane has one, else on a thread of its own: never on the event loop, and not on a thread
  of the crawl's process either when a pool is there (a writer thread fought the loop for
  the GIL and, at ~500 captures/s, kept each page waiting most of a second). Appending the
  compressed members (a few KB to the page cache) is done on the loop, so one owner writes
  the files. A lane awaits its capture's ``WarcRef``, which also bounds what waits in
  memory by the requests in flight (``crawl.max_in_flight``). A pool that cannot encode a
  capture (over its budget, a lost worker) leaves it to the thread.
- The files gather appends and write them in one go (``WarcFiles.flush``); the documents
  that name them are held too, and a flush writes the records first, then the documents:
  no document ever reaches the disk before the record it names (a kill -9 loses both or
  neither). Every ``crawl.flush_interval``, or at ``HELD_DOCUMENTS``.
- A write that fails (a full disk) is logged, counted (``warc_errors``, one per capture
  lost) and the crawl goes on: a capture whose append failed has no ``warc`` field in its
  document; the captures of a failed flush point past the end of their (finished) file.
- The files are finished (renamed from ``.open``) when the sink is closed at the end of a
  run; ``ArchivingSink`` is the engine's document sink with the archive beside it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from courtier.config import Config
from courtier.frontier.base import LeasedUrl
from courtier.net.decoding import ACCEPT_ENCODING
from courtier.pipeline.stats import CrawlStats
from courtier.pipeline.workers.jobs import ParseTimeout, PoolClosed, WorkerLost
from courtier.sinks.documents import DocumentSink, Sink
from courtier.sinks.redact import RedactionPolicy
from courtier.sinks.warc import Capture, EncodedCapture, WarcFiles, WarcRef, encode_capture
from courtier.sinks.warc_orphans import finish_orphans

log = logging.getLogger(__name__)


def redaction_policy(config: Config) -> RedactionPolicy:
    redact = config.redact
    return RedactionPolicy(
        redact.keys,
        redact.emails,
        redact.phones,
        redact.phone_region.upper(),
        frozenset(redact.skip),
    )


def conditional_headers(item: LeasedUrl) -> dict[str, str]:
    """What a refresh sends back: If-None-Match (ETag), If-Modified-Since (Last-Modified)."""
    headers: dict[str, str] = {}
    if item.etag is not None:
        headers["If-None-Match"] = item.etag
    if item.last_modified is not None:
        headers["If-Modified-Since"] = item.last_modified
    return headers


def sent_headers(config: Config, conditional: dict[str, str] | None) -> tuple[tuple[str, str], ...]:
    """The request's headers as the fetcher sends them (its session's, then a refresh's)."""
    fixed = (
        ("User-Agent", config.fetch.user_agent),
        ("Accept", "*/*"),
        ("Accept-Encoding", ACCEPT_ENCODING),
    )
    return fixed + tuple((conditional or {}).items())


Encode = Callable[..., Awaitable[Any]]
"""``ParsePool.run``: runs ``encode_capture`` in a parse worker."""


class Archive:
    def __init__(self, files: WarcFiles) -> None:
        self.files = files
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="courtier-warc")
        self._failed = False

    async def _encode(self, capture: Capture, encode: Encode | None) -> EncodedCapture:
        files = self.files
        if encode is not None:
            try:
                encoded: EncodedCapture = await encode(
                    encode_capture, capture, files.policy, files.level
                )
                return encoded
            except (ParseTimeout, WorkerLost, PoolClosed, MemoryError):
                pass
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._thread, encode_capture, capture, files.policy, files.level
        )

    async def write(
        self, capture: Capture, stats: CrawlStats, encode: Encode | None = None
    ) -> WarcRef | None:
        """Encode ``capture`` (with ``encode``, else on the writer thread) and append it;
        None when that failed."""
        try:
            encoded = await self._encode(capture, encode)
        except ValueError as exc:  # a record warcio cannot encode
            self._failure(exc, stats)
            return None
        return self.append(encoded, stats)

    def append(self, encoded: EncodedCapture, stats: CrawlStats) -> WarcRef | None:
        """Append an encoded capture; None when that failed."""
        lost = self.files.lost_records
        try:
            ref = self.files.append(encoded)
        except (OSError, ValueError) as exc:  # a full disk
            self._failure(exc, stats, max(1, self.files.lost_records - lost))
            return None
        stats.warc_records[ref.record] += 1
        stats.warc_bytes += ref.length
        stats.warc_seconds += ref.seconds
        return ref

    def flush(self, stats: CrawlStats) -> None:
        """Write the gathered appends."""
        lost = self.files.lost_records
        try:
            self.files.flush()
        except OSError as exc:
            self._failure(exc, stats, self.files.lost_records - lost)

    def _failure(self, exc: Exception, stats: CrawlStats, captures: int = 1) -> None:
        stats.warc_errors += captures
        if not self._failed:
            log.error("WARC write failed (%s): documents go on without WARC records", exc)
        self._failed = True

    def close(self) -> None:
        """Wait for the writes under way and finish the current file."""
        self._thread.shutdown(wait=True)
        try:
            self.files.close()
        except OSError as exc:
            log.error("cannot finish the WARC file: %s", exc)


HELD_DOCUMENTS = 2_000
"""Documents held for the archive's next write before one is forced."""


class ArchivingSink:
    """The document sink, with the archive beside it: closing it finishes both. Documents
    are held until the records they name are written (see the module rules)."""

    def __init__(self, sink: Sink, archive: Archive | None, stats: CrawlStats) -> None:
        self.sink = sink
        self.archive = archive
        self.stats = stats
        self._held: list[dict[str, Any]] = []

    def write(self, record: dict[str, Any]) -> None:
        if self.archive is None:
            self._put(record)
            return
        self._held.append(record)
        if len(self._held) >= HELD_DOCUMENTS:
            self._write_held()

    def _write_held(self) -> None:
        if self.archive is not None:
            self.archive.flush(self.stats)
        held, self._held = self._held, []
        for record in held:
            self._put(record)

    def _put(self, record: dict[str, Any]) -> None:
        self.sink.write(record)
        self.stats.documents[document_kind(record)] += 1

    def flush(self) -> None:
        self._write_held()
        self.sink.flush()

    def close(self) -> None:
        try:
            self._write_held()
        finally:
            try:
                if self.archive is not None:
                    self.archive.close()
            finally:
                self.sink.close()


def document_kind(record: dict[str, Any]) -> str:
    """A document's kind for the counters (``documents``): ``media``, ``pdf``, ``feed`` (read
    by their own readers), or ``page`` (everything else fetched from the frontier)."""
    if record.get("kind") == "media":
        return "media"
    form = record.get("format")
    return form if form in ("pdf", "feed") else "page"


def document_sink(config: Config, out_dir: Path) -> DocumentSink:
    """The crawl's own document sink: segments in ``OUT/documents/`` (``[documents]``)."""
    settings = config.documents
    return DocumentSink(
        out_dir,
        segment_bytes=settings.segment_bytes,
        segment_seconds=settings.segment_seconds,
    )


def archived(config: Config, out_dir: Path, sink: Sink, stats: CrawlStats) -> ArchivingSink:
    """``sink`` with ``OUT/warc/`` beside it when ``[warc] enabled``."""
    settings = config.warc
    if not settings.enabled:
        return ArchivingSink(sink, None, stats)
    # A crash left its files open, named by documents as finished: finish them first.
    finish_orphans(out_dir / "warc")
    files = WarcFiles(
        out_dir / "warc",
        prefix=settings.prefix,
        max_bytes=settings.max_file_bytes,
        level=settings.compression_level,
        info={
            "robots": "obey",
            "http-header-user-agent": config.fetch.user_agent,
            "operator": config.fetch.contact_url,
        },
        policy=redaction_policy(config),
    )
    return ArchivingSink(sink, Archive(files), stats)


def warc_fields(ref: WarcRef | None) -> dict[str, Any]:
    """The document fields naming a capture's record."""
    if ref is None:
        return {}
    fields: dict[str, Any] = {
        "warc": {"file": ref.file, "offset": ref.offset, "length": ref.length, "type": ref.record}
    }
    if ref.digest is not None:
        fields["warc"]["digest"] = ref.digest
    return fields
