"""The ``documents`` and ``texts`` views of a run (``courtier query``, ``courtier export``).

Rules:
- ``documents`` reads ``OUT/documents.jsonl`` at query time, one row per document record,
  with a column per field any record has: the schema is taken from every line, not a sample
  (a field that only PDFs or a parse hook write, late in a run, is still a column). A line
  that is not JSON (a crash mid-write leaves at most the last one cut) is skipped.
- ``texts`` is the documents that carry a ``text`` (a PDF's extracted text; HTML pages'
  main text where the crawl extracts it): every column of ``documents``, only those rows.
  A run whose documents have no ``text`` at all gets an empty ``texts`` of the core columns.
- With no documents file yet both are empty views of the core columns, so a query naming
  them runs on any output directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import duckdb

DOCUMENTS_FILE: Final = "documents.jsonl"
CORE_COLUMNS: Final = {
    "url": "VARCHAR",
    "site": "VARCHAR",
    "status": "BIGINT",
    "fetched_at": "DOUBLE",
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


def create_document_views(con: duckdb.DuckDBPyConnection, out_dir: Path) -> None:
    """``documents`` and ``texts`` over ``out_dir``'s documents (see the module rules)."""
    path = out_dir / DOCUMENTS_FILE
    if path.exists() and path.stat().st_size > 0:
        con.execute(
            "CREATE VIEW documents AS SELECT * FROM read_json("
            f"{_literal(str(path))}, format = 'newline_delimited', sample_size = -1, "
            f"ignore_errors = true, maximum_object_size = {MAX_RECORD_BYTES}, "
            "union_by_name = true) WHERE url IS NOT NULL"  # a line it skipped: all NULL
        )
    else:
        columns = ", ".join(f"NULL::{kind} AS {name}" for name, kind in CORE_COLUMNS.items())
        con.execute(f"CREATE VIEW documents AS SELECT {columns} WHERE false")
    names = {row[0] for row in con.execute("DESCRIBE documents").fetchall()}
    if "text" in names:
        con.execute("CREATE VIEW texts AS SELECT * FROM documents WHERE text IS NOT NULL")
    else:
        columns = ", ".join(f"NULL::{kind} AS {name}" for name, kind in CORE_COLUMNS.items())
        con.execute(f"CREATE VIEW texts AS SELECT {columns} WHERE false")
