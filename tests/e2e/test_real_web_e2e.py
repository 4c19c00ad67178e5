"""End to end on a simulated web with the real web's shapes: strangers behind one CDN edge are
crawled each at its own budget, a SaaS platform behind the same edge stays one origin within
its budget (judged from the servers' side), and images are fetched where they live: a
platform's own media host (charged to the platform) and vanity names CNAMEd to a CDN or a
bucket (keyed as that customer or bucket)."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import itertools
import json
import statistics
from collections import defaultdict
from typing import Any
from urllib.parse import urlsplit

import pyarrow.parquet as pq
import pytest

from courtier.cli import main
from courtier.origins.store import OriginStore
from courtier.simweb.audit import AuditReport, audit
from courtier.simweb.log import RequestRecord, read_log
from courtier.simweb.process import SimWebProcess
from courtier.simweb.world import EDGE_HOST, SiteKind, World, WorldParams
from courtier.sinks.documents import read_documents
from courtier.url import host_of_site


@dataclasses.dataclass
class Run:
    world: World
    report: AuditReport
    stats: dict
    documents: list[dict]
    origins: dict[str, str]
    requests: list[dict[str, Any]]
    """The crawl's request log: its own clock's record of each request."""
    served: list[RequestRecord]
    """The servers' log: each request as its server received it."""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    tmp = tmp_path_factory.mktemp("realweb")
    params = WorldParams(
        seed=5,
        n_standalone=14,
        n_cname_tenants=3,  # platform A's one budget has room for its media host's images
        n_header_tenants=3,
        n_horizon=3,
        n_farm=1,
        n_edge_sites=16,
        n_edge_tenants=6,
        platform_media=1,
        vanity_media=0.5,
        imgsvc_store_share=0.3,
    )
    with SimWebProcess(tmp / "web", params) as web:
        args = ["crawl", "--seeds", str(web.seeds_path), "--dns", web.dns]
        args += ["--allow-net", web.allow_net, "--out", str(tmp / "out")]
        args += ["--duration", "16", "--json"]
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            assert main(args) == 0
    stats = json.loads(buffer.getvalue().strip().splitlines()[-1])
    report = audit(web.log_path, web.world, allow_media=True)
    documents = list(read_documents(tmp / "out"))
    store = OriginStore(tmp / "out" / "frontier.sqlite3")
    try:
        origins = {s.assignment.site: s.assignment.origin for s in store.all()}
    finally:
        store.close()
    logged = sorted((tmp / "out" / "requests").glob("*.parquet"))
    requests = pq.read_table(logged).to_pylist() if logged else []
    served = list(read_log(web.log_path))
    return Run(web.world, report, stats, documents, origins, requests, served)


def _hosts(run: Run, kind: SiteKind) -> list[str]:
    return [s.host for s in run.world.sites.values() if s.kind is kind]


def test_the_servers_find_every_budget_kept(run: Run) -> None:
    assert run.report.ok, [c for c in run.report.criteria if not c.ok]
    assert run.report.criterion("origin-budget").ok, run.report.criterion("origin-budget")
    assert run.stats["internal_errors"] == 0


def test_strangers_behind_one_edge_are_origins_of_their_own(run: Run) -> None:
    edge_sites = _hosts(run, SiteKind.EDGE_SITE)
    origins = [run.origins[h] for h in edge_sites]
    assert len(set(origins)) == len(edge_sites), origins
    assert not any(EDGE_HOST in origin for origin in origins)


def test_a_platform_behind_the_same_edge_is_one_origin_within_its_budget(run: Run) -> None:
    tenants = _hosts(run, SiteKind.EDGE_TENANT)
    assert len({run.origins[h] for h in tenants}) == 1
    platform = {o.origin: o for o in run.report.origins}["platform-c"]
    assert platform.requests > len(tenants)  # crawled, not only its robots.txt files
    assert not platform.over_budget


def test_every_stranger_behind_the_edge_was_crawled_past_its_robots_txt(run: Run) -> None:
    # A document's site carries the port when the simulated web could not have port 80.
    pages = {
        host_of_site(d["site"])
        for d in run.documents
        if d.get("kind") != "media" and d["status"] == 200
    }
    assert set(_hosts(run, SiteKind.EDGE_SITE)) <= pages


def test_images_are_fetched_where_they_live(run: Run) -> None:
    media = [d for d in run.documents if d.get("kind") == "media"]
    platform = [d for d in media if d["site"].startswith("media.platform-a")]
    assert platform, "the platform's media host was never fetched"
    a_origin = run.origins[_hosts(run, SiteKind.CNAME_TENANT)[0]]
    assert all(f"origin:{a_origin}" in d["keys"] for d in platform)
    vanity = [d for d in media if d["site"].startswith("images.")]
    assert vanity, "no vanity media host was fetched"
    kinds = {d["keys"][0].split(":", 1)[0] for d in vanity}
    assert kinds <= {"bucket", "cdn"} and kinds, kinds


def _gaps_on_both_clocks(run: Run) -> list[tuple[float, float]]:
    """(the crawl's gap, the server's gap) between consecutive requests of each site's lane
    (its pages and robots.txt), each request found in the servers' log by host and target
    (a retry of the same URL: the arrival nearest the crawl's start)."""
    arrivals: dict[tuple[str, str], list[float]] = defaultdict(list)
    for record in run.served:
        host = record.host.lower().rpartition(":")[0] or record.host.lower()
        arrivals[(host.rstrip("."), record.target)].append(record.start)
    lanes: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for row in sorted(run.requests, key=lambda row: row["time"]):
        if row["kind"] not in ("page", "robots") or row["status"] is None:
            continue
        url = urlsplit(row["url"])
        key = (url.hostname or "", url.path + (f"?{url.query}" if url.query else ""))
        started = row["time"].timestamp()
        served = min(arrivals.get(key, []), key=lambda at: abs(at - started), default=None)
        if served is not None and abs(served - started) < 0.5:
            lanes[key[0]].append((started, served))
    return [
        (crawl_next - crawl, served_next - served)
        for starts in lanes.values()
        for (crawl, served), (crawl_next, served_next) in itertools.pairwise(starts)
    ]


def test_the_summary_reports_spacing_against_the_allowance(run: Run) -> None:
    """Every start the crawl was waiting for (booked by the time its keys allowed it) is
    judged against the allowance of the key that set it: the summary's ratios sit at 1.

    Which key sets a start depends on the machine: here a page costs its origin 2 s and its
    site 1 s, so a site's own interval sets only its first page after robots.txt, and on a
    busy machine that page waits for the parse workers' start (robots.txt is parsed in a
    worker) instead: the lane was not waiting, so no site start is judged. The summary is
    judged on the starts it has, whatever key set them; and its gaps, read on the crawl's own
    clock, are the gaps the servers saw."""
    rows = {kind: row for kind, row in run.stats["spacing"].items() if row["starts"] >= 10}
    assert sum(row["starts"] for row in rows.values()) > 20, run.stats["spacing"]
    for kind, row in rows.items():  # a median of fewer starts is a start or two
        assert 0.95 <= row["median_ratio"] <= 1.1, (kind, row)
    gaps = [(crawl, served) for crawl, served in _gaps_on_both_clocks(run) if crawl >= 0.5]
    assert len(gaps) > 20, len(gaps)
    ratios = [served / crawl for crawl, served in gaps]
    assert 0.99 <= statistics.median(ratios) <= 1.01, sorted(ratios)
    assert all(0.9 <= ratio <= 1.1 for ratio in ratios), sorted(ratios)
