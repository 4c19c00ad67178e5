"""End to end, judged from the servers' side: crawls that end by themselves.

A small finite web (two plain seed sites of the simulated web, a handful of pages each, their
images on media hosts) crawled by ``courtier crawl``:
- ``--until-done`` ends with exit status 0 once everything reachable is fetched, each URL
  exactly once, media too;
- ``[crawl] max_requests``, ``max_pages`` and ``max_bytes`` each end the crawl, the servers
  seeing exactly the budget (bytes: at most one answer more, with one request in flight);
- ``max_pages_per_site`` stops giving a site new pages, not the crawl;
- budgets count what the store recorded: the same command again fetches nothing more, and a
  raised budget fetches only what is left.
Each crawl takes a few seconds (most of it the crawler's start and the settle time).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from courtier.simweb.log import RequestRecord, read_log
from courtier.simweb.process import SimWebProcess
from courtier.simweb.world import SiteKind, WorldParams

# 11 special standalone sites (429s, 503s, traps...) come first: the 12th and 13th are plain.
PARAMS = WorldParams(
    seed=5, n_standalone=13, n_cname_tenants=1, n_header_tenants=1, n_horizon=1, n_farm=0,
    n_items=4, n_lists=1, n_images=1, slow_fraction=0.0,
)  # fmt: skip
LOG_FLUSH = 1.3  # the simulated web writes its request log every second


@dataclass
class Web:
    process: SimWebProcess
    seeds: Path
    hosts: list[str]


@dataclass
class Run:
    exit: int
    summary: dict[str, Any]
    stderr: str
    began: float
    ended: float
    log: Path

    @property
    def seconds(self) -> float:
        return self.ended - self.began

    @property
    def records(self) -> list[RequestRecord]:
        """What the servers received while the crawl ran (once their log has it)."""
        time.sleep(max(0.0, self.ended + LOG_FLUSH - time.time()))
        return [r for r in read_log(self.log) if self.began <= r.start <= self.ended]

    def pages(self, host: str | None = None) -> list[RequestRecord]:
        """Requests to the seed sites (robots.txt aside), of ``host`` only when given."""
        return [
            r
            for r in self.records
            if r.target != "/robots.txt" and _host(r) in ({host} if host else _SEEDS)
        ]


_SEEDS: set[str] = set()


def _host(record: RequestRecord) -> str:
    return record.host.split(":")[0].rstrip(".").lower()


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Web]:
    work = tmp_path_factory.mktemp("ends")
    with SimWebProcess(work / "web", PARAMS) as process:
        hosts = sorted(
            site.host
            for site in process.world.sites.values()
            if site.kind is SiteKind.STANDALONE and not site.behaviours
        )
        assert len(hosts) == 2
        _SEEDS.update(hosts)
        seeds = work / "seeds.txt"
        seeds.write_text("\n".join(hosts) + "\n")
        yield Web(process, seeds, hosts)


def crawl(web: Web, out: Path, *args: str) -> Run:
    command = [sys.executable, "-m", "courtier", "crawl", "--seeds", str(web.seeds)]
    command += ["--dns", web.process.dns, "--allow-net", web.process.allow_net]
    command += ["--out", str(out), "--json", "--no-live", "--no-request-log", "--no-warc"]
    command += ["-s", "limits.site.rate=20", "-s", "limits.origin.rate=200"]
    command += ["-s", "crawl.flush_interval=0.1", "-s", "crawl.parse_workers=1", *args]
    began = time.time()
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    lines = done.stdout.strip().splitlines()
    summary = json.loads(lines[-1]) if lines else {}
    return Run(done.returncode, summary, done.stderr, began, time.time(), web.process.log_path)


def test_until_done_fetches_everything_reachable_once_and_exits_0(web: Web, tmp_path: Path) -> None:
    run = crawl(web, tmp_path / "out", "--until-done")
    assert run.exit == 0, run.stderr[-2000:]
    assert run.summary["ended_by"] == "until-done"
    records = run.records
    counts = Counter((_host(r), r.target) for r in records)
    assert max(counts.values()) == 1, [k for k, n in counts.items() if n > 1]
    for host in web.hosts:
        targets = {target for h, target in counts if h == host}
        every_page = {"/robots.txt", "/", "/list/1", *(f"/item/{n}" for n in range(1, 5))}
        assert every_page <= targets, (host, sorted(targets))
    media = [r for r in records if _host(r) not in web.hosts]
    assert any(r.target.endswith("/img/1.jpg") for r in media)  # media due counted as work
    assert all(r.status < 500 for r in records)
    store = run.summary["store"]
    assert store["queued"] == 0 and store["leased"] == 0  # nothing left but refreshes
    assert run.seconds < 60  # it ended by itself (without --until-done it never would)


def test_max_requests_is_what_the_servers_see(web: Web, tmp_path: Path) -> None:
    run = crawl(web, tmp_path / "out", "-s", "crawl.max_requests=12")
    assert run.exit == 0, run.stderr[-2000:]
    assert run.summary["ended_by"] == "max_requests"
    assert len(run.records) == 12  # robots.txt, pages and media: not one more
    assert run.summary["spent"]["requests"] == 12


@pytest.fixture(scope="module")
def paged(web: Web, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Run]:
    """A crawl ended by ``max_pages=5``, and its output directory (its store)."""
    out = tmp_path_factory.mktemp("paged") / "out"
    return out, crawl(web, out, "-s", "crawl.max_pages=5")


def test_max_pages_counts_page_requests(paged: tuple[Path, Run]) -> None:
    _out, run = paged
    assert run.exit == 0, run.stderr[-2000:]
    assert run.summary["ended_by"] == "max_pages"
    assert len(run.pages()) == 5
    assert run.summary["spent"]["pages"] == 5


def test_max_bytes_passes_by_at_most_the_answers_in_flight(web: Web, tmp_path: Path) -> None:
    budget = 20_000
    run = crawl(
        web,
        tmp_path / "out",
        *("-s", f"crawl.max_bytes={budget}", "-s", "crawl.max_in_flight=1"),
        *("-s", "media.fetch=false"),
    )
    assert run.exit == 0, run.stderr[-2000:]
    assert run.summary["ended_by"] == "max_bytes"
    records = run.records
    sent = sum(r.bytes for r in records)
    largest = max(r.bytes for r in records)
    assert budget <= sent <= budget - 1 + largest  # one request in flight: one answer over
    assert run.summary["spent"]["bytes"] == sent


def test_a_full_site_gets_no_new_pages_and_the_crawl_goes_on(web: Web, tmp_path: Path) -> None:
    run = crawl(web, tmp_path / "out", "--until-done", "-s", "crawl.max_pages_per_site=3")
    assert run.exit == 0, run.stderr[-2000:]
    assert run.summary["ended_by"] == "until-done"  # a full site does not end the crawl
    for host in web.hosts:
        assert len(run.pages(host)) == 3, [r.target for r in run.pages(host)]
    store = run.summary["store"]
    assert store["queued"] > 0 and store["leased"] == 0  # set aside, given back to the store


def test_the_same_command_again_spends_nothing_more(web: Web, paged: tuple[Path, Run]) -> None:
    out, first = paged
    assert first.summary["ended_by"] == "max_pages"
    again = crawl(web, out, "-s", "crawl.max_pages=5")
    assert again.exit == 0, again.stderr[-2000:]
    assert again.summary["ended_by"] == "max_pages"
    assert again.summary["spent"] == first.summary["spent"]
    assert again.records == []  # not even a robots.txt: the budget was spent


@pytest.mark.long
def test_a_raised_budget_fetches_only_what_is_left(web: Web, tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = crawl(web, out, "-s", "crawl.max_pages=4")
    assert len(first.pages()) == 4
    more = crawl(web, out, "-s", "crawl.max_pages=7")
    assert more.exit == 0, more.stderr[-2000:]
    assert len(more.pages()) == 3
    fetched = Counter((_host(r), r.target) for r in first.pages() + more.pages())
    assert max(fetched.values()) == 1  # resumed: no page of the first run asked again
    assert more.summary["spent"]["pages"] == 7
