"""``OUT/report.html``: one self-contained page of charts and tables about a run.

Everything comes from the run's output directory through DuckDB (``observe.query``): the
request log, ``anomalies.jsonl`` and ``samples.jsonl`` (rebooks are no requests, so their
rate over time comes from the samples of the crawl's counters). Charts are inline SVG
(``observe.svg``); the page loads nothing from anywhere, and its only script sorts tables.
The run's summary is embedded as JSON (``<script type="application/json" id="report-data">``)
for tools that read the page.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

import duckdb

from courtier.observe.query import connect
from courtier.observe.svg import (
    STATUS_COLORS,
    TIME_STEPS,
    Frame,
    Marker,
    Series,
    bar_chart,
    line_chart,
    number,
    stacked_chart,
)

REPORT_FILE = "report.html"
MAX_BUCKETS = 240
TOP_ORIGINS_CHARTED = 6
TOP_ROWS = 20
STATUS_ORDER = ("2xx", "3xx", "4xx", "5xx", "error", "refused")
_SCRIPT_SAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


class ReportError(Exception):
    """Nothing to report on (no request log)."""


@dataclass(slots=True)
class ReportData:
    start: float
    end: float
    bucket: float
    summary: dict[str, Any]
    xs: list[float] = field(default_factory=list)
    rate: list[float] = field(default_factory=list)
    by_status: dict[str, list[float]] = field(default_factory=dict)
    latency: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    origins: list[tuple[str, float | None, list[tuple[float, float]]]] = field(default_factory=list)
    origin_table: list[tuple[Any, ...]] = field(default_factory=list)
    site_table: list[tuple[Any, ...]] = field(default_factory=list)
    phases: list[tuple[Any, ...]] = field(default_factory=list)
    rebooks: list[tuple[float, float]] = field(default_factory=list)
    rebook_total: tuple[float, float] | None = None
    anomalies: list[dict[str, Any]] = field(default_factory=list)

    @property
    def span(self) -> float:
        return max(self.end - self.start, self.bucket)


def bucket_for(span: float) -> float:
    for step in TIME_STEPS:
        if span / step <= MAX_BUCKETS:
            return float(step)
    return float(TIME_STEPS[-1])


Progress = Callable[[int, int, str], None]
"""``progress(step, steps, what)``: told before each step of a report (``write_report``)."""
STEPS = ("the summary", "requests over time", "origins", "top sites", "rebooks", "anomalies")


def collect(out_dir: Path, progress: Progress | None = None) -> ReportData:
    con = connect(out_dir)
    try:
        return _collect(con, out_dir, progress or _quiet)
    finally:
        con.close()


def _quiet(step: int, steps: int, what: str) -> None:
    return None


def _rows(con: duckdb.DuckDBPyConnection, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in con.execute(sql, list(params)).fetchall()]


def _collect(con: duckdb.DuckDBPyConnection, out_dir: Path, progress: Progress) -> ReportData:
    steps = len(STEPS) + 2  # and rendering, writing
    progress(0, steps, STEPS[0])
    row = con.execute(
        "SELECT count(*), min(epoch(time)), max(epoch(time)), count(DISTINCT site), "
        "count(DISTINCT origin), sum(bytes), count(DISTINCT run), "
        "count(*) FILTER (WHERE status >= 500 OR (status IS NULL AND refusal IS NULL)), "
        "count(*) FILTER (WHERE status IN (429, 503)), count(*) FILTER (WHERE refusal IS NOT "
        "NULL), sum(cost_units + extra_units) FROM requests"
    ).fetchone()
    if row is None or not row[0]:
        raise ReportError(f"{out_dir}: the request log has no rows")
    count, start, end = int(row[0]), float(row[1]), float(row[2])
    bucket = bucket_for(max(end - start, 1.0))
    data = ReportData(
        start=start,
        end=end,
        bucket=bucket,
        summary={
            "requests": count,
            "sites": row[3],
            "origins": row[4],
            "bytes": int(row[5] or 0),
            "runs": row[6],
            "errors": row[7],
            "throttled": row[8],
            "refused": row[9],
            "units": float(row[10] or 0.0),
        },
    )
    for step, work in enumerate((_timeline, _origins, _tables, _rebooks), start=1):
        progress(step, steps, STEPS[step])
        work(con, data)
    progress(len(STEPS) - 1, steps, STEPS[-1])
    data.anomalies = [
        dict(zip(("time", "state", "scope", "name", "signal", "detail"), r, strict=True))
        for r in _rows(
            con, "SELECT time, state, scope, name, signal, detail FROM anomalies ORDER BY time"
        )
    ]
    return data


def _timeline(con: duckdb.DuckDBPyConnection, data: ReportData) -> None:
    b, t0 = data.bucket, data.start
    n = int(data.span // b) + 1
    data.xs = [i * b + b / 2 for i in range(n)]
    rate = [0.0] * n
    statuses: dict[str, list[float]] = {k: [0.0] * n for k in STATUS_ORDER}
    for i, status, requests in _rows(
        con,
        "SELECT CAST(floor((epoch(time) - ?) / ?) AS BIGINT) AS i, status_class, count(*) "
        "FROM requests GROUP BY ALL",
        t0,
        b,
    ):
        index = min(int(i), n - 1)
        rate[index] += requests / b
        statuses.setdefault(status, [0.0] * n)[index] += requests / b
    data.rate, data.by_status = rate, statuses
    latency: dict[str, list[tuple[float, float]]] = {"p50": [], "p90": [], "p99": []}
    for i, p50, p90, p99 in _rows(
        con,
        "SELECT CAST(floor((epoch(time) - ?) / ?) AS BIGINT) AS i, "
        "quantile_cont(total_s, 0.5), quantile_cont(total_s, 0.9), quantile_cont(total_s, 0.99) "
        "FROM requests WHERE status IS NOT NULL AND total_s IS NOT NULL GROUP BY i ORDER BY i",
        t0,
        b,
    ):
        x = int(i) * b + b / 2
        latency["p50"].append((x, p50 * 1000))
        latency["p90"].append((x, p90 * 1000))
        latency["p99"].append((x, p99 * 1000))
    data.latency = latency
    data.phases = _rows(
        con,
        "SELECT phase, count(v), round(quantile_cont(v, 0.5) * 1000, 2), "
        "round(quantile_cont(v, 0.95) * 1000, 2), round(quantile_cont(v, 0.99) * 1000, 2), "
        "round(max(v) * 1000, 2) FROM (UNPIVOT (SELECT dns_s, connect_s, tls_s, first_byte_s, "
        "total_s FROM requests) ON dns_s, connect_s, tls_s, first_byte_s, total_s "
        "INTO NAME phase VALUE v) GROUP BY phase ORDER BY min(CASE phase WHEN 'dns_s' THEN 1 "
        "WHEN 'connect_s' THEN 2 WHEN 'tls_s' THEN 3 WHEN 'first_byte_s' THEN 4 ELSE 5 END)",
    )


def _origins(con: duckdb.DuckDBPyConnection, data: ReportData) -> None:
    b, t0 = data.bucket, data.start
    top = _rows(
        con,
        "SELECT origin, max(origin_budget) FROM requests WHERE origin IS NOT NULL AND refusal "
        "IS NULL GROUP BY origin ORDER BY sum(cost_units + extra_units) DESC, origin LIMIT ?",
        TOP_ORIGINS_CHARTED,
    )
    for origin, budget in top:
        points = [
            (int(i) * b + b / 2, float(units) / b)
            for i, units in _rows(
                con,
                "SELECT CAST(floor((epoch(time) - ?) / ?) AS BIGINT) AS i, "
                "sum(cost_units + extra_units) FROM requests WHERE origin = ? AND refusal IS "
                "NULL GROUP BY i ORDER BY i",
                t0,
                b,
                origin,
            )
        ]
        data.origins.append((origin, budget, _filled(points, data)))
    data.origin_table = _rows(
        con,
        "SELECT origin, count(*) AS requests, count(DISTINCT site) AS sites, "
        "round(sum(cost_units + extra_units), 1) AS units, "
        "round(sum(cost_units + extra_units) / greatest(1.0, epoch(max(time)) - "
        "epoch(min(time))), 3) AS units_per_s, max(origin_budget) AS budget, "
        # GCRA lets an origin have budget x span, plus the request at the span's end: used %
        # is against that, or a crawl at its budget would read as over it.
        "round(sum(cost_units + extra_units) / (max(origin_budget) * (epoch(max(time)) - "
        "epoch(min(time))) + max(cost_units + extra_units)) * 100, 1) AS used_pct, "
        "count(*) FILTER (WHERE status IN (429, 503)) AS throttled, "
        "count(*) FILTER (WHERE status >= 500 OR status IS NULL) AS errors, "
        "round(quantile_cont(total_s, 0.95) * 1000, 1) AS p95_ms "
        "FROM requests WHERE origin IS NOT NULL AND refusal IS NULL GROUP BY origin "
        "ORDER BY units DESC, origin LIMIT ?",
        TOP_ROWS,
    )


def _filled(points: list[tuple[float, float]], data: ReportData) -> list[tuple[float, float]]:
    """Buckets with no request are zero, not a straight line across them."""
    values = dict(points)
    if not points:
        return []
    first, last = int(points[0][0] // data.bucket), int(points[-1][0] // data.bucket)
    xs = [i * data.bucket + data.bucket / 2 for i in range(first, last + 1)]
    return [(x, values.get(x, 0.0)) for x in xs]


def _tables(con: duckdb.DuckDBPyConnection, data: ReportData) -> None:
    data.site_table = _rows(
        con,
        "SELECT site, any_value(origin) AS origin, count(*) AS requests, "
        "round(sum(cost_units + extra_units), 1) AS units, "
        "count(*) FILTER (WHERE status BETWEEN 200 AND 299) AS ok, "
        "count(*) FILTER (WHERE status IN (429, 503)) AS throttled, "
        "count(*) FILTER (WHERE status >= 500 OR (status IS NULL AND refusal IS NULL)) AS errors, "
        "round(quantile_cont(total_s, 0.5) * 1000, 1) AS p50_ms, "
        "round(quantile_cont(total_s, 0.95) * 1000, 1) AS p95_ms "
        "FROM requests GROUP BY site ORDER BY requests DESC, site LIMIT ?",
        TOP_ROWS,
    )


def _rebooks(con: duckdb.DuckDBPyConnection, data: ReportData) -> None:
    exists = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'samples'"
    ).fetchone()
    if not exists or not exists[0]:
        return
    columns = {r[0] for r in _rows(con, "SELECT column_name FROM (DESCRIBE samples)")}
    if not {"time", "slots", "missed_slots"} <= columns:
        return
    samples = _rows(
        con,
        "SELECT time, slots, missed_slots FROM samples WHERE slots IS NOT NULL ORDER BY time",
    )
    previous: tuple[Any, ...] | None = None
    for sample in samples:
        if previous is not None and sample[1] > previous[1]:
            booked = sample[1] - previous[1]
            missed = max(0, sample[2] - previous[2])
            data.rebooks.append((float(sample[0]) - data.start, 100.0 * missed / booked))
        previous = sample
    if samples:
        last = samples[-1]
        data.rebook_total = (float(last[1]), float(last[2]))


# -- rendering -----------------------------------------------------------------------------

STYLE = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;
max-width:960px;color:#222;background:#fafafa}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}
.sub{color:#666;margin:0 0 12px}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:12px 0}
.card{background:#fff;border:1px solid #e3e3e3;border-radius:6px;padding:8px 12px;min-width:110px}
.card b{display:block;font-size:19px}.card span{color:#666;font-size:12px}
svg.chart{background:#fff;border:1px solid #e3e3e3;border-radius:6px;max-width:100%;height:auto}
svg .tick{font-size:11px;fill:#555}svg .unit{font-size:11px;fill:#333}
svg .legend{font-size:11px;fill:#333}
.small{display:grid;grid-template-columns:1fr 1fr;gap:10px}
table{border-collapse:collapse;background:#fff;width:100%;font-size:13px;margin:6px 0}
th,td{border:1px solid #e3e3e3;padding:3px 6px;text-align:right}
th{background:#f0f0f0;cursor:pointer;user-select:none}
td:first-child,th:first-child{text-align:left;max-width:320px;overflow-wrap:anywhere}
.note{color:#666;font-size:12px}.raised{color:#b00}.cleared{color:#070}
"""

