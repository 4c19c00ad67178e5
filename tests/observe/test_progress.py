"""Progress of a long run: the busiest origins against what their GCRA allows, a live view on
a terminal (elapsed and remaining time, pages, the frontier), a log line with structured
fields every N seconds elsewhere; and the settings' checks."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
import logging
import random

import pytest
from observe_helpers import T0, event
from rich.console import Console

from courtier.observe.probe import CrawlSample
from courtier.observe.progress import (
    RECENT,
    Loads,
    OriginLoad,
    ProgressReporter,
    clock_text,
    gcra_bound,
    live_table,
    share_text,
)
from courtier.observe.rows import RequestRow, RowMaker
from courtier.observe.settings import ObserveSettings
from courtier.politeness.gcra import KeyParams, Limit, Slot, book
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
        frontier = {"queued": 900, "leased": 40, "done": 150 + i, "failed": 2}
        sample = CrawlSample(T0 + i, stats, {"pages": 5}, {"pages": 40}, frontier=frontier)
        loads.sampled(dataclasses.replace(sample, duration=60.0))
    return loads


def test_the_view_ranks_origins_by_their_use_of_the_budget():
    view = loads().view(T0 + 30.5, rows=150, anomalies=1)
    assert view.requests == 150 and view.rate == pytest.approx(5.0)
    assert [load.origin for load in view.busiest] == ["busy", "quiet"]
    busy = view.busiest[0]
    assert busy.units_per_s == pytest.approx(8.0) and busy.utilisation == pytest.approx(4.0)
    assert view.in_flight == 5 and view.queues == {"pages": 40}
    assert view.rebook_rate == pytest.approx(5 / 1000)
    # 80 units in 10 s where GCRA allows 2 x (10 + 0.25) + 2 (one request at the edge)
    assert busy.allowed == pytest.approx(22.5) and busy.share == pytest.approx(80 / 22.5)
    line = view.line()
    assert "150 requests" in line and "busy 356% of 22.5" in line and "rebook rate 0.50%" in line
    assert "150 pages" in line and "frontier queued 900, leased 40, done 160 (failed 2)" in line


def test_the_view_counts_time_from_the_start_and_what_the_duration_leaves():
    view = loads().view(T0 + 30.5, rows=150, anomalies=0, started=T0 - 5.0)
    assert view.elapsed == pytest.approx(35.5) and view.remaining == pytest.approx(24.5)
    assert view.line().startswith("elapsed 0:35, remaining 0:24;")
    fields = view.fields()
    assert fields["remaining_s"] == 24.5 and fields["pages"] == 150
    assert fields["frontier"]["queued"] == 900
    assert fields["busiest"][0]["share"] == pytest.approx(80 / 22.5, abs=1e-4)
    assert clock_text(3725) == "1:02:05" and clock_text(65) == "1:05"


def test_the_live_view_shows_time_pages_frontier_and_origins_against_their_bound():
    console = Console(record=True, width=160, force_terminal=True)
    console.print(live_table(loads().view(T0 + 30.5, rows=150, anomalies=0, started=T0)))
    text = console.export_text()
    assert "busiest origins" in text and "busy" in text and "356%" in text
    assert "elapsed 0:30, remaining 0:29" in text and "pages 150" in text
    assert "frontier queued 900, leased 40, done 160" in text
    assert "a polite origin stays <= 100%" in " ".join(text.split())


def test_an_origin_at_its_burst_bound_shows_100_percent_not_more():
    # 2 units/s with 1.5 s of burst: in 10 s GCRA lets 2 x (10 + 1.5 + 0.25) + 4 units start.
    allowed = gcra_bound(2.0, RECENT, 1.5 + 0.25, 4.0)
    assert allowed == pytest.approx(27.5)
    at_bound = OriginLoad("o", units_per_s=allowed / RECENT, budget=2.0, allowed=allowed)
    assert share_text(at_bound) == "100% of 27.5"
    # what the view used to show as 2.75/2.00 (a "violation") is the origin at its bound
    assert at_bound.utilisation == pytest.approx(1.375) and at_bound.share == pytest.approx(1.0)
    assert share_text(OriginLoad("o", 1.0, None)) == "-"


PAGES = (  # (path, content type): an image, a detail page, an index page
    ("/a.png", "image/png"),
    ("/item/1", "text/html"),
    ("/", "text/html"),
)


def _gcra_rows(rng: random.Random, params: KeyParams, seconds: float) -> list[RequestRow]:
    """Requests of one origin booked as fast as its key allows: demand never ends, costs
    vary (each booked for its full cost: no late charge), each starts anywhere inside its
    slot, and now and then the origin is idle for a while."""
    limit = Limit("origin:o", params)
    tats: dict[str, float] = {}
    now, rows = T0 + 0.7, []
    while now < T0 + seconds:
        path, kind = rng.choice(PAGES)
        units = MAKER.row_of(event("o.test", now, origin="o", path=path, content_type=kind)).units
        slot, tats_after = book(tats, now, (limit,), units)
        assert isinstance(slot, Slot)
        tats.update(tats_after)
        start = rng.uniform(slot.start, slot.deadline)
        row = MAKER.row_of(
            event("o.test", start, origin="o", path=path, content_type=kind, cost=units)
        )
        assert row.units == units
        rows.append(row)
        now = start + (rng.uniform(2.0, 6.0) if rng.random() < 0.02 else 0.0)
    return rows


@pytest.mark.parametrize("burst", [0.0, 1.5, 6.0])
def test_an_origin_booked_by_gcra_never_shows_over_100_percent(burst: float):
    rng = random.Random(burst)
    params = KeyParams.from_rate(2.0, burst)
    loads = Loads(lambda origin: 2.0, lambda origin: burst + params.slot_width)
    shares: list[float] = []
    for row in sorted(_gcra_rows(rng, params, 120), key=lambda row: row.time):
        loads.add(row)
        if row.time > T0 + RECENT + 1:
            busiest = loads.view(row.time, rows=0, anomalies=0).busiest
            assert busiest and busiest[0].share is not None
            shares.append(busiest[0].share)
    assert max(shares) <= 1.0
    # and a saturated origin shows at least what its rate alone takes of the bound
    steady = 2.0 * RECENT / gcra_bound(2.0, RECENT, burst + params.slot_width, 4.0)
    assert max(shares) >= steady


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
    assert data["frontier"]["done"] == 160 and data["busiest"][0]["allowed"] == 22.5


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
