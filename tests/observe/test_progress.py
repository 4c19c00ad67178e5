"""Progress of a long run: the busiest origins against their budgets, a live view on a
terminal, a log line with structured fields every N seconds elsewhere; and the settings'
checks."""

from __future__ import annotations

import asyncio
import io
import json
import logging

import pytest
from observe_helpers import T0, event
from rich.console import Console

from courtier.observe.probe import CrawlSample
from courtier.observe.progress import Loads, ProgressReporter, live_table
from courtier.observe.rows import RowMaker
from courtier.observe.settings import ObserveSettings
from courtier.politeness.keys import CostModel

BUDGETS = {"busy": 2.0, "quiet": 4.0}
MAKER = RowMaker(CostModel(), lambda key: 2.0)


def loads() -> Loads:
    loads = Loads(lambda origin: BUDGETS.get(origin or ""))
    for second in range(30):
        for i in range(4):  # 4 detail pages (2 units each) a second: 8 units/s, over budget
            loads.add(MAKER.row_of(event("b.test", T0 + second + i / 4, origin="busy")))
        loads.add(MAKER.row_of(event("q.test", T0 + second, origin="quiet")))
    for i in range(11):
        stats = {"slots": 100 * i, "missed_slots": i // 2}
        loads.sampled(CrawlSample(T0 + i, stats, {"pages": 5}, {"pages": 40}))
    return loads


def test_the_view_ranks_origins_by_their_use_of_the_budget():
    view = loads().view(T0 + 30.5, rows=150, anomalies=1)
    assert view.requests == 150 and view.rate == pytest.approx(5.0)
    assert [load.origin for load in view.busiest] == ["busy", "quiet"]
    busy = view.busiest[0]
    assert busy.units_per_s == pytest.approx(8.0) and busy.utilisation == pytest.approx(4.0)
    assert view.in_flight == 5 and view.queues == {"pages": 40}
    assert view.rebook_rate == pytest.approx(5 / 1000)
    line = view.line()
    assert "150 requests" in line and "busy 8.00/2.00" in line and "rebook rate 0.50%" in line


def test_the_live_view_shows_origins_against_budgets():
    console = Console(record=True, width=120, force_terminal=True)
    console.print(live_table(loads().view(T0 + 30.5, rows=150, anomalies=0)))
    text = console.export_text()
    assert "busiest origins" in text and "busy" in text and "400%" in text


async def test_without_a_terminal_progress_is_a_log_line(caplog):
    view = loads().view(T0 + 30.5, rows=150, anomalies=0)
    reporter = ProgressReporter(lambda: view, Console(file=io.StringIO()), live=True, every=0.05)
    assert not reporter.live  # not a terminal
    caplog.set_level(logging.INFO, "courtier.observe.progress")
    task = asyncio.create_task(reporter.run())
    records: list[logging.LogRecord] = []
    for _ in range(100):  # the first line comes after one period (0.05 s); a loaded host waits
        await asyncio.sleep(0.05)
        records = [r for r in caplog.records if r.name == "courtier.observe.progress"]
        if records:
            break
    task.cancel()
    assert records and "150 requests" in records[0].getMessage()
    fields = records[0].fields  # type: ignore[attr-defined]  # for a JSON log formatter
    data = json.loads(json.dumps(fields))
    assert data["requests"] == 150 and data["busiest"][0]["origin"] == "busy"


def test_settings_refuse_nonsense():
    ObserveSettings()  # the defaults hold
    for bad in (
        {"flush_seconds": 0.0},
        {"flush_seconds": 600.0},  # longer than a file may stay open
        {"rotate_rows": 0},
        {"compression": "bzip2"},
        {"metrics_port": 70000},
        {"anomaly_persist": 0},
        {"anomaly_band": float("nan")},
    ):
        with pytest.raises(ValueError):
            ObserveSettings(**bad)  # type: ignore[arg-type]