SCRIPT = """
document.querySelectorAll('table.sortable').forEach(function (table) {
  table.querySelectorAll('th').forEach(function (th, column) {
    th.addEventListener('click', function () {
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      var down = th.dataset.order !== 'desc';
      th.dataset.order = down ? 'desc' : 'asc';
      rows.sort(function (a, b) {
        var x = a.cells[column].textContent, y = b.cells[column].textContent;
        var nx = parseFloat(x), ny = parseFloat(y);
        var c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
        return down ? -c : c;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
"""


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]], table_id: str) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(_cell(v))}</td>" for v in row) + "</tr>" for row in rows
    )
    return (
        f'<table class="sortable" id="{table_id}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table>"
    )


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _markers(data: ReportData) -> list[Marker]:
    return [
        Marker(
            float(a["time"]) - data.start,
            f"{a['state']}: {a['scope']} {a['name']} {a['signal']} - {a['detail']}",
            "#d62728" if a["state"] == "raised" else "#2ca02c",
        )
        for a in data.anomalies
        if a["state"] == "raised"
    ]


def render(data: ReportData, title: str) -> str:
    s, span, markers = data.summary, data.span, _markers(data)
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(data.start))
    cards = [
        (f"{s['requests']:,}", "requests"),
        (f"{s['requests'] / max(data.end - data.start, 1e-9):.1f}/s", "mean rate"),
        (f"{s['sites']:,}", "sites"),
        (f"{s['origins']:,}", "origins"),
        (number(s["bytes"]) + "B", "body bytes"),
        (f"{s['throttled']:,}", "429/503"),
        (f"{s['errors']:,}", "5xx, no answer"),
        (f"{s['refused']:,}", "refused (SSRF)"),
        (f"{sum(1 for a in data.anomalies if a['state'] == 'raised')}", "anomalies"),
    ]
    if data.rebook_total is not None and data.rebook_total[0]:
        booked, missed = data.rebook_total
        cards.append((f"{missed / booked:.2%}", "rebook rate"))
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        f"<p class='sub'>from {when}, {data.end - data.start:.0f} s; {s['runs']} run(s); "
        f"buckets of {data.bucket:g} s</p>",
        "<div class='cards'>"
        + "".join(
            f"<div class='card'><b>{escape(v)}</b><span>{escape(k)}</span></div>" for v, k in cards
        )
        + "</div>",
        "<h2>Requests per second</h2>",
        line_chart(
            "chart-rate",
            "requests per second",
            [Series("requests/s", list(zip(data.xs, data.rate, strict=True)))],
            start=data.start,
            span=span,
            unit="requests/s",
            markers=markers,
        ),
        "<p class='note'>Red marks: anomalies raised (hover for what and where).</p>",
        "<h2>Status codes over time</h2>",
        stacked_chart(
            "chart-status",
            "status codes over time",
            data.xs,
            [
                (k, data.by_status.get(k, []), STATUS_COLORS.get(k, "#999"))
                for k in STATUS_ORDER
                if k in data.by_status
            ]
            + [(k, v, "#bbb") for k, v in data.by_status.items() if k not in STATUS_ORDER],
            start=data.start,
            span=span,
            unit="requests/s",
            markers=markers,
        ),
        "<h2>Cost units per second against budget, busiest origins</h2>",
        "<div class='small'>",
    ]
    small = Frame(width=455, height=200, left=48, top=28)
    for i, (origin, budget, points) in enumerate(data.origins):
        series = [Series(origin, points)]
        if budget:
            series.append(Series("budget", [(0.0, budget), (span, budget)], "#d62728", True))
        parts.append(
            line_chart(
                f"chart-origin-{i}",
                f"units per second of {origin}",
                series,
                start=data.start,
                span=span,
                unit="cost units/s",
                markers=[m for m in markers if origin in m.label],
                frame=small,
            )
        )
    parts.append("</div>")
    parts.append(
        _table(
            [
                "origin",
                "requests",
                "sites",
                "units",
                "units/s",
                "budget",
                "used %",
                "429/503",
                "errors",
                "p95 ms",
            ],
            data.origin_table,
            "table-origins",
        )
    )
    parts += [
        "<h2>Latency percentiles</h2>",
        line_chart(
            "chart-latency",
            "latency percentiles",
            [Series(name, points) for name, points in data.latency.items()],
            start=data.start,
            span=span,
            unit="total ms (p50, p90, p99)",
            markers=markers,
        ),
        _table(["phase", "n", "p50 ms", "p95 ms", "p99 ms", "max ms"], data.phases, "phases"),
        "<p class='note'>dns: the guard's resolution; connect: TCP; tls: the handshake; "
        "first_byte: request sent to response headers; total: all of it.</p>",
        "<h2>Rebook rate</h2>",
    ]
    if data.rebooks:
        parts.append(
            line_chart(
                "chart-rebooks",
                "rebook rate",
                [Series("missed slots per booking, %", data.rebooks, "#9467bd")],
                start=data.start,
                span=span,
                unit="% of bookings",
                markers=markers,
            )
        )
    else:
        parts.append("<p class='note'>No samples of the crawl's booking counters.</p>")
    parts += [
        "<h2>Top sites</h2>",
        bar_chart(
            "chart-sites",
            "requests per site",
            [(str(r[0]), float(r[2])) for r in data.site_table[:15]],
            unit="requests",
        ),
        _table(
            [
                "site",
                "origin",
                "requests",
                "units",
                "2xx",
                "429/503",
                "errors",
                "p50 ms",
                "p95 ms",
            ],
            data.site_table,
            "table-sites",
        ),
        "<h2>Anomalies</h2>",
    ]
    if data.anomalies:
        parts.append(
            _table(
                ["time (UTC)", "state", "scope", "name", "signal", "detail"],
                [
                    (
                        time.strftime("%H:%M:%S", time.gmtime(float(a["time"]))),
                        a["state"],
                        a["scope"],
                        a["name"],
                        a["signal"],
                        a["detail"],
                    )
                    for a in data.anomalies
                ],
                "table-anomalies",
            )
        )
    else:
        parts.append("<p class='note'>None raised.</p>")
    summary = script_json({"summary": s, "bucket_s": data.bucket})
    parts.append(f"<script type='application/json' id='report-data'>{summary}</script>")
    parts.append(f"<script>{SCRIPT}</script></body></html>")
    return "\n".join(parts)


def script_json(value: object) -> str:
    """``value`` as JSON to embed in a ``<script>`` element: still JSON (HTML entities would
    not be, since a script's text is never unescaped), with ``<``, ``>`` and ``&`` written as
    ``\\u003c``, ``\\u003e`` and ``\\u0026`` (inside strings, the only place JSON has them), so
    no ``</script>`` or ``<!--`` in the data can end or bend the element."""
    return json.dumps(value, default=str).translate(_SCRIPT_SAFE)


def write_report(
    out_dir: Path,
    path: Path | None = None,
    title: str | None = None,
    progress: Progress | None = None,
) -> Path:
    """Write the report of ``out_dir`` (default ``OUT/report.html``); returns its path.
    ``progress`` is told before each step (``Progress``)."""
    tell = progress or _quiet
    data = collect(out_dir, tell)
    steps = len(STEPS) + 2
    target = path or out_dir / REPORT_FILE
    name = title or f"Courtier crawl report: {out_dir.resolve().name}"
    tell(steps - 2, steps, "charts")
    page = render(data, name)
    tell(steps - 1, steps, "writing")
    target.write_text(page, encoding="utf-8")
    tell(steps, steps, "done")
    return target
