"""Document segments: compact JSON Lines in gzip members, rotated by size and time, a segment
cut by a crash readable up to its last whole member, and an older ``documents.jsonl`` read
beside them."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

from courtier.runtime.processes import host_tag
from courtier.sinks.documents import (
    DOCUMENTS_DIR,
    DocumentSink,
    document_files,
    read_documents,
    rfc3339,
    segment_files,
    whole_members,
)
from courtier.sinks.warc import compress_member


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _record(n: int, text: str = "") -> dict[str, object]:
    return {"url": f"http://a.test/{n}", "site": "a.test", "status": 200, "text": text}


def test_records_are_compact_lines_and_a_lone_surrogate_is_written_escaped(tmp_path: Path):
    sink = DocumentSink(tmp_path)
    sink.write({"url": "http://a.test/café", "status": 200, "links": [], "n": 2**70})
    sink.write({"url": "http://a.test/", "server": "caf\udce9"})  # a header byte, no UTF-8
    sink.close()
    (segment,) = sink.finished
    assert segment.parent == tmp_path / DOCUMENTS_DIR
    assert segment.name.startswith("documents-") and segment.name.endswith(".jsonl.gz")
    lines = gzip.decompress(segment.read_bytes()).splitlines()  # any gzip reader
    assert (
        lines[0]
        == '{"url":"http://a.test/café","status":200,"links":[],"n":1180591620717411303424}'.encode()
    )
    assert lines[1] == b'{"url":"http://a.test/","server":"caf\\udce9"}'
    assert json.loads(lines[1])["server"] == "caf\udce9"


def test_nothing_written_leaves_no_segment(tmp_path: Path):
    sink = DocumentSink(tmp_path)
    sink.flush()
    sink.close()
    assert segment_files(tmp_path) == [] and list(read_documents(tmp_path)) == []


def test_each_flush_is_one_gzip_member_and_the_open_segment_is_read_whole(tmp_path: Path):
    sink = DocumentSink(tmp_path)
    for n in range(3):
        sink.write(_record(n))
        sink.flush()
    (open_segment,) = segment_files(tmp_path)
    assert open_segment.name.endswith(".jsonl.gz.open")
    assert len(list(whole_members(open_segment))) == 3
    assert [d["url"] for d in read_documents(tmp_path)] == [f"http://a.test/{n}" for n in range(3)]
    sink.close()
    assert not open_segment.exists() and sink.finished[0].exists()


def test_segments_rotate_by_size_and_by_time(tmp_path: Path):
    clock = FakeClock()
    sink = DocumentSink(tmp_path, segment_bytes=1 << 16, segment_seconds=60.0, clock=clock)
    noise = os.urandom(80_000).hex()  # hex: half of it compresses away, ~80 KB are left
    sink.write(_record(0, noise))
    sink.flush()  # past segment_bytes: finished
    sink.write(_record(1))
    sink.flush()
    assert len(sink.finished) == 1
    clock.now += 59.0
    sink.flush()  # not old enough yet
    assert len(sink.finished) == 1
    clock.now += 1.0
    sink.flush()  # an idle segment is finished once it is old
    assert len(sink.finished) == 2 and sink.path is None
    sink.write(_record(2))
    sink.close()
    assert len(sink.finished) == 3
    assert [p.name for p in segment_files(tmp_path)] == sorted(p.name for p in sink.finished)
    assert [d["url"] for d in read_documents(tmp_path)] == [f"http://a.test/{n}" for n in range(3)]


def test_a_crash_leaves_the_segment_readable_up_to_its_last_whole_member(tmp_path: Path):
    sink = DocumentSink(tmp_path)
    sink.write(_record(0))
    sink.flush()
    sink.write(_record(1))
    sink.flush()
    sink.close()
    (segment,) = sink.finished
    # As a kill -9 mid-write leaves it: open, a member cut short at its end, a dead PID.
    stamp = segment.name.split("-")[1]
    orphan = segment.with_name(f"documents-{stamp}-00000-{host_tag()}-999999.jsonl.gz")
    orphan = orphan.with_name(orphan.name + ".open")
    cut = compress_member(b'{"url":"http://a.test/cut"}\n', 2)[:-9]
    orphan.write_bytes(segment.read_bytes() + cut)
    segment.unlink()
    assert [d["url"] for d in read_documents(tmp_path)] == ["http://a.test/0", "http://a.test/1"]
    with pytest.raises(EOFError):  # one gzip stream to a plain reader: cut short
        gzip.decompress(orphan.read_bytes())
    # The next writer (a resumed crawl) finishes it and starts a segment of its own.
    resumed = DocumentSink(tmp_path, clock=FakeClock())
    finished = orphan.with_name(orphan.name.removesuffix(".open"))
    assert finished.exists() and not orphan.exists()
    assert len(gzip.decompress(finished.read_bytes()).splitlines()) == 2
    resumed.write(_record(2))
    resumed.close()
    assert len(segment_files(tmp_path)) == 2
    assert [d["url"] for d in read_documents(tmp_path)][-1] == "http://a.test/2"


def test_an_older_documents_jsonl_is_read_first_its_times_as_rfc_3339(tmp_path: Path):
    legacy = tmp_path / "documents.jsonl"
    legacy.write_text(
        json.dumps({"url": "http://old.test/", "fetched_at": 1796675460.563}) + "\n"
        '{"url": "http://old.test/cut", "fet'  # its last line cut by a crash
    )
    sink = DocumentSink(tmp_path)
    sink.write({"url": "http://new.test/", "fetched_at": rfc3339(1796675461.0)})
    sink.close()
    assert document_files(tmp_path)[0] == legacy
    documents = list(read_documents(tmp_path))
    assert [(d["url"], d["fetched_at"]) for d in documents] == [
        ("http://old.test/", "2026-12-07T20:31:00.563Z"),
        ("http://new.test/", "2026-12-07T20:31:01.000Z"),
    ]
    assert legacy.read_text().startswith('{"url": "http://old.test/"')  # never written again


def test_rfc3339_is_utc_to_the_millisecond():
    assert rfc3339(0) == "1970-01-01T00:00:00.000Z"
    assert rfc3339(1796675460.5629) == "2026-12-07T20:31:00.563Z"
    assert rfc3339(1796675460.9996) == "2026-12-07T20:31:01.000Z"  # rounds into the next second
