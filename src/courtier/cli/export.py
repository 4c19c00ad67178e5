"""``courtier export --out OUT --format parquet|csv|jsonl [--where SQL] [-o FILE]``: a crawl's
documents as one file, written by DuckDB.

Reads the ``documents`` view (``observe.documents``: every field of the documents in
``OUT/documents/`` as a column, ``fetched_at`` an RFC 3339 UTC string; ``--view texts``:
only documents that carry a ``text``), keeps the rows
``--where`` allows (a SQL condition over those columns, e.g. ``"status = 200 AND
content_type LIKE 'application/pdf%'"``) and writes them with DuckDB's own writers:
Parquet (zstd) keeps nested fields (links, a hook's fields) as lists and structs; CSV
writes them as text; JSON Lines as JSON.

``-o FILE`` names the file ("-": standard output, CSV and JSON Lines only); by default it is
``OUT/export/documents.<format>``. The file is written beside its name and renamed into
place, so a reader never sees half of it. On a terminal a progress bar on stderr follows
DuckDB's own progress of the query (``query_progress``). Exit status: 0 written (the row
count on stderr); 2 bad input: no output directory, SQL DuckDB refused (its message on
stderr).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Final

import duckdb

from courtier.cli.progress_bar import Advance, progress_bar
from courtier.inputs import InputError
from courtier.observe.query import connect

FORMATS: Final = {
    "parquet": "(FORMAT parquet, COMPRESSION zstd)",
    "csv": "(FORMAT csv, HEADER true)",
    "jsonl": "(FORMAT json)",
}


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "export",
        help="write a crawl's documents as Parquet, CSV or JSON Lines (DuckDB)",
        description="Write the documents of a crawl's output directory (or those --where "
        "allows) to one Parquet, CSV or JSON Lines file.",
    )
    parser.add_argument(
        "--out", type=Path, default=Path("crawl-out"), help="the crawl's output directory"
    )
    parser.add_argument(
        "--format", choices=sorted(FORMATS), default="parquet", help="default parquet"
    )
    parser.add_argument(
        "--where", help='SQL condition on the documents\' columns, e.g. "status = 200"'
    )
    parser.add_argument(
        "--view",
        choices=("documents", "texts"),
        default="documents",
        help="texts: only documents that carry a text",
    )
    parser.add_argument(
        "-o",
        "--output",
        help='file to write ("-": stdout, csv and jsonl); default OUT/export/documents.FORMAT',
    )
    parser.set_defaults(handler=handle)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def handle(args: argparse.Namespace) -> int:
    out: Path = args.out
    if not out.is_dir():
        raise InputError(f"--out: {out}: not a directory (a crawl's output directory)")
    fmt: str = args.format
    output: str = args.output or str(out / "export" / f"documents.{fmt}")
    if output == "-" and fmt == "parquet":
        raise InputError("-o -: Parquet is not written to standard output; name a file")
    where = f" WHERE {args.where}" if args.where else ""
    query = f"SELECT * FROM {args.view}{where}"
    con = connect(out)
    try:
        with progress_bar(f"exporting {args.view} as {fmt}") as advance:
            if output == "-":
                written = _to_stdout(con, query, fmt, advance)
            else:
                written = _to_file(con, query, fmt, Path(output), advance)
    except duckdb.Error as exc:
        raise InputError(f"SQL: {' '.join(str(exc).split())}") from None
    finally:
        con.close()
    print(f"courtier export: {written} documents -> {output}", file=sys.stderr)
    return 0


POLL_SECONDS: Final = 0.2
"""How often the progress of a running query is asked for."""


def _run(con: duckdb.DuckDBPyConnection, sql: str, advance: Advance | None, what: str) -> None:
    """Run ``sql``; with ``advance``, on a thread, while this one reports DuckDB's progress
    (percent of the query's work; -1 while it has none to tell)."""
    if advance is None:
        con.execute(sql)
        return
    con.execute("SET enable_progress_bar = true")
    con.execute("SET enable_progress_bar_print = false")  # our bar, not DuckDB's on stdout
    with ThreadPoolExecutor(1, thread_name_prefix="courtier-export") as pool:
        running = pool.submit(con.execute, sql)
        try:
            while True:
                try:
                    running.result(timeout=POLL_SECONDS)
                    return
                except TimeoutError:
                    done = con.query_progress()
                    advance(max(0.0, done), 100.0 if done >= 0 else None, what)
        except BaseException:
            con.interrupt()  # Ctrl-C: the query stops too
            raise


def _to_file(
    con: duckdb.DuckDBPyConnection,
    query: str,
    fmt: str,
    path: Path,
    advance: Advance | None = None,
) -> int:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"-o: {path}: cannot create its directory ({exc.strerror})") from None
    handle, partial = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(handle)
    try:
        _run(con, f"COPY ({query}) TO {_literal(partial)} {FORMATS[fmt]}", advance, "writing")
        written = con.execute(f"SELECT count(*) FROM ({query})").fetchone()
        os.replace(partial, path)
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise
    return int(written[0]) if written else 0


def _to_stdout(
    con: duckdb.DuckDBPyConnection, query: str, fmt: str, advance: Advance | None = None
) -> int:
    with tempfile.TemporaryDirectory(prefix="courtier-export-") as folder:
        partial = str(Path(folder) / f"documents.{fmt}")
        _run(con, f"COPY ({query}) TO {_literal(partial)} {FORMATS[fmt]}", advance, "writing")
        binary = getattr(sys.stdout, "buffer", None)  # None: a text stream stands in for it
        with open(partial, "rb") as source:
            if binary is not None:
                sys.stdout.flush()
                shutil.copyfileobj(source, binary)
                binary.flush()
            else:
                for line in source:
                    sys.stdout.write(line.decode("utf-8", "replace"))
        written = con.execute(f"SELECT count(*) FROM ({query})").fetchone()
    return int(written[0]) if written else 0
