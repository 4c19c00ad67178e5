"""End to end: a crawl of the simulated web, observed. /metrics is scraped while it runs and
agrees with the request log; every request the servers saw is a row; the anomaly detector
flags the site whose latency rises with load and the outage, and none of the steady sites."""

from __future__ import annotations

import asyncio
import dataclasses
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import pyarrow.parquet as pq
import pytest
from observe_helpers import scrape, total
from prometheus_client import CollectorRegistry

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
from courtier.simweb.log import read_log
from courtier.simweb.process import SimWebProcess
from courtier.simweb.world import Behaviour, World, WorldParams
from courtier.url import host_of_site

PARAMS = WorldParams(
    seed=3, n_standalone=14, n_cname_tenants=4, n_header_tenants=3, unavailable_seconds=4.0
)
DURATION = 6.0
UNSTEADY = {
    Behaviour.RATE_LIMIT_SECONDS,
    Behaviour.RATE_LIMIT_DATE,
    Behaviour.UNAVAILABLE_AT_START,
    Behaviour.RISING_LATENCY,
    Behaviour.ROBOTS_500,
    Behaviour.REBIND,
    Behaviour.CANARY_ALIAS,
}


@dataclasses.dataclass
class Run:
    world: World
    out: Path
    server_log: Path
    scrapes: list[tuple[float, float, int]]
    """(courtier_requests_total, in-flight gauge series, request-log rows) during the crawl"""
    final: dict[str, list[tuple[dict[str, str], float]]]
    requests: int


def _rows(out: Path) -> int:
    return sum(pq.read_metadata(p).num_rows for p in (out / "requests").glob("*.parquet"))


async def _crawl(web: SimWebProcess, out: Path) -> Run:
    # Sites may go twice as fast as by default, origins four times: enough load that the
    # rising-latency site's latency rises; the rest stays well inside what the sites allow.
    limits = dataclasses.replace(LimitsSection(), site=KeyLimits(2.0), origin=KeyLimits(8.0))
    config = dataclasses.replace(Config(), limits=limits)
    policy = AddressPolicy(allow=[web.allow_net])
    guard = Guard(policy, TimedResolver(DnsResolver(web.dns)))
    seeds, errors = parse_seed_lines(web.seeds_path.read_text().splitlines())
    assert not errors
    settings = ObserveSettings(
        metrics_port=0, live=False, flush_seconds=1.0, sample_seconds=0.5, stats_seconds=1.0
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
        duration=DURATION,
        origins=OriginInference(DnsEvidenceSource(web.dns)),
        observer=observation,
        handle_signals=False,
    )
    observation.watch(engine_probe(engine))
    scrapes: list[tuple[float, float, int]] = []
    async with observation:
        crawl = asyncio.create_task(engine.run())
        while not crawl.done():
            await asyncio.wait({crawl}, timeout=1.0)
            if crawl.done():
                break
            port = observation.metrics_port
            assert port is not None
            metrics = await scrape(port)
            in_flight = len(metrics.get("courtier_in_flight_requests", []))
            rows = await asyncio.to_thread(_rows, out)
            scrapes.append((total(metrics, "courtier_requests_total"), in_flight, rows))
        stats = crawl.result()
        await observation.flush()
        final = await scrape(observation.metrics_port or 0)
    return Run(web.world, out, web.log_path, scrapes, final, stats.requests)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    tmp = tmp_path_factory.mktemp("observed")
    with SimWebProcess(tmp / "web", PARAMS) as web:
        return asyncio.run(_crawl(web, tmp / "out"))


def _query(run: Run, sql: str) -> list[tuple]:
    return run_query(run.out, sql)[1]


def test_metrics_scraped_during_the_crawl_grow_and_the_log_fills_as_it_runs(run: Run):
    assert len(run.scrapes) >= 3
    counts = [c for c, _g, _r in run.scrapes]
    assert counts == sorted(counts) and counts[-1] > 0
    assert all(gauges >= 1 for _c, gauges, _r in run.scrapes[1:])  # in flight, per scheduler
    assert any(rows > 0 for _c, _g, rows in run.scrapes)  # readable before the end


