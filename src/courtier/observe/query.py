"""SQL over a run's request log with DuckDB: the views ``requests``, ``anomalies``, ``samples``,
and its documents: ``documents`` and ``texts`` (``observe.documents``).

Rules:
- DuckDB never fetches anything: extension auto-install and auto-load are off (the Parquet
  and JSON readers are built in).
- ``requests`` reads ``OUT/requests/*.parquet`` at query time (a live run's newest rows
  included: its files are always complete). With no file yet it is an empty view of the
  same columns, so every query in docs/observe.md runs on any output directory.
- Times are UTC (``SET TimeZone = 'UTC'``).
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import duckdb
import pyarrow as pa

from courtier.observe.documents import create_document_views
from courtier.observe.observation import ANOMALIES_FILE, SAMPLES_FILE
from courtier.observe.requestlog import REQUESTS_DIR
from courtier.observe.rows import SCHEMA

ANOMALY_COLUMNS: Final = {
    "time": "DOUBLE",
    "scope": "VARCHAR",
    "name": "VARCHAR",
    "signal": "VARCHAR",
    "state": "VARCHAR",
    "value": "DOUBLE",
    "baseline": "DOUBLE",
    "threshold": "DOUBLE",
    "samples": "BIGINT",
    "origin": "VARCHAR",
    "detail": "VARCHAR",
}

NAMED_QUERIES: Final[Mapping[str, tuple[str, str]]] = {
    "origin-units": (
        "cost units per second per origin, per minute, against the origin's budget",
        """
WITH bounds AS (SELECT min(time) AS t0, max(time) AS t1 FROM requests),
per_minute AS (
    SELECT origin, time_bucket(INTERVAL '1 minute', time) AS minute, count(*) AS requests,
           sum(cost_units + extra_units) AS units, max(origin_budget) AS budget
    FROM requests
    WHERE origin IS NOT NULL AND refusal IS NULL
    GROUP BY ALL
)
SELECT origin, minute, requests,
       round(units / greatest(1.0, epoch(least(minute + INTERVAL '1 minute', t1))
                                   - epoch(greatest(minute, t0))), 3) AS units_per_s,
       budget,
       round(units_per_s / budget, 3) AS utilisation
FROM per_minute, bounds
ORDER BY minute, units_per_s DESC, origin
""",
    ),
    "p95-rise": (
        "sites whose p95 time to first byte rose most between the first and second half of the run",
        """
WITH middle AS (
    SELECT to_timestamp((epoch(min(time)) + epoch(max(time))) / 2) AS t FROM requests
),
halves AS (
    SELECT site, time < middle.t AS first_half, count(*) AS n,
           quantile_cont(coalesce(first_byte_s, total_s), 0.95) AS p95
    FROM requests, middle
    WHERE status IS NOT NULL
    GROUP BY ALL
)
SELECT a.site, a.n AS first_n, b.n AS second_n,
       round(a.p95 * 1000, 1) AS p95_first_ms, round(b.p95 * 1000, 1) AS p95_second_ms,
       round((b.p95 - a.p95) * 1000, 1) AS rise_ms,
       round(b.p95 / greatest(a.p95, 1e-6), 2) AS ratio
FROM halves a JOIN halves b ON a.site = b.site AND a.first_half AND NOT b.first_half
WHERE a.n >= 3 AND b.n >= 3
ORDER BY rise_ms DESC, a.site
LIMIT 20
""",
    ),
    "status-mix": (
        "requests by kind and status class",
        """
SELECT kind, status_class, count(*) AS requests
FROM requests GROUP BY ALL ORDER BY kind, status_class
""",
    ),
    "busiest-sites": (
        "sites by requests, with cost units, errors and latency percentiles",
        """
SELECT site, any_value(origin) AS origin, count(*) AS requests,
       round(sum(cost_units + extra_units), 1) AS units,
       count(*) FILTER (WHERE status >= 500 OR (status IS NULL AND refusal IS NULL)) AS errors,
       count(*) FILTER (WHERE status IN (429, 503)) AS throttled,
       round(quantile_cont(total_s, 0.5) * 1000, 1) AS p50_ms,
       round(quantile_cont(total_s, 0.95) * 1000, 1) AS p95_ms
