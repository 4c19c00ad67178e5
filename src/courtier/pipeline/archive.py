"""The crawl's WARC output (``[warc]``): one writer thread, awaited by the fetch that it keeps.

Rules:
- Every fetched URL that gets a ``documents.jsonl`` record (pages, sitemaps, media) gets a
  WARC capture first (``courtier.sinks.warc``): the document then names the file, offset and
  length of its response (or revisit) record, so a CDX index can be built from documents.
- Compressing and writing run on one thread of their own, never on the event loop: a lane
  awaits its capture's ``WarcRef`` (a few hundred microseconds to milliseconds), which also
  bounds what waits in memory by the requests in flight (``crawl.max_in_flight``).
- A write that fails (a full disk) is logged, counted (``warc_errors``) and the crawl goes
  on: its document has no ``warc`` field.
- The files are finished (renamed from ``.open``) when the sink is closed at the end of a
  run; ``ArchivingSink`` is the engine's document sink with the archive beside it.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from courtier.config import Config
from courtier.frontier.base import LeasedUrl
from courtier.pipeline.stats import CrawlStats
from courtier.sinks.documents import Sink
from courtier.sinks.redact import RedactionPolicy
from courtier.sinks.warc import Capture, WarcFiles, WarcRef

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


class Archive:
    def __init__(self, files: WarcFiles) -> None:
        self.files = files
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="courtier-warc")
        self._failed = False

    async def write(self, capture: Capture, stats: CrawlStats) -> WarcRef | None:
        """Write ``capture`` on the writer thread; None when the write failed."""
        loop = asyncio.get_running_loop()
        try:
            ref = await loop.run_in_executor(self._thread, self.files.write, capture)
        except (OSError, ValueError) as exc:  # a full disk; a record warcio cannot encode
            stats.warc_errors += 1
            if not self._failed:
                log.error("WARC write failed (%s): documents go on without WARC records", exc)
            self._failed = True
            return None
        stats.warc_records[ref.record] += 1
        stats.warc_bytes += ref.length
        stats.warc_seconds += ref.seconds
        return ref

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