def test_counters_agree_with_the_request_log(run: Run):
    ((rows, refused, sent_bytes, units),) = _query(
        run,
        "SELECT count(*), count(*) FILTER (WHERE refusal IS NOT NULL), sum(bytes), "
        "sum(cost_units + extra_units) FILTER (WHERE refusal IS NULL) FROM requests",
    )
    assert rows > 100
    assert total(run.final, "courtier_requests_total") == rows
    assert total(run.final, "courtier_request_log_rows_total") == rows
    assert total(run.final, "courtier_ssrf_refusals_total") == refused
    assert total(run.final, "courtier_response_bytes_total") == sent_bytes
    assert total(run.final, "courtier_cost_units_total") == pytest.approx(units)
    for status_class, count in _query(
        run, "SELECT status_class, count(*) FROM requests GROUP BY 1"
    ):
        assert total(run.final, "courtier_requests_total", status_class=status_class) == count
    for kind, count in _query(run, "SELECT kind, count(*) FROM requests GROUP BY 1"):
        assert total(run.final, "courtier_requests_total", kind=kind) == count
    # the crawl's own count of requests sent is the log's rows that reached the network
    assert rows - refused == run.requests


def test_every_request_the_servers_saw_is_a_row(run: Run):
    seen = Counter(
        (r.host.split(":")[0].lower().rstrip("."), r.target) for r in read_log(run.server_log)
    )
    logged: Counter[tuple[str, str]] = Counter()
    for (url,) in _query(run, "SELECT url FROM requests WHERE refusal IS NULL"):
        parts = urlsplit(url)
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        logged[(parts.hostname or "", target)] += 1
    assert sum(seen.values()) > 100
    assert logged == seen
    kinds = dict(_query(run, "SELECT kind, count(*) FROM requests GROUP BY 1"))
    assert kinds.get("robots", 0) > 10 and kinds.get("page", 0) > 10


def test_anomalies_flag_the_rising_site_and_the_outage_and_no_steady_site(run: Run):
    world = run.world
    rising = world.site_with(Behaviour.RISING_LATENCY).host
    outage = world.site_with(Behaviour.UNAVAILABLE_AT_START).host
    raised = _query(
        run, "SELECT scope, name, signal FROM anomalies WHERE state = 'raised' ORDER BY time"
    )
    # Sites are named with the simulated web's port when it is not 80 (another test's
    # simulated web may hold 80): compare hosts.
    flagged_sites = {host_of_site(name) for scope, name, _signal in raised if scope == "site"}
    assert rising in flagged_sites, raised
    assert outage in flagged_sites, raised
    assert any(
        (scope, host_of_site(name), signal) == ("site", outage, "throttled")
        for scope, name, signal in raised
    )
    unsteady = {s.host for s in world.sites.values() if s.is_seed and s.behaviours & UNSTEADY}
    unsteady_origins = {
        origin
        for site, origin in _query(
            run, "SELECT DISTINCT site, origin FROM requests WHERE origin IS NOT NULL"
        )
        if host_of_site(site) in unsteady
    }
    for scope, name, signal in raised:
        if scope == "site":
            assert host_of_site(name) in unsteady, (name, signal)
        else:
            assert name in unsteady_origins, (name, signal)
    assert total(run.final, "courtier_anomalies_total") == len(raised)


def test_the_run_leaves_its_stats_samples_and_a_report(run: Run):
    import json

    from courtier.observe.report import write_report

    stats = json.loads((run.out / "stats.json").read_text())
    assert stats["crawl"]["requests"] == run.requests
    assert stats["observer"]["rows_written"] == _rows(run.out)
    samples = (run.out / "samples.jsonl").read_text().splitlines()
    assert len(samples) >= 5 and "slots" in json.loads(samples[-1])
    html = write_report(run.out).read_text()
    assert "chart-rebooks" in html and "chart-origin-0" in html
    slowest = _query(run, "p95-rise")
    assert slowest is not None
