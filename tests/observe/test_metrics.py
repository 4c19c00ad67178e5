"""Prometheus metrics: named by the conventions, low cardinality, and what the dashboard uses."""

from __future__ import annotations

import json
import os
import platform
import re
from pathlib import Path

import pytest
from observe_helpers import T0, event
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

import courtier
from courtier.observe.anomaly import Anomaly
from courtier.observe.metrics import CrawlMetrics
from courtier.observe.output_metrics import ChildrenCpu, descendants_cpu
from courtier.observe.probe import CrawlSample, stats_probe
from courtier.observe.rows import RowMaker
from courtier.pipeline.stats import CrawlStats
from courtier.politeness.keys import CostModel

DASHBOARD = Path(__file__).resolve().parents[2] / "dashboards" / "grafana-courtier.json"
ALLOWED_LABELS = {
    "kind",
    "lane",
    "status_class",
    "key_type",
    "reason",
    "error",
    "verdict",
    "scope",
    "signal",
    "phase",
    "scheduler",
    "queue",
    "cause",
    "le",
    "outcome",
    "format",
    "type",
    "state",
    "version",
    "python",
}
SITES = [f"site-{i}.test" for i in range(300)]
ORIGINS = [f"org-{i}" for i in range(50)]


def busy_metrics() -> CrawlMetrics:
    metrics = CrawlMetrics(CollectorRegistry())
    maker = RowMaker(CostModel(), lambda key: 2.0)
    for i, site in enumerate(SITES):
        status = (200, 301, 404, 429, 503, None)[i % 6]
        origin = ORIGINS[i % 50]
        metrics.record(maker.row_of(event(site, T0 + i, status=status, origin=origin)))
        metrics.record(maker.row_of(event(site, T0 + i, refusal="private")))
        metrics.record(
            maker.row_of(
                event(site, T0 + i, kind="media", keys=(f"cdn:{site}",), headers=(("Age", "3"),))
            )
        )
    metrics.record(maker.row_of(event(SITES[0], T0, origin="moved")))  # an origin change
    stats = CrawlStats(slots=5, missed_slots=1)
    stats.latency_slowdowns["origin"] += 2
    stats.origin_backoffs["origin-paused"] += 1
    stats.bait_links["loopback"] += 3
    stats.renders.update({"rendered": 4, "timeout": 1})
    stats.render_requests["fetched"] += 7
    stats.hook_errors["hook-error"] += 2
    stats.formats.update({"pdf": 3, "pdf-error": 1})
    stats.warc_records.update({"response": 40, "revisit": 2})
    stats.warc_bytes, stats.warc_errors = 123_456, 1
    stats.documents.update({"page": 30, "pdf": 3, "media": 9})
    probe = stats_probe(stats)
    sample = probe()
    frontier = {"queued": 70, "leased": 5, "done": 42, "refused": 1, "failed": 2}
    metrics.sampled(
        CrawlSample(
            sample.at, sample.stats, {"pages": 3}, {"pages": 9}, {"idle": 2}, 0.004, frontier
        )
    )
    metrics.anomaly(
        Anomaly(T0, "site", SITES[0], "latency", "raised", 1.0, 0.1, 0.2, 10, ORIGINS[0])
    )
    metrics.redacted("api-key", 2)
    metrics.written(900, 2)
    return metrics


def families(metrics: CrawlMetrics):
    return list(text_string_to_metric_families(generate_latest(metrics.registry).decode()))


def test_no_metric_carries_a_host_site_or_origin():
    for family in families(busy_metrics()):
        for sample in family.samples:
            assert set(sample.labels) <= ALLOWED_LABELS, (sample.name, sample.labels)
            for value in sample.labels.values():
                assert value not in SITES and value not in ORIGINS, (sample.name, value)
                assert ".test" not in value, (sample.name, value)


def test_series_stay_few_however_many_sites_there_are():
    series = sum(len(f.samples) for f in families(busy_metrics()))
    assert series < 600  # 300 sites, 50 origins: the count depends on neither


def test_names_follow_the_conventions():
    for family in families(busy_metrics()):
        # process_*: prometheus-client's own (ProcessCollector), named as every exporter does
        assert family.name.startswith(("courtier_", "process_")), family.name
        if family.type == "counter":
            assert all(s.name.endswith(("_total", "_created")) for s in family.samples), family.name
        if family.type == "histogram":
            assert family.name.endswith("_seconds"), family.name
        assert not re.search(r"_(ms|milliseconds|kb|mb)(_|$)", family.name)


