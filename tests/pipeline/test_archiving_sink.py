"""The document sink beside the archive: no document reaches the disk before its record."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from courtier.config import load
from courtier.pipeline.keeping.archive import HELD_DOCUMENTS, archived
from courtier.pipeline.stats import CrawlStats
from courtier.sinks.warc import Capture, encode_capture


class Recording:
    """A document sink that notes, for each document, the WARC file's size on disk then."""

    def __init__(self, warc_dir: Path) -> None:
        self.warc_dir = warc_dir
        self.seen: list[tuple[dict[str, Any], int]] = []

    def write(self, record: dict[str, Any]) -> None:
        size = sum(p.stat().st_size for p in self.warc_dir.glob("*.open"))
        self.seen.append((record, size))

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


def capture(n: int) -> Capture:
    return Capture(f"http://a.test/{n}", time.time(), 200, (), b"<p>page</p>" * 50)


def test_documents_wait_until_the_records_they_name_are_written(tmp_path: Path) -> None:
    stats = CrawlStats()
    recording = Recording(tmp_path / "warc")
    sink = archived(load(None, []), tmp_path, recording, stats)
    assert sink.archive is not None
    for n in range(5):
        ref = sink.archive.append(encode_capture(capture(n)), stats)
        assert ref is not None
        sink.write({"url": f"http://a.test/{n}", "end": ref.offset + ref.length})
    assert recording.seen == []  # held until the archive writes
    sink.flush()
    assert len(recording.seen) == 5
    assert all(size >= record["end"] for record, size in recording.seen)
    sink.close()
    assert stats.warc_errors == 0


def test_held_documents_are_bounded(tmp_path: Path) -> None:
    recording = Recording(tmp_path / "warc")
    sink = archived(load(None, []), tmp_path, recording, CrawlStats())
    for n in range(HELD_DOCUMENTS):
        sink.write({"url": f"http://a.test/{n}"})
    assert len(recording.seen) == HELD_DOCUMENTS
    sink.close()
