"""``courtier query --out OUT "SQL" [--json]``: SQL over a run's request log (DuckDB).

Views: ``requests`` (one row per request, ``OUT/requests/*.parquet``), ``anomalies``
(``OUT/anomalies.jsonl``), ``samples`` (``OUT/samples.jsonl``: the crawl's counters and
gauges over time), ``documents`` (the segments of ``OUT/documents/``, and an older
version's ``OUT/documents.jsonl``: one row per document; ``fetched_at`` as RFC 3339 UTC) and
``texts`` (the documents that carry a ``text``). Instead of SQL, a named query
(``courtier query --list``), e.g. ``origin-units`` (cost units per second per origin per
minute) or ``p95-rise`` (sites whose p95 time to first byte rose most between the first
and second half of the run).

Output: a table on stdout, or with ``--json`` one JSON object per row (times in ISO 8601).
Exit status: 0 done; 2 bad input: no output directory, no SQL, or SQL DuckDB refused (its
message on stderr, as ``courtier query: SQL: ...``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from courtier.inputs import InputError
from courtier.observe.query import NAMED_QUERIES, QueryError, json_lines, jsonable, run_query


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "query",
        help="run SQL over a crawl's request log and documents (DuckDB)",
        description="Run SQL with DuckDB over the request log and documents of a crawl's "
        "output directory: the views requests, anomalies, samples, documents and texts. A "
        "name from --list runs that query.",
    )
    parser.add_argument(
        "--out", type=Path, default=Path("crawl-out"), help="the crawl's output directory"
    )
    parser.add_argument("sql", nargs="?", help="SQL, or the name of a query from --list")
    parser.add_argument("--json", action="store_true", help="one JSON object per row on stdout")
    parser.add_argument("--list", action="store_true", help="list the named queries")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    console = Console(soft_wrap=True)
    if args.list:
        for name, (description, sql) in NAMED_QUERIES.items():
            if args.json:
                sys.stdout.write(
                    json_lines(["name", "description", "sql"], [(name, description, sql)])
                )
            else:
                console.print(f"[bold]{name}[/bold]: {description}")
        return 0
    if not args.sql:
        raise InputError("SQL: give SQL, or the name of a query (--list shows them)")
    out: Path = args.out
    if not out.is_dir():
        raise InputError(f"--out: {out}: not a directory (a crawl's output directory)")
    try:
        columns, rows = run_query(out, args.sql)
    except QueryError as exc:
        raise InputError(f"SQL: {exc}") from None
    if args.json:
        sys.stdout.write(json_lines(columns, rows))
        return 0
    table = Table(show_lines=False)
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*(_cell(v) for v in row))
    console.print(table)
    console.print(f"{len(rows)} rows", style="dim")
    return 0


def _cell(value: object) -> str:
    shown = jsonable(value)
    return "" if shown is None else str(shown)
