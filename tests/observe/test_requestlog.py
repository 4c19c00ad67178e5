"""The request log on disk: complete Parquet files at every moment, rotated, nothing lost."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pyarrow.parquet as pq
from observe_helpers import T0, event

from courtier.observe.requestlog import RequestLogWriter
from courtier.observe.rows import SCHEMA, RowMaker
from courtier.observe.settings import ObserveSettings
from courtier.politeness.keys import CostModel

MAKER = RowMaker(CostModel(), lambda key: 2.0)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


def writer(tmp_path: Path, clock: Clock, **settings: object) -> RequestLogWriter:
    s = replace(ObserveSettings(), flush_seconds=2.0, rotate_seconds=60.0, **settings)
    return RequestLogWriter(tmp_path, s, run="run", worker="w", clock=clock)


def add(log: RequestLogWriter, n: int, at: float = T0) -> None:
    for i in range(n):
        log.add(MAKER.row_of(event(at=at + i * 0.01)))


def rows_on_disk(tmp_path: Path) -> int:
    return sum(pq.read_metadata(p).num_rows for p in (tmp_path / "requests").glob("*.parquet"))


def test_rows_reach_a_complete_file_at_each_flush_and_the_file_grows(tmp_path):
    clock = Clock()
    log = writer(tmp_path, clock)
    add(log, 5)
    assert not log.maybe_flush(clock.now + 1.0)  # not due yet
    assert log.maybe_flush(clock.now + 2.0)
    assert rows_on_disk(tmp_path) == 5
    add(log, 3)
    log.flush(clock.now + 4.0)
    files = list((tmp_path / "requests").glob("*.parquet"))
    assert len(files) == 1 and rows_on_disk(tmp_path) == 8
    assert pq.read_schema(files[0]).remove_metadata() == SCHEMA
    assert not list((tmp_path / "requests").glob(".*.tmp"))  # written beside, renamed over


def test_a_file_rotates_by_time(tmp_path):
    clock = Clock()
    log = writer(tmp_path, clock)
    add(log, 2)
    log.flush(T0)
    add(log, 2)
    log.flush(T0 + 61.0)  # the file has held 60 s: these rows close it
    add(log, 2)
    log.flush(T0 + 62.0)
    assert len(log.files) == 2 and rows_on_disk(tmp_path) == 6
    assert [p.name for p in log.files] == [
        "requests-run-00001.parquet",
        "requests-run-00002.parquet",
    ]


def test_a_file_rotates_by_rows_and_by_size(tmp_path):
    clock = Clock()
    log = writer(tmp_path / "rows", clock, rotate_rows=10)
    for i in range(5):
        add(log, 4)
        log.flush(T0 + i)
    assert len(log.files) == 2 and rows_on_disk(tmp_path / "rows") == 20
    sizes = [pq.read_metadata(p).num_rows for p in log.files]
    assert sizes == [10, 10]  # a flush that would pass the limit is split
    small = writer(tmp_path / "bytes", clock, rotate_bytes=1)
    for i in range(3):
        add(small, 1)
        small.flush(T0 + i)
    assert len(small.files) == 3


def test_close_writes_every_row(tmp_path):
    clock = Clock()
    log = writer(tmp_path, clock)
    add(log, 7)
    log.close()
    assert rows_on_disk(tmp_path) == 7 == log.rows_written


def test_every_codec_writes_a_readable_file(tmp_path):
    for codec in ("zstd", "snappy", "gzip", "lz4", "none"):
        log = writer(tmp_path / codec, Clock(), compression=codec)
        add(log, 3)
        log.close()
        assert rows_on_disk(tmp_path / codec) == 3


def test_a_row_with_undecodable_header_bytes_is_kept_escaped_with_its_batch(tmp_path):
    """Header bytes that are no UTF-8 reach a row as surrogate escapes; Parquet takes no
    surrogates, and the whole batch used to be dropped with a traceback."""
    clock = Clock()
    log = writer(tmp_path, clock)
    add(log, 3)
    odd = event(at=T0 + 1, status=302, retry_after="5\udcff", content_type="text/html;\udce9")
    log.add(MAKER.row_of(odd))
    add(log, 3, at=T0 + 2)
    log.flush(clock.now + 3.0)
    assert rows_on_disk(tmp_path) == 7
    table = pq.read_table(next((tmp_path / "requests").glob("*.parquet")))
    assert "5\\udcff" in table.column("retry_after").to_pylist()
