"""The request log on disk: Parquet files in ``OUT/requests/``, always complete.

Rules:
- Every file in ``OUT/requests/`` named ``*.parquet`` is a complete Parquet file at every
  moment: a file is written beside it as ``.<name>.tmp`` and renamed over it (atomic on POSIX),
  so a reader (DuckDB, ClickHouse) never sees half a file, and a crash loses at most the rows
  of the last ``flush_seconds``.
- Rotation: the current file grows at each flush (it is written again with the new rows
  added) until it has been open ``rotate_seconds``, holds ``rotate_rows`` rows (exactly:
  a flush that would pass the limit is split) or ``rotate_bytes`` of data (checked after
  each flush); then the next file starts. Rewriting stays cheap because a file is
  bounded; a finished file is never touched again.
- Names sort by time: ``requests-<run>-<seq>.parquet``, ``run`` being the UTC start of the
  run and the worker, so runs and workers writing into one directory never collide.
- ``close`` writes what is left: after a clean stop every row is in a file.
- Only the observer's thread calls this class.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import pyarrow as pa
import pyarrow.parquet as pq

from courtier.observe.rows import SCHEMA, RequestRow, record_batch
from courtier.observe.settings import ObserveSettings

REQUESTS_DIR = "requests"
Codec = Literal["zstd", "snappy", "gzip", "lz4", "none"]
CODECS: dict[str, Codec] = {
    "zstd": "zstd",
    "snappy": "snappy",
    "gzip": "gzip",
    "lz4": "lz4",
    "none": "none",
}


def safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")[:80] or "worker"


class RequestLogWriter:
    def __init__(
        self,
        out_dir: Path,
        settings: ObserveSettings,
        *,
        run: str,
        worker: str,
        clock: Callable[[], float],
    ) -> None:
        self.directory = out_dir / REQUESTS_DIR
        self.directory.mkdir(parents=True, exist_ok=True)
        self.settings = settings
        self.run, self.worker = run, worker
        self.clock = clock
        self._rows: list[RequestRow] = []
        self._batches: list[pa.RecordBatch] = []
        self._file_rows = 0
        self._file_bytes = 0
        self._file_started = 0.0
        self._last_flush = clock()
        self._seq = 0
        self._path: Path | None = None
        self.rows_written = 0
        self.files: list[Path] = []

    @property
    def pending(self) -> int:
        return len(self._rows)

    def add(self, row: RequestRow) -> None:
        self._rows.append(row)

    def add_all(self, rows: list[RequestRow]) -> None:
        self._rows += rows

    def maybe_flush(self, now: float) -> bool:
        """Flush when ``flush_seconds`` have passed since the last flush."""
        if now - self._last_flush < self.settings.flush_seconds:
            return False
        self.flush(now)
        return True

    def flush(self, now: float | None = None) -> None:
        now = self.clock() if now is None else now
        self._last_flush = now
        rows, self._rows = self._rows, []
        while rows:
            if self._path is None:
                self._start_file(now)
            room = self.settings.rotate_rows - self._file_rows
            self._append(rows[:room])
            rows = rows[room:]
            self._rotate_if_due(now)
        self._rotate_if_due(now)

    def _append(self, rows: list[RequestRow]) -> None:
        batch = record_batch(rows, self.run, self.worker)
        self.rows_written += len(rows)
        self._batches.append(batch)
        self._file_rows += batch.num_rows
        self._file_bytes += batch.nbytes
        self._write()

    def close(self) -> None:
        self.flush()
        self._finish_file()

    # -- files ----------------------------------------------------------------------------

    def _start_file(self, now: float) -> None:
        self._seq += 1
        name = f"requests-{self.run}-{self._seq:05d}.parquet"
        self._path = self.directory / name
        self._file_started = now
        self._batches, self._file_rows, self._file_bytes = [], 0, 0

    def _write(self) -> None:
        assert self._path is not None
        table = pa.Table.from_batches(self._batches, schema=SCHEMA)
        temporary = self._path.with_name(f".{self._path.name}.tmp")
        pq.write_table(
            table,
            temporary,
            compression=CODECS[self.settings.compression],
            row_group_size=max(1, self.settings.rotate_rows),
        )
        os.replace(temporary, self._path)
        if not self.files or self.files[-1] != self._path:
            self.files.append(self._path)

    def _rotate_if_due(self, now: float) -> None:
        if self._path is None:
            return
        s = self.settings
        if (
            now - self._file_started >= s.rotate_seconds
            or self._file_rows >= s.rotate_rows
            or self._file_bytes >= s.rotate_bytes
        ):
            self._finish_file()

    def _finish_file(self) -> None:
        self._path = None
        self._batches, self._file_rows, self._file_bytes = [], 0, 0
