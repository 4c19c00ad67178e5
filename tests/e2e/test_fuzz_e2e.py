"""End to end on generated webs (`courtier.simweb.fuzz`): crawl a few fuzzed worlds of a few
hundred sites each, with hosting shapes our own worlds lack (platforms with generic headers
only, platforms behind their own caches or a CDN, shared hosting, CDN edges shared by
strangers, www/bare pairs, media hosts, robots.txt redirects), and require the servers to see
no violation of any kind: every ground-truth origin within its budget, every site's spacing,
robots.txt, Retry-After and Crawl-delay kept, no duplicate, no request outside the seed.

A failure lists each broken criterion, the audit's examples, and every origin over its budget
with its shape, its sites, how far over it went and how many origins the crawl inferred for
its sites (one ground-truth origin split into many is the crawler sending a platform many
budgets)."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
from collections import defaultdict
from pathlib import Path

import pytest

from courtier.cli import main
from courtier.origins.store import OriginStore
from courtier.simweb.audit import AuditReport, audit
from courtier.simweb.process import SimWebProcess
from courtier.simweb.world import World, fuzz_params

pytestmark = [pytest.mark.slow, pytest.mark.long]

SEEDS = (11, 12, 13)
DURATION_S = 25


@dataclasses.dataclass
class Run:
    seed: int
    world: World
    report: AuditReport
    stats: dict
    inferred: dict[str, str]  # site -> the origin the crawl put it on


@pytest.fixture(scope="module", params=SEEDS, ids=[f"seed{s}" for s in SEEDS])
def run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Run:
    seed = request.param
    tmp = tmp_path_factory.mktemp(f"fuzz{seed}")
    with SimWebProcess(tmp / "web", fuzz_params(seed)) as web:
        args = ["crawl", "--seeds", str(web.seeds_path), "--dns", web.dns]
        args += ["--allow-net", web.allow_net, "--out", str(tmp / "out")]
        args += ["--duration", str(DURATION_S), "--json"]
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            assert main(args) == 0
    stats = json.loads(buffer.getvalue().strip().splitlines()[-1])
    report = audit(web.log_path, web.world, allow_media=True)
    return Run(seed, web.world, report, stats, _inferred(tmp / "out" / "frontier.sqlite3"))


def _inferred(store_path: Path) -> dict[str, str]:
    store = OriginStore(store_path)
    try:
        return {s.assignment.site: s.assignment.origin for s in store.all()}
    finally:
        store.close()


def violations(run: Run) -> list[str]:
    """Everything the servers held against the crawl, one line each."""
    lines = [
        f"seed {run.seed}: criterion {c.name}: {c.detail}" for c in run.report.criteria if not c.ok
    ]
    lines += [
        f"seed {run.seed}: {v.kind} {v.host}{v.target} {v.detail}".rstrip()
        for v in run.report.violations
    ]
    members = run.world.origin_sites()
    for figures in run.report.origins:
        if not figures.over_budget:
            continue
        hosts = members.get(figures.origin, ())
        shape = (
            run.world.sites[hosts[0]].shape or str(run.world.sites[hosts[0]].kind) if hosts else "?"
        )
        inferred = {run.inferred.get(h, "(none)") for h in hosts}
        lines.append(
            f"seed {run.seed}: origin {figures.origin} ({shape}, {len(hosts)} sites) over budget: "
            f"{figures.max_units_1s} units in 1 s (limit {figures.limit_1s:g}), "
            f"{figures.max_units_5s} in 5 s (limit {figures.limit_5s:g}: "
            f"{figures.max_units_5s / figures.limit_5s:.1f} x the limit); "
            f"the crawl inferred {len(inferred)} origins for its sites"
        )
    return lines


def splits(run: Run) -> dict[str, int]:
    """Ground-truth origins whose sites the crawl put on more than one origin."""
    inferred: dict[str, set[str]] = defaultdict(set)
    for origin, hosts in run.world.origin_sites().items():
        for host in hosts:
            if host in run.inferred:
                inferred[origin].add(run.inferred[host])
    return {origin: len(ids) for origin, ids in inferred.items() if len(ids) > 1}


def test_the_servers_see_no_violation_of_any_kind(run: Run) -> None:
    found = violations(run)
    split = splits(run)
    print(f"\nseed {run.seed}: {run.report.requests} requests, {len(found)} violation lines")
    print("\n".join(found))
    print(f"seed {run.seed}: ground-truth origins split by the crawl: {split}")
    assert run.stats["internal_errors"] == 0
    assert run.report.requests > 500  # crawled, not only robots.txt files
    assert found == [], "\n".join(found)
