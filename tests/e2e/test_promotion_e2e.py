"""End to end, on loopback: a crawl records the horizon, `courtier rank --promote 1` moves the
most-linked-from-seed horizon host into the seed, and the next crawl on the same store fetches
it, and only it, politely. The link farm is never promoted and never fetched. A page sent to
the fastlane with `courtier recrawl` between the runs is fetched again."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from courtier.cli import main
from courtier.simweb.audit import AuditReport, audit
from courtier.simweb.log import RequestRecord, read_log
from courtier.simweb.process import SimWebProcess
from courtier.simweb.world import MEDIA_KINDS, SiteKind, World, WorldParams
from courtier.url import host_of_site

# In the long run (CI runs it after the default one): a 20 s crawl and a ranking cycle;
# the ranking and promotion rules have fast tests in tests/graph.
pytestmark = pytest.mark.long

FIRST_CRAWL_S = 14.0
SECOND_CRAWL_S = 9.0


@dataclass
class PromotionRun:
    world: World
    store: Path
    rank_lines: list[dict[str, object]]
    rank_exit: int
    promotion_logs: list[str]
    crawl_exits: tuple[int, int]
    restored_clocks: int
    ranked_at: float
    recrawled: str  # a seed home page fetched by the first run, then sent to the fastlane
    recrawl_exit: int
    records: list[RequestRecord]
    log_path: Path


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _crawl(web: SimWebProcess, out: Path, duration: float) -> tuple[int, dict[str, object]]:
    args = ["crawl", "--seeds", str(web.seeds_path), "--dns", web.dns]
    args += ["--allow-net", web.allow_net, "--out", str(out), "--duration", str(duration), "--json"]
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = main(args)
    return code, json.loads(buffer.getvalue().strip().splitlines()[-1])


def _rank(store: Path) -> tuple[int, list[dict[str, object]], list[str]]:
    logger = logging.getLogger("courtier.graph")
    collect, level = _Collect(), logger.level
    logger.addHandler(collect)
    logger.setLevel(logging.INFO)
    buffer = io.StringIO()
    try:
        with contextlib.redirect_stdout(buffer):
            code = main(["rank", "--store", str(store), "--promote", "1", "--json"])
    finally:
        logger.removeHandler(collect)
        logger.setLevel(level)
    lines = [json.loads(line) for line in buffer.getvalue().splitlines() if line.strip()]
    return code, lines, collect.messages


def _fetched_home_page(store: Path, world: World) -> str:
    """The first fetched home page of a plain standalone site: one whose clocks a restart
    restores to no more than its 1 s interval (no Crawl-delay, no Retry-After, no slow or
    shared server), so the second run's fastlane recrawl falls well inside its 9 s. (The
    alphabetically first home page, chosen before, could be a site the first run had left
    paused, and the recrawl then fell after the second run's end.)"""
    with sqlite3.connect(store) as db:
        rows = db.execute(
            "SELECT canonical FROM urls WHERE depth = 0 AND http_status = 200 "
            "AND canonical LIKE 'http://%/' ORDER BY canonical"
        ).fetchall()
    for (canonical,) in rows:
        site = world.sites.get(str(canonical).removeprefix("http://").rstrip("/"))
        if site is not None and site.kind is SiteKind.STANDALONE and not site.behaviours:
            return str(canonical)
    raise AssertionError(f"the first crawl fetched no plain home page: {rows}")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> PromotionRun:
    work = tmp_path_factory.mktemp("promotion")
    out = work / "crawl"
    with SimWebProcess(work / "web", WorldParams(seed=3)) as web:
        first, _stats = _crawl(web, out, FIRST_CRAWL_S)
        ranked_at = time.time()
        rank_exit, lines, logs = _rank(out / "frontier.sqlite3")
        recrawled = _fetched_home_page(out / "frontier.sqlite3", web.world)
        with contextlib.redirect_stdout(io.StringIO()):
            recrawl_exit = main(["recrawl", "--store", str(out / "frontier.sqlite3"), recrawled])
        # No pause between the runs: the second starts from the clocks the first saved.
        second, second_stats = _crawl(web, out, SECOND_CRAWL_S)
        world, log_path = web.world, web.log_path
    return PromotionRun(
        world=world,
        store=out / "frontier.sqlite3",
        rank_lines=lines,
        rank_exit=rank_exit,
        promotion_logs=logs,
        crawl_exits=(first, second),
        restored_clocks=int(str(second_stats["restored_clocks"])),
        ranked_at=ranked_at,
        recrawled=recrawled,
        recrawl_exit=recrawl_exit,
        records=list(read_log(log_path)),  # the server flushed its log when it stopped
        log_path=log_path,
    )


