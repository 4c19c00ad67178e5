"""``report.html`` in headless Chromium: it loads without a console error, every chart holds
data, and a screenshot is kept as a test artifact."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path

import pytest
from observe_browser import chromium, visit
from observe_run import make_run

from courtier.observe.report import write_report

CHECK = """
JSON.stringify(Array.from(document.querySelectorAll('svg.chart')).map(function (svg) {
  var paths = Array.from(svg.querySelectorAll('path.series'));
  return {id: svg.id, points: Number(svg.dataset.points), series: paths.length,
          drawn: paths.filter(function (p) { return p.getTotalLength() > 0; }).length,
          width: svg.getBoundingClientRect().width};
}))
"""


def keep_artifact(screenshot: Path) -> None:
    """Copy the screenshot to ``$COURTIER_TEST_ARTIFACTS`` when set (it stays in the test's
    temporary directory anyway)."""
    keep = os.environ.get("COURTIER_TEST_ARTIFACTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(screenshot, Path(keep) / "report.png")


@pytest.mark.skipif(chromium() is None, reason="Debian's chromium is not installed")
async def test_the_report_loads_without_errors_and_its_charts_hold_data(tmp_path: Path):
    run = make_run(tmp_path / "run")
    report = write_report(run)
    screenshot = tmp_path / "report.png"
    binary = chromium()
    assert binary is not None
    page = await visit(binary, report.as_uri(), CHECK, screenshot, tmp_path / "profile")
    await asyncio.to_thread(keep_artifact, screenshot)
    print(f"report screenshot: {screenshot}")
    assert page.errors == []
    charts = json.loads(page.value)
    assert len(charts) >= 8
    for chart in charts:
        assert chart["points"] > 0, chart
        assert chart["series"] >= 1 and chart["drawn"] >= 1, chart
        assert chart["width"] > 100, chart
    assert screenshot.stat().st_size > 20_000
    assert screenshot.read_bytes().startswith(b"\x89PNG")
