"""``courtier report``: one self-contained page whose charts hold the run's data."""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from observe_run import make_run

from courtier.cli import report as report_cli
from courtier.inputs import InputError
from courtier.observe.report import ReportError, collect, render, write_report

CHARTS = (
    "chart-rate",
    "chart-status",
    "chart-origin-0",
    "chart-latency",
    "chart-rebooks",
    "chart-sites",
)


class Page(HTMLParser):
    """What the tests read of a report: charts, series, markers, tables, what it would fetch,
    and the text of each ``<script type="application/json">`` by its id."""

    def __init__(self) -> None:
        super().__init__()
        self.charts: dict[str, int] = {}
        self.series: dict[str, int] = {}
        self.open_svg: str | None = None
        self.markers = 0
        self.external: list[str] = []
        self.tables: list[str] = []
        self.json_blocks: dict[str, str] = {}
        self.open_json: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "svg":
            self.open_svg = a.get("id") or "?"
            self.charts[self.open_svg] = int(a.get("data-points") or 0)
        if tag == "path" and "series" in (a.get("class") or "") and self.open_svg:
            self.series[self.open_svg] = self.series.get(self.open_svg, 0) + 1
        if tag == "g" and a.get("class") == "marker":
            self.markers += 1
        if tag == "table":
            self.tables.append(a.get("id") or "")
        if tag == "script" and a.get("type") == "application/json":
            self.open_json = a.get("id") or "?"
            self.json_blocks[self.open_json] = ""
        for name in ("src", "href"):
            if a.get(name):
                self.external.append(f"{tag} {name}={a[name]}")

    def handle_data(self, data: str) -> None:
        if self.open_json is not None:
            self.json_blocks[self.open_json] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "svg":
            self.open_svg = None
        if tag == "script":
            self.open_json = None


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_run(tmp_path_factory.mktemp("run"))


def test_the_report_is_one_page_with_charts_that_hold_data(run: Path):
    path = write_report(run)
    assert path == run / "report.html"
    html = path.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>")
    page = Page()
    page.feed(html)
    for chart in CHARTS:
        assert page.charts.get(chart, 0) > 0, chart
        assert page.series.get(chart, 0) >= 1, chart
    assert sum(1 for c in page.charts if c.startswith("chart-origin-")) == 3
    assert page.markers >= 2  # anomalies on the time axis
    assert page.external == []  # self-contained: nothing to fetch
    assert not re.search(r"url\(|@import|<link", html)
    assert {"table-origins", "table-sites", "table-anomalies", "phases"} <= set(page.tables)


def test_the_report_figures_match_the_run(run: Path):
    data = collect(run)
    assert data.summary["requests"] == 900 + 15
    assert data.summary["refused"] == 15 and data.summary["throttled"] == 10
    assert data.bucket == 2.0  # 300 s in at most 240 buckets
    assert max(data.rate) == pytest.approx(3.0 + 0.5)  # 3 requests a second, a refusal in 20 s
    assert min(data.rate[:-1]) == pytest.approx(3.0)
    assert [o[0] for o in data.origins] == ["alpha", "beta", "gamma"]
    assert data.origins[0][1] == 2.0  # the budget drawn with it
    assert data.rebook_total == (900.0, 15.0)
    assert any(a["name"] == "gamma-1.test" or a["name"] == "gamma" for a in data.anomalies)
    assert {a["signal"] for a in data.anomalies} >= {"throttled", "latency"}


def test_the_embedded_data_is_json_and_cannot_end_its_script(run: Path):
    data = collect(run)
    page = Page()
    page.feed(write_report(run).read_text(encoding="utf-8"))
    embedded = json.loads(page.json_blocks["report-data"])
    assert embedded["summary"] == data.summary and embedded["bucket_s"] == data.bucket

    hostile = "</script><script>alert(1)</script> <!-- & &amp; \u2028"
    html = render(dataclasses.replace(data, summary={**data.summary, "note": hostile}), "t")
    assert html.count("</script>") == 2  # the data block's own end and the sorting script's
    page = Page()
    page.feed(html)
    assert json.loads(page.json_blocks["report-data"])["summary"]["note"] == hostile


def test_the_cli_writes_the_report_or_says_why_not(run: Path, tmp_path: Path, capsys):
    parser = argparse.ArgumentParser()
    report_cli.register(parser.add_subparsers())
    target = tmp_path / "elsewhere.html"
    args = parser.parse_args(["report", "--out", str(run), "--output", str(target)])
    assert args.handler(args) == 0
    assert capsys.readouterr().out.strip() == str(target) and target.exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    args = parser.parse_args(["report", "--out", str(empty)])
    with pytest.raises(InputError, match="no rows"):
        args.handler(args)
    with pytest.raises(ReportError):
        collect(empty)


def test_an_origin_paced_at_its_budget_reads_as_used_in_full_not_over(tmp_path: Path) -> None:
    """Ten requests of 4 units on an origin of 2 units/s, 2 s apart (GCRA at its budget):
    40 units in 18 s is what the budget allows (2 x 18 + the last request's 4), 100%, not
    the 111% that 40 / (2 x 18) read."""
    from observe_helpers import T0, event

    from courtier.observe.requestlog import RequestLogWriter
    from courtier.observe.rows import RowMaker
    from courtier.observe.settings import ObserveSettings
    from courtier.politeness.keys import CostModel

    maker = RowMaker(CostModel(), lambda key: 2.0)
    log = RequestLogWriter(tmp_path, ObserveSettings(), run="r", worker="w", clock=lambda: T0)
    for n in range(10):
        log.add(maker.row_of(event(at=T0 + 2 * n, path="/list/1", cost=4.0, origin="o1")))
    log.close()
    [row] = [r for r in collect(tmp_path).origin_table if r[0] == "o1"]
    assert row[6] == 100.0, row