def test_counts_follow_the_rows():
    exposed = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in families(busy_metrics())
        for s in f.samples
    }

    def value(name: str, **labels: str) -> float:
        return sum(
            v
            for (n, found), v in exposed.items()
            if n == name and all((k, x) in found for k, x in labels.items())
        )

    assert value("courtier_requests_total") == 3 * len(SITES) + 1
    assert value("courtier_requests_total", status_class="refused") == len(SITES)
    assert value("courtier_ssrf_refusals_total", reason="private") == len(SITES)
    assert value("courtier_cache_verdicts_total", verdict="hit") == len(SITES)
    assert value("courtier_requests_total", kind="media", lane="media") == len(SITES)
    assert value("courtier_fetch_errors_total", error="ClientConnectorError") == 50
    assert value("courtier_origin_changes_total") == 1
    assert value("courtier_bookings_total") == 5 and value("courtier_rebooks_total") == 1
    assert value("courtier_latency_slowdowns_total", key_type="origin") == 2
    assert value("courtier_in_flight_requests", scheduler="pages") == 3
    assert value("courtier_anomalies_active", scope="site", signal="latency") == 1
    assert value("courtier_redactions_total", kind="api-key") == 2
    assert value("courtier_request_log_rows_total") == 900
    assert value("courtier_warc_records_total", type="response") == 40
    assert value("courtier_warc_bytes_total") == 123_456
    assert value("courtier_warc_errors_total") == 1
    assert value("courtier_documents_total", kind="pdf") == 3
    assert value("courtier_documents_total") == 42
    assert value("courtier_frontier_urls", state="queued") == 70
    assert value("courtier_frontier_urls", state="done") == 42
    assert value("courtier_renders_total", outcome="timeout") == 1
    assert value("courtier_build_info") == 1
    answered = len(SITES) - len(SITES) // 6  # every sixth page got no answer
    assert value("courtier_request_duration_seconds_count", phase="first_byte") == (
        answered + len(SITES) + 1
    )


def test_the_process_is_measured_on_the_crawls_own_registry():
    exposed = {s.name: s for f in families(busy_metrics()) for s in f.samples}
    for name in (
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "process_open_fds",
        "courtier_child_cpu_seconds_total",
    ):
        assert name in exposed, name
    info = exposed["courtier_build_info"]
    assert info.labels["version"] == courtier.__version__
    assert info.labels["python"] == platform.python_version()


def test_children_cpu_counts_descendants_and_never_goes_down(tmp_path: Path):
    def stat(pid: int, parent: int, user: int, system: int) -> None:
        (tmp_path / str(pid)).mkdir()
        fields = ["S", str(parent)] + ["0"] * 9 + [str(user), str(system), "0", "0"]
        (tmp_path / str(pid) / "stat").write_text(f"{pid} (a (b) c) " + " ".join(fields))

    stat(10, 1, 5, 5)  # the crawl
    stat(11, 10, 100, 50)  # a parse worker
    stat(12, 11, 300, 0)  # a browser under it
    stat(13, 1, 999, 999)  # not ours
    ticks = os.sysconf("SC_CLK_TCK")
    assert descendants_cpu(10, str(tmp_path)) == pytest.approx(450 / ticks)
    assert descendants_cpu(10, str(tmp_path / "none")) is None
    collector = ChildrenCpu(10, str(tmp_path))
    first = next(iter(collector.collect())).samples[0].value
    (tmp_path / "12" / "stat").unlink()  # ended, not waited for yet
    second = next(iter(collector.collect())).samples[0].value
    assert second == first >= 450 / ticks


def test_the_dashboard_uses_only_metrics_that_exist():
    dashboard = json.loads(DASHBOARD.read_text())
    exposed = {s.name for f in families(busy_metrics()) for s in f.samples}
    used: set[str] = set()
    panels = [p for p in dashboard["panels"] if p["type"] != "row"]
    assert len(panels) >= 20
    for panel in panels:
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            used |= set(re.findall(r"\b(?:courtier|process)_[a-z_]+", target["expr"]))
            assert 'instance=~"$instance"' in target["expr"]
    assert used, "the dashboard queries nothing"
    assert used <= exposed, sorted(used - exposed)
    for name in (
        "courtier_rebooks_total",
        "courtier_slot_lateness_seconds_bucket",
        "courtier_anomalies_active",
        "courtier_queue_depth",
        "courtier_warc_bytes_total",
        "courtier_warc_records_total",
        "courtier_warc_errors_total",
        "courtier_documents_total",
        "courtier_frontier_urls",
        "courtier_renders_total",
        "courtier_parse_hook_errors_total",
        "courtier_documents_read_total",
        "process_cpu_seconds_total",
        "courtier_child_cpu_seconds_total",
    ):
        assert name in used, name
    rows = {p["title"] for p in dashboard["panels"] if p["type"] == "row"}
    assert {"Rendering, the parse hook, PDFs", "Output", "Frontier", "Process"} <= rows
    cpu = [p for p in panels if p["title"] == "CPU seconds per 1,000 requests"]
    assert cpu and "1000 *" in cpu[0]["targets"][0]["expr"]