FROM requests GROUP BY site ORDER BY requests DESC, site LIMIT 50
""",
    ),
    "slot-lateness": (
        "booking wait and slot lateness percentiles by kind of request",
        """
SELECT kind, count(*) AS requests,
       round(quantile_cont(wait_s, 0.5), 3) AS wait_p50_s,
       round(quantile_cont(wait_s, 0.95), 3) AS wait_p95_s,
       round(quantile_cont(late_s, 0.5) * 1000, 2) AS late_p50_ms,
       round(quantile_cont(late_s, 0.99) * 1000, 2) AS late_p99_ms,
       round(max(late_s) * 1000, 2) AS late_max_ms
FROM requests WHERE refusal IS NULL GROUP BY kind ORDER BY requests DESC
""",
    ),
    "anomalies": (
        "anomalies raised and cleared, in time order",
        """
SELECT to_timestamp(time) AS time, state, scope, name, signal, round(value, 3) AS value,
       round(baseline, 3) AS baseline, detail
FROM anomalies ORDER BY time
""",
    ),
}
"""Queries ``courtier query`` knows by name (``courtier query --out OUT origin-units``)."""


class QueryError(Exception):
    """The SQL could not run (DuckDB's message says why)."""


def connect(out_dir: Path) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with the run's views (see the module rules)."""
    con = duckdb.connect(
        config={"autoinstall_known_extensions": False, "autoload_known_extensions": False}
    )
    con.execute("SET TimeZone = 'UTC'")
    files = out_dir / REQUESTS_DIR
    if any(files.glob("*.parquet")):
        pattern = _literal(str(files / "*.parquet"))
        con.execute(
            f"CREATE VIEW requests AS SELECT * FROM read_parquet({pattern}, union_by_name = true)"
        )
    else:
        con.register("_requests_empty", SCHEMA.empty_table())
        con.execute("CREATE VIEW requests AS SELECT * FROM _requests_empty")
    anomalies = out_dir / ANOMALIES_FILE
    if anomalies.exists() and anomalies.stat().st_size > 0:
        columns = "{" + ", ".join(f"'{k}': '{v}'" for k, v in ANOMALY_COLUMNS.items()) + "}"
        con.execute(
            "CREATE VIEW anomalies AS SELECT * FROM read_json("
            f"{_literal(str(anomalies))}, format = 'newline_delimited', columns = {columns})"
        )
    else:
        columns = ", ".join(f"{k} {v}" for k, v in ANOMALY_COLUMNS.items())
        con.execute(f"CREATE TABLE anomalies ({columns})")
    samples = out_dir / SAMPLES_FILE
    if samples.exists() and samples.stat().st_size > 0:
        con.execute(
            "CREATE VIEW samples AS SELECT * FROM read_json_auto("
            f"{_literal(str(samples))}, format = 'newline_delimited')"
        )
    create_document_views(con, out_dir)
    return con


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def resolve_sql(text: str) -> str:
    """The SQL of a named query, or ``text`` itself."""
    named = NAMED_QUERIES.get(text.strip())
    return named[1] if named is not None else text


def run_query(out_dir: Path, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Column names and rows of ``sql`` (or of a named query) over ``out_dir``."""
    con = connect(out_dir)
    try:
        cursor = con.execute(resolve_sql(sql))
        if cursor.description is None:
            return [], []
        columns = [d[0] for d in cursor.description]
        return columns, [tuple(row) for row in cursor.fetchall()]
    except duckdb.Error as exc:
        raise QueryError(str(exc)) from None
    finally:
        con.close()


def to_arrow(out_dir: Path, sql: str) -> pa.Table:
    """The result of ``sql`` as an Arrow table."""
    con = connect(out_dir)
    try:
        table = con.execute(resolve_sql(sql)).to_arrow_table()
    except duckdb.Error as exc:
        raise QueryError(str(exc)) from None
    finally:
        con.close()
    if table is None:
        raise QueryError("the statement returned no result")
    return table


def jsonable(value: Any) -> Any:
    """A query value as JSON can hold it (times as ISO 8601, NaN as null)."""
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    return value


def json_lines(columns: list[str], rows: list[tuple[Any, ...]]) -> str:
    return "".join(
        json.dumps({c: jsonable(v) for c, v in zip(columns, row, strict=True)}) + "\n"
        for row in rows
    )
