"""The ``documents`` and ``texts`` views of a run (``courtier query``, ``courtier export``).

Rules:
- ``documents`` reads the run's documents at query time (``sinks.documents.document_files``:
  the gzip-compressed segments of ``OUT/documents/``, and an older version's
  ``OUT/documents.jsonl``), one row per document record, with a column per field any record
  has: the schema is taken from every line, not a sample (a field that only PDFs or a parse
  hook write, late in a run, is still a column). A line that is not JSON is skipped.
- A segment still open (a live crawl's, or one a crash left) is read up to its last whole
  gzip member: those bytes are copied to a temporary file the connection keeps (DuckDB
  refuses a gzip stream cut short), so a query during a crawl sees what was flushed.
- ``fetched_at`` is an RFC 3339 UTC string to the millisecond (``2026-12-07T20:41:00.563Z``),
  whether the record holds one (segments) or epoch seconds (an older ``documents.jsonl``):
  ``fetched_at::TIMESTAMPTZ`` is a timestamp.
- ``texts`` is the documents that carry a ``text`` (a PDF's extracted text; HTML pages'
  main text where the crawl extracts it): every column of ``documents``, only those rows.
  A run whose documents have no ``text`` at all gets an empty ``texts`` of the core columns.
- With no documents yet both are empty views of the core columns, so a query naming
  them runs on any output directory.
"""

from __future__ import annotations

import tempfile
import weakref
from pathlib import Path
from typing import Final

import duckdb

from courtier.sinks.documents import OPEN_SUFFIX, document_files, is_open
from courtier.sinks.warc_orphans import whole_members_end

CORE_COLUMNS: Final = {
    "url": "VARCHAR",
    "site": "VARCHAR",
    "status": "BIGINT",
    "fetched_at": "VARCHAR",
    "content_type": "VARCHAR",
    "bytes": "BIGINT",
    "title": "VARCHAR",
    "text": "VARCHAR",
}
"""The columns of an empty ``documents`` (``sinks.documents`` and ``answers.verdict``)."""
MAX_RECORD_BYTES: Final = 256 << 20
"""Longest record read (a PDF's text and a hook's fields make records of megabytes)."""


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


_CHUNK: Final = 1 << 20
_RFC3339: Final = "'%Y-%m-%dT%H:%M:%S.%gZ'"
_STAMP_TEXT: Final = "trim(CAST(fetched_at AS VARCHAR), '\"')"
FETCHED_AT: Final = (
    f"CASE WHEN TRY_CAST({_STAMP_TEXT} AS DOUBLE) IS NOT NULL "
    f"THEN strftime(epoch_ms(CAST(round(TRY_CAST({_STAMP_TEXT} AS DOUBLE) * 1000) AS BIGINT)), "
    f"{_RFC3339}) "
    f"ELSE strftime(TRY_CAST({_STAMP_TEXT} AS TIMESTAMPTZ) AT TIME ZONE 'UTC', {_RFC3339}) END"
)
"""``fetched_at`` as RFC 3339, whatever DuckDB read it as: epoch seconds (older records), a
timestamp (it detects RFC 3339 strings), or JSON (both in one run)."""


def _readable(paths: list[Path], con: duckdb.DuckDBPyConnection) -> list[Path]:
    """``paths`` as DuckDB can read them: an open segment's whole members copied aside."""
    readable: list[Path] = []
    folder: Path | None = None
    for path in paths:
        if not is_open(path):
            readable.append(path)
            continue
        if folder is None:
            keep = tempfile.TemporaryDirectory(prefix="courtier-documents-")
            weakref.finalize(con, keep.cleanup)
            folder = Path(keep.name)
        copy = folder / path.name.removesuffix(OPEN_SUFFIX)
        try:
            end = whole_members_end(path)
            with path.open("rb") as source, copy.open("wb") as target:
                left = end
                while left > 0 and (chunk := source.read(min(left, _CHUNK))):
                    target.write(chunk)
                    left -= len(chunk)
        except FileNotFoundError:  # finished (renamed) since it was listed
            finished = path.with_name(copy.name)
            if finished.exists():
                readable.append(finished)
            continue
        if end > 0:
            readable.append(copy)
    return readable


def create_document_views(con: duckdb.DuckDBPyConnection, out_dir: Path) -> None:
    """``documents`` and ``texts`` over ``out_dir``'s documents (see the module rules)."""
    paths = _readable(document_files(out_dir), con)
    if paths:
        files = "[" + ", ".join(_literal(str(path)) for path in paths) + "]"
        con.execute(
            "CREATE VIEW _documents_read AS SELECT * FROM read_json("
            f"{files}, format = 'newline_delimited', sample_size = -1, "
            f"ignore_errors = true, maximum_object_size = {MAX_RECORD_BYTES}, "
            "union_by_name = true) WHERE url IS NOT NULL"  # a line it skipped: all NULL
        )
        names = {row[0] for row in con.execute("DESCRIBE _documents_read").fetchall()}
        replace = f" REPLACE ({FETCHED_AT} AS fetched_at)" if "fetched_at" in names else ""
        con.execute(f"CREATE VIEW documents AS SELECT *{replace} FROM _documents_read")
    else:
        columns = ", ".join(f"NULL::{kind} AS {name}" for name, kind in CORE_COLUMNS.items())
        con.execute(f"CREATE VIEW documents AS SELECT {columns} WHERE false")
    names = {row[0] for row in con.execute("DESCRIBE documents").fetchall()}
    if "text" in names:
        con.execute("CREATE VIEW texts AS SELECT * FROM documents WHERE text IS NOT NULL")
    else:
        columns = ", ".join(f"NULL::{kind} AS {name}" for name, kind in CORE_COLUMNS.items())
        con.execute(f"CREATE VIEW texts AS SELECT {columns} WHERE false")
