"""``Observation`` as the engine's observer: every event a row, counted, judged and written."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path

import pyarrow.parquet as pq
from observe_helpers import T0, event, scrape, total
from prometheus_client import CollectorRegistry

from courtier.observe import Anomaly, CrawlSample, Observation, ObserveSettings
from courtier.observe.probe import stats_probe
from courtier.pipeline.stats import CrawlStats

SETTINGS = ObserveSettings(
    metrics_port=0, live=False, flush_seconds=0.2, sample_seconds=0.1, stats_seconds=0.2
)


def observation(out: Path, **kw: object) -> Observation:
    settings = replace(SETTINGS, **{k: v for k, v in kw.items() if hasattr(SETTINGS, k)})
    extra = {k: v for k, v in kw.items() if not hasattr(SETTINGS, k)}
    return Observation(out, settings, registry=CollectorRegistry(), **extra)  # type: ignore[arg-type]


def log_rows(out: Path) -> int:
    return sum(pq.read_metadata(p).num_rows for p in (out / "requests").glob("*.parquet"))


async def test_every_event_is_a_row_a_count_and_a_file_line(tmp_path: Path):
    async with observation(tmp_path) as obs:
        for i in range(50):
            obs.request(event(f"s{i % 5}.test", T0 + i * 0.1, status=200 if i % 10 else 404))
        obs.request(event("bad.test", T0 + 6, refusal="loopback"))
        obs.request(event("down.test", T0 + 6, status=503, retry_after="30", origin="o9"))
        await obs.flush()
        assert log_rows(tmp_path) == 52
        metrics = await scrape(obs.metrics_port or 0)
        assert total(metrics, "courtier_requests_total") == 52
        assert total(metrics, "courtier_requests_total", status_class="4xx") == 5
        assert total(metrics, "courtier_ssrf_refusals_total", reason="loopback") == 1
        assert total(metrics, "courtier_request_log_rows_total") == 52
        assert total(metrics, "courtier_anomalies_total", scope="site", signal="throttled") == 1
        assert total(metrics, "courtier_anomalies_active", scope="origin") == 1
    anomalies = [
        json.loads(line) for line in (tmp_path / "anomalies.jsonl").read_text().splitlines()
    ]
    assert {(a["scope"], a["name"], a["signal"]) for a in anomalies} == {
        ("site", "down.test", "throttled"),
        ("origin", "o9", "throttled"),
    }
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["observer"]["rows_written"] == 52
    assert stats["observer"]["anomalies_raised"] == 2
    assert obs.metrics_port is None  # the server stops with the observation


async def test_rows_are_readable_while_the_crawl_runs(tmp_path: Path):
    async with observation(tmp_path) as obs:
        for i in range(10):
            obs.request(event(at=T0 + i))
        for _ in range(50):  # flushed by time alone, within flush_seconds and a tick
            await asyncio.sleep(0.1)
            if log_rows(tmp_path) == 10:
                break
        assert log_rows(tmp_path) == 10
        obs.request(event(at=T0 + 11))
    assert log_rows(tmp_path) == 11  # and complete after the stop


async def test_samples_feed_gauges_counters_and_samples_jsonl(tmp_path: Path):
    stats = CrawlStats(slots=10, missed_slots=1, lead_refusals=2, gate_holds=5, seed_sites=3)
    stats.bait_links["private"] += 4
    stats.renders["timeout"] += 2
    stats.render_requests["aborted:third-party"] += 3
    stats.hook_errors["hook-timeout"] += 6
    stats.formats["pdf-error"] += 1

    def probe() -> CrawlSample:
        return CrawlSample(T0, stats_probe(stats)().stats, {"pages": 7}, {"pages": 12}, {"idle": 3})

    obs = observation(tmp_path)
    obs.watch(probe)
    async with obs:
        await asyncio.sleep(0.35)
        await obs.flush()
        metrics = await scrape(obs.metrics_port or 0)
        assert total(metrics, "courtier_bookings_total") == 10
        assert total(metrics, "courtier_rebooks_total") == 1
        assert total(metrics, "courtier_booking_refusals_total", reason="lead") == 2
        assert total(metrics, "courtier_booking_refusals_total", reason="gate") == 5
        assert total(metrics, "courtier_blocked_links_total", reason="private") == 4
        assert total(metrics, "courtier_renders_total", outcome="timeout") == 2
        assert total(metrics, "courtier_render_requests_total", outcome="aborted:third-party") == 3
        assert total(metrics, "courtier_parse_hook_errors_total", kind="hook-timeout") == 6
        assert total(metrics, "courtier_documents_read_total", format="pdf-error") == 1
        assert total(metrics, "courtier_in_flight_requests", scheduler="pages") == 7
        assert total(metrics, "courtier_queue_depth", queue="pages") == 12
        assert total(metrics, "courtier_lanes", phase="idle") == 3
        assert total(metrics, "courtier_event_loop_lag_seconds_count") >= 1
    lines = [json.loads(line) for line in (tmp_path / "samples.jsonl").read_text().splitlines()]
    assert lines and lines[-1]["slots"] == 10 and lines[-1]["in_flight"] == {"pages": 7}
    assert json.loads((tmp_path / "stats.json").read_text())["crawl"]["slots"] == 10
    [own] = tmp_path.glob("stats-*.json")  # noqa: ASYNC240 (the worker's own file)
    assert json.loads(own.read_text())["crawl"]["slots"] == 10


async def test_the_slow_down_hook_runs_on_the_event_loop(tmp_path: Path):
    loop = asyncio.get_running_loop()
    heard: list[tuple[Anomaly, bool]] = []

    def slow_down(anomaly: Anomaly) -> None:
        heard.append((anomaly, asyncio.get_running_loop() is loop))

    async with observation(tmp_path, anomaly_slowdown=True, slow_down=slow_down) as obs:
        obs.request(event("down.test", T0, status=429, retry_after="60", origin="o2"))
        await obs.flush()
        await asyncio.sleep(0)
    assert [(a.scope, a.name) for a, _ in heard] == [("site", "down.test"), ("origin", "o2")]
    assert all(on_loop for _a, on_loop in heard)


async def test_without_slowdown_the_hook_is_not_called(tmp_path: Path):
    heard: list[Anomaly] = []
    async with observation(tmp_path, slow_down=heard.append) as obs:
        obs.request(event("down.test", T0, status=429, retry_after="60"))
        await obs.flush()
    assert heard == []


async def test_no_request_log_when_switched_off(tmp_path: Path):
    async with observation(tmp_path, request_log=False, metrics_port=None) as obs:
        obs.request(event())
        await obs.flush()
        assert obs.metrics_port is None
    assert not (tmp_path / "requests").exists()
    assert json.loads((tmp_path / "stats.json").read_text())["observer"]["requests"] == 1


async def test_a_broken_probe_never_breaks_the_crawl(tmp_path: Path, caplog):
    def probe() -> CrawlSample:
        raise RuntimeError("engine not wired yet")

    obs = observation(tmp_path)
    obs.watch(probe)
    async with obs:
        await asyncio.sleep(0.25)
    assert "the crawl probe failed" in caplog.text
