"""End to end: what a crawl writes and the process running it, as Prometheus sees them.

A crawl of the simulated web with the metrics server on a loopback port, stopped once it has
written WARC records and documents of every kind (a few seconds on an idle machine): every metric
of the output (WARC, documents), the frontier and the process is scraped while it runs and
at its end, and agrees with the crawl's own counts; the shipped alert and recording rules
name only series the crawl exports (and pass ``promtool`` where it is installed); the
long-running commands run over the crawl's output draw a progress bar on a terminal and
keep ``--json`` output clean."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import io
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families
from rich.console import Console

from courtier.cli import main
from courtier.config import Config, KeyLimits, LimitsSection
from courtier.inputs import parse_seed_lines
from courtier.net.fetch import TimedResolver
from courtier.net.guard import Guard
from courtier.net.policy import AddressPolicy
from courtier.net.resolve import DnsResolver
from courtier.observe import Observation, ObserveSettings, engine_probe
from courtier.observe.query import run_query
from courtier.origins.dns_evidence import DnsEvidenceSource
from courtier.origins.infer import OriginInference
from courtier.pipeline.engine import Engine
from courtier.pipeline.stats import CrawlStats
from courtier.simweb.process import SimWebProcess
from courtier.simweb.world import WorldParams

# In the long run (CI runs it after the default one): a crawl scraped as it runs; each
# metric's rendering has fast tests in tests/observe/test_metrics.py.
pytestmark = pytest.mark.long

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy" / "prometheus-rules.yml"
RULE_TESTS = Path(__file__).resolve().parent / "prometheus_rules_test.yml"
PARAMS = WorldParams(seed=11, n_standalone=5, n_cname_tenants=2, n_header_tenants=2, documents=1)
LONGEST = 90.0
"""Seconds the crawl may take to show what the tests need (it stops as soon as it has)."""
NEW = (
    "courtier_warc_bytes_total",
    "courtier_warc_records_total",
    "courtier_warc_errors_total",
    "courtier_documents_total",
    "courtier_frontier_urls",
    "courtier_child_cpu_seconds_total",
    "courtier_build_info",
    "courtier_in_flight_bound",
    "courtier_in_flight_needed",
    "courtier_in_flight_binding",
    "process_cpu_seconds_total",
    "process_resident_memory_bytes",
    "process_open_fds",
)
GENERATED = {"up"}
"""Series Prometheus makes itself (not exported by a target)."""

Families = dict[str, list[tuple[dict[str, str], float]]]
"""Sample name -> [(labels, value)]; a family with no sample yet under its own name."""


@dataclasses.dataclass
class Run:
    out: Path
    stats: CrawlStats
    during: list[Families]
    final: Families


async def _scrape(port: int) -> Families:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{port}/metrics") as response,
    ):
        assert response.status == 200
        text = await response.text()
    found: Families = {}
    for family in text_string_to_metric_families(text):
        # a family with no sample yet, under the name its samples will have
        found.setdefault(family.name + ("_total" if family.type == "counter" else ""), [])
        for sample in family.samples:
            found.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return found


def _value(found: Families, name: str, **labels: str) -> float:
    return sum(
        v for got, v in found.get(name, []) if all(got.get(k) == x for k, x in labels.items())
    )


async def _crawl(web: SimWebProcess, out: Path) -> Run:
    # Sites may go twice as fast as by default, origins four times (as test_crawl_e2e's).
    limits = dataclasses.replace(LimitsSection(), site=KeyLimits(2.0), origin=KeyLimits(8.0))
    config = dataclasses.replace(Config(), limits=limits)
    policy = AddressPolicy(allow=[web.allow_net])
    guard = Guard(policy, TimedResolver(DnsResolver(web.dns)))
    seeds, errors = parse_seed_lines(web.seeds_path.read_text().splitlines())
    assert not errors
    settings = ObserveSettings(
        metrics_port=0,
        live=False,
        flush_seconds=1.0,
        sample_seconds=0.5,
        stats_seconds=1.0,
        frontier_seconds=1.0,
    )
    observation = Observation(
        out,
        settings,
        limits=config.limits.policy(),
        costs=config.costs.model(),
        registry=CollectorRegistry(),
    )
    engine = Engine(
        config,
        store_path=out / "frontier.sqlite3",
        out_dir=out,
        guard=guard,
        address_allowed=lambda address: policy.check(address).allowed,
        seeds=seeds,
        duration=None,
        origins=OriginInference(DnsEvidenceSource(web.dns)),
        observer=observation,
        handle_signals=False,
    )
    observation.watch(engine_probe(engine))
    during: list[Families] = []
    async with observation:
        port = observation.metrics_port
        assert port is not None
        crawl = asyncio.create_task(engine.run())
        deadline = asyncio.get_running_loop().time() + LONGEST
        while not crawl.done():
            await asyncio.wait({crawl}, timeout=1.0)
            if crawl.done():
                break
            during.append(await _scrape(port))
            if _enough(engine.stats, during) or asyncio.get_running_loop().time() > deadline:
                engine.stop()
        stats = crawl.result()
        await asyncio.sleep(2 * settings.sample_seconds)  # a sample of the finished crawl
        await observation.flush()
        final = await _scrape(port)
    return Run(out, stats, during, final)


def _enough(stats: CrawlStats, during: list[Families]) -> bool:
    """The crawl has shown what the tests look at: WARC records and documents of every kind
    this world has (PDFs too), counted mid-crawl as well as by the crawl."""
    return (
        sum(stats.warc_records.values()) >= 20
        and stats.documents["pdf"] >= 1
        and len(during) >= 3
        and any(_value(s, "courtier_warc_records_total") > 0 for s in during)
        and any(_value(s, "courtier_frontier_urls", state="queued") > 0 for s in during)
    )


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    tmp = tmp_path_factory.mktemp("outputs")
    with SimWebProcess(tmp / "web", PARAMS) as web:
        return asyncio.run(_crawl(web, tmp / "out"))


def test_every_new_metric_is_scraped_from_the_live_crawl(run: Run):
    for name in NEW:
        assert name in run.final, name
    assert any(_value(s, "courtier_frontier_urls", state="queued") > 0 for s in run.during)
    assert any(_value(s, "courtier_warc_records_total") > 0 for s in run.during)
    counts = [_value(s, "courtier_warc_bytes_total") for s in run.during]
    assert counts == sorted(counts)
    for family in ("courtier_renders_total", "courtier_parse_hook_errors_total"):
        assert family in run.final, family  # exported, if with no sample in this world
    assert _value(run.final, "courtier_in_flight_bound", scheduler="pages") >= 512
    assert sum(v for _labels, v in run.final["courtier_in_flight_binding"]) >= 1


def test_the_output_counters_agree_with_the_crawl(run: Run):
    stats, final = run.stats, run.final
    assert sum(stats.warc_records.values()) > 0
    for record, count in stats.warc_records.items():
        assert _value(final, "courtier_warc_records_total", type=record) == count
    assert _value(final, "courtier_warc_bytes_total") == stats.warc_bytes > 0
    assert _value(final, "courtier_warc_errors_total") == stats.warc_errors == 0
    ((documents,),) = run_query(run.out, "SELECT count(*) FROM documents")[1]
    assert _value(final, "courtier_documents_total") == sum(stats.documents.values())
    assert sum(stats.documents.values()) == documents > 0
    assert _value(final, "courtier_documents_total", kind="pdf") == stats.documents["pdf"] > 0
    for state in ("queued", "leased", "done", "refused", "failed"):
        found = _value(final, "courtier_frontier_urls", state=state)
        assert found == stats.store_counts[state], state
    assert _value(final, "courtier_frontier_urls", state="done") > 0


def test_the_process_and_the_build_are_measured(run: Run):
    final = run.final
    assert _value(final, "process_cpu_seconds_total") > 0
    assert _value(final, "process_resident_memory_bytes") > 10 * 1024 * 1024
    assert _value(final, "courtier_child_cpu_seconds_total") >= 0
    ((labels, value),) = final["courtier_build_info"]
    assert value == 1 and labels["version"] and labels["python"]
    # CPU per request, as the recording rule derives it, is a figure (not 0, not infinite)
    per_request = _value(final, "process_cpu_seconds_total") / _value(
        final, "courtier_requests_total"
    )
    assert 0 < per_request < 1


def _rules() -> list[dict[str, Any]]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


def test_the_rules_file_holds_recording_rules_and_alerts_with_what_they_need():
    rules = _rules()
    alerts = {rule["alert"]: rule for rule in rules if "alert" in rule}
    records = {rule["record"] for rule in rules if "record" in rule}
    assert "courtier:cpu_seconds_per_request:rate5m" in records
    for name in (
        "CourtierCrawlStalled",
        "CourtierWarcWriteErrors",
        "CourtierOverBudget",
        "CourtierHookErrors",
        "CourtierCpuPerRequestHigh",
    ):
        assert name in alerts, name
    for name, rule in alerts.items():
        assert rule["expr"].strip(), name
        assert rule["labels"]["severity"] in ("warning", "critical"), name
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], name
    prometheus = yaml.safe_load((ROOT / "deploy" / "prometheus.yml").read_text())
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    (mounted,) = prometheus["rule_files"]
    assert (
        f"./deploy/prometheus-rules.yml:{mounted}:ro"
        in compose["services"]["prometheus"]["volumes"]
    )


def test_the_rules_name_only_series_the_crawl_exports(run: Run):
    rules = _rules()
    recorded = {rule["record"] for rule in rules if "record" in rule}
    used: set[str] = set()
    for rule in rules:
        expr = re.sub(r'"[^"]*"', '""', rule["expr"])  # label values are no metric names
        expr = re.sub(r"\{[^}]*\}", "", expr)
        used |= set(re.findall(r"\b(?:courtier_|process_|courtier:)[a-z_:0-9]+", expr))
        used |= {word for word in re.findall(r"\b[a-z_]+(?=\{)", rule["expr"])}
    exported = set(run.final) | recorded | GENERATED
    assert used, "the rules query nothing"
    assert used <= exported, sorted(used - exported)


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool is not installed")
def test_promtool_checks_the_rules_and_their_unit_tests():
    checked = subprocess.run(
        ["promtool", "check", "rules", str(RULES)], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = subprocess.run(
        ["promtool", "test", "rules", RULE_TESTS.name],
        capture_output=True,
        text=True,
        check=False,
        cwd=RULE_TESTS.parent,
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr


# -- progress of the long-running commands ---------------------------------------------------


def _command(
    monkeypatch: pytest.MonkeyPatch, *args: str, terminal: bool
) -> tuple[int, str, str, str]:
    """``courtier ARGS`` with standard error a terminal (or not): exit status, stdout, what
    reached stderr and what the progress bar drew there."""
    drawn = io.StringIO()
    monkeypatch.setattr(
        "courtier.cli.progress_bar.Console",
        lambda stderr=True: Console(file=drawn, force_terminal=terminal, width=100),
    )
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(list(args))
    return code, stdout.getvalue(), stderr.getvalue(), drawn.getvalue()


def test_index_draws_a_bar_on_a_terminal_and_keeps_json_clean(
    run: Run, monkeypatch: pytest.MonkeyPatch
):
    code, out, _err, drawn = _command(
        monkeypatch, "index", "--out", str(run.out), "--json", terminal=True
    )
    assert code == 0 and drawn == ""
    assert json.loads(out)["lines"] > 0  # the whole of stdout is the JSON document
    code, out, _err, drawn = _command(monkeypatch, "index", "--out", str(run.out), terminal=True)
    assert code == 0 and "indexing WARC files" in drawn
    assert out.splitlines()[0].endswith("index.cdxj")
    code, _out, _err, drawn = _command(monkeypatch, "index", "--out", str(run.out), terminal=False)
    assert code == 0 and drawn == ""


def test_report_and_export_draw_a_bar_only_on_a_terminal(
    run: Run, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    code, out, _err, drawn = _command(
        monkeypatch, "report", "--out", str(run.out), "--output", str(tmp_path / "r.html"),
        terminal=True,
    )  # fmt: skip
    assert code == 0 and "writing the report" in drawn
    assert out.strip() == str(tmp_path / "r.html") and (tmp_path / "r.html").stat().st_size
    code, _out, _err, drawn = _command(
        monkeypatch, "report", "--out", str(run.out), "--output", str(tmp_path / "q.html"),
        terminal=False,
    )  # fmt: skip
    assert code == 0 and drawn == ""
    target = tmp_path / "documents.jsonl"
    code, _out, err, drawn = _command(
        monkeypatch, "export", "--out", str(run.out), "--format", "jsonl", "-o", str(target),
        terminal=True,
    )  # fmt: skip
    assert code == 0 and "exporting documents as jsonl" in drawn
    lines = target.read_text().splitlines()
    assert lines and all(json.loads(line)["url"] for line in lines)
    assert f"{len(lines)} documents" in err
    code, out, _err, drawn = _command(
        monkeypatch, "export", "--out", str(run.out), "--format", "jsonl", "-o", "-",
        terminal=False,
    )  # fmt: skip
    assert code == 0 and drawn == "" and len(out.splitlines()) == len(lines)