def _promoted(run: PromotionRun) -> list[str]:
    return [str(line["host"]) for line in run.rank_lines if line["type"] == "promoted"]


def _requests_to(run: PromotionRun, host: str) -> list[RequestRecord]:
    return [
        r
        for r in run.records
        if (site := run.world.site_of_host(r.host)) is not None and site.host == host
    ]


def test_the_most_linked_horizon_host_is_promoted_with_its_score(run: PromotionRun) -> None:
    assert run.crawl_exits == (0, 0)
    assert run.rank_exit == 0
    promoted = _promoted(run)
    assert [host_of_site(site) for site in promoted] == [run.world.popular_horizon_host]
    (decision,) = (line for line in run.rank_lines if line["type"] == "promoted")
    assert isinstance(decision["score"], float) and decision["score"] > 0
    assert isinstance(decision["seed_sources"], int) and decision["seed_sources"] >= 2
    assert any(promoted[0] in m and "score" in m for m in run.promotion_logs)
    with sqlite3.connect(run.store) as db:
        (state,) = db.execute("SELECT state FROM sites WHERE site = ?", promoted).fetchone()
    assert state == "seed"


def test_no_farm_host_is_promoted_or_even_outranks_the_popular_host(run: PromotionRun) -> None:
    farm = set(run.world.farm_hosts)
    assert not {host_of_site(site) for site in _promoted(run)} & farm
    scores = {
        host_of_site(str(line["host"])): float(str(line["score"]))
        for line in run.rank_lines
        if line["type"] == "host"
    }
    popular = scores[run.world.popular_horizon_host]
    assert all(score < popular for host, score in scores.items() if host in farm)


def test_the_promoted_host_is_crawled_only_after_its_promotion(run: PromotionRun) -> None:
    requests = _requests_to(run, run.world.popular_horizon_host)
    assert requests, "the second crawl never fetched the promoted host"
    assert all(r.start > run.ranked_at for r in requests)
    assert {r.target for r in requests} >= {"/robots.txt", "/"}
    assert all(r.status == 200 for r in requests)


def test_no_farm_or_other_horizon_host_is_ever_requested(run: PromotionRun) -> None:
    outside = {
        site.host
        for r in run.records
        if (site := run.world.site_of_host(r.host)) is not None
        and site.kind in {SiteKind.HORIZON, SiteKind.FARM}
    }
    assert outside == {run.world.popular_horizon_host}


def test_the_audit_with_the_promoted_host_as_seed_passes(run: PromotionRun) -> None:
    # The crawl fetches the seed pages' images on media hosts: allowed, and not "outside".
    report: AuditReport = audit(
        run.log_path, run.world, extra_seeds=_promoted(run), allow_media=True
    )
    for criterion in report.criteria:
        if criterion.name == "duplicates":
            continue  # the fastlane recrawl is a deliberate second fetch (asserted below)
        assert criterion.ok, (criterion.name, criterion.detail)
    assert report.ok
    assert run.restored_clocks > 0  # the second run started at once, on the saved clocks
    assert _not_media(report.outside_seed) == {}
    assert run.world.popular_horizon_host in {s.host for s in report.sites}
    # Without the promotion the same log is judged outside the seed: the check is real.
    plain = audit(run.log_path, run.world, allow_media=True)
    assert not plain.criterion("outside-seed").ok
    horizon = len(_requests_to(run, run.world.popular_horizon_host))
    assert _not_media(plain.outside_seed) == {"horizon": horizon}


def _not_media(outside: dict[str, int]) -> dict[str, int]:
    return {kind: n for kind, n in outside.items() if kind not in {str(k) for k in MEDIA_KINDS}}


def test_a_page_sent_to_the_fastlane_is_fetched_again_by_the_next_run(run: PromotionRun) -> None:
    assert run.recrawl_exit == 0
    site = run.world.site_of_host(run.recrawled.removeprefix("http://").rstrip("/"))
    assert site is not None and site.is_seed
    homes = [r for r in _requests_to(run, site.host) if r.target == "/"]
    assert len(homes) == 2, [r.start for r in homes]
    assert homes[0].start < run.ranked_at < homes[1].start
