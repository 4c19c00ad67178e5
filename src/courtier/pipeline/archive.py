"""The crawl's WARC output (``[warc]``): records encoded in a parse worker, appended on the loop.

Rules:
- Every fetched URL that gets a ``documents.jsonl`` record (pages, sitemaps, media) gets a
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
- A write that fails (a full disk) is logged, counted (``warc_errors``) and the crawl goes
  on: its document has no ``warc`` field.
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
from courtier.pipeline.parse_pool import ParseTimeout, PoolClosed, WorkerLost
from courtier.pipeline.stats import CrawlStats
from courtier.sinks.documents import Sink
from courtier.sinks.redact import RedactionPolicy
from courtier.sinks.warc import Capture, EncodedCapture, WarcFiles, WarcRef, encode_capture

log = logging.getLogger("courtier.pipeline.archive")


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
        ("Accept-Encoding", "gzip, deflate, br"),
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
        try:
            ref = self.files.append(encoded)
        except (OSError, ValueError) as exc:  # a full disk
            self._failure(exc, stats)
            return None
        stats.warc_records[ref.record] += 1
        stats.warc_bytes += ref.length
        stats.warc_seconds += ref.seconds
        return ref

    def _failure(self, exc: Exception, stats: CrawlStats) -> None:
        stats.warc_errors += 1
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


class ArchivingSink:
    """The document sink, with the archive beside it: closing it finishes both."""

    def __init__(self, sink: Sink, archive: Archive | None) -> None:
        self.sink = sink
        self.archive = archive

    def write(self, record: dict[str, Any]) -> None:
        self.sink.write(record)

    def flush(self) -> None:
        self.sink.flush()

    def close(self) -> None:
        try:
            if self.archive is not None:
                self.archive.close()
        finally:
            self.sink.close()


def archived(config: Config, out_dir: Path, sink: Sink) -> ArchivingSink:
    """``sink`` with ``OUT/warc/`` beside it when ``[warc] enabled``."""
    settings = config.warc
    if not settings.enabled:
        return ArchivingSink(sink, None)
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
    return ArchivingSink(sink, Archive(files))


def warc_fields(ref: WarcRef | None) -> dict[str, Any]:
    """The ``documents.jsonl`` fields naming a capture's record."""
    if ref is None:
        return {}
    fields: dict[str, Any] = {
        "warc": {"file": ref.file, "offset": ref.offset, "length": ref.length, "type": ref.record}
    }
    if ref.digest is not None:
        fields["warc"]["digest"] = ref.digest
    return fields
