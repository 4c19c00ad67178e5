"""Pages and bodies that are heavy to take in: a 100,000-deep page, 20 MB pages (many in
flight at once), pages of 5,000 new links, compression bombs of 1 GiB (gzip, deflate,
brotli, zstd, stacked), robots.txt files of 500 KiB (the sitemap bombs are in
test_issue_cases.py's robots.txt crawl). Beside them two
well-behaved hosts, on another address (another origin), must keep their pace: what one
site's pages cost to take in must not stall the others (issue 12, cases 1 and 7).

Every test here used to end as an expected failure naming why the normal hosts fell short
(parse jobs first-come first-served across sites; per-link trap work on the event loop; a
5,000-link parse result unpickled on the loop). Those reasons are gone: the pace check is
strict again (``_check_pace(known=...)`` remains for a reason found later).
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest
from hostile_web import (
    HOSTILE_ADDRESS,
    NORMAL_ADDRESS,
    CrawlRun,
    HostileWeb,
    big_page,
    check_pace,
    crawl,
    deep_page,
    huge_robots_site,
    link_flood,
    mixed_hosts,
    normal_site,
    pace,
    select,
    serve_always,
    url,
)

from courtier.frontier.sqlite_store import SqliteFrontier
from courtier.sinks.documents import read_documents

NORMAL = ("normal-1.test", "normal-2.test")

alone = pytest.mark.alone
"""The normal hosts' pace is the crawler's, on the CPU it has: another test's crawl on the
same cores (pytest-xdist) took enough of it for them to fall short of 80% (tests/turns.py).
Not the 30 s crawl (last in this module): its start-up weighs less, and it kept 91-98%
beside other work."""


async def _crawl_beside_normal_hosts(
    tmp_path: Path, web: HostileWeb, hostile: dict, duration: float
) -> CrawlRun:
    web.hosts.update(hostile)
    for host in NORMAL:
        web.hosts[host] = normal_site()
    names = {host: [HOSTILE_ADDRESS] for host in hostile}
    names |= {host: [NORMAL_ADDRESS] for host in NORMAL}
    seeds = [url(host, web.ports["hostile"]) for host in hostile]
    seeds += [url(host, web.ports["normal"]) for host in NORMAL]
    web.start()
    run = await crawl(tmp_path, seeds, names, duration=duration)
    print(f"\n{duration:.0f} s crawl took {run.wall:.2f} s; peak RSS: {run.rss}")
    print("stats:", {k: v for k, v in run.stats.as_dict().items() if k != "top_horizon"})
    for host in NORMAL:
        print(pace(web, host, run))
    print("requests stamped after a server stall:", web.stalls())
    return run


def _check_whole(run: CrawlRun, web: HostileWeb) -> None:
    """Nothing crashed, the run ended in time, the store is whole, no canary was touched."""
    assert run.stats.internal_errors == 0
    assert run.wall < run.duration + 5.0
    with sqlite3.connect(run.store_path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    store = SqliteFrontier(run.store_path)
    try:
        assert store.counts()
    finally:
        store.close()
    assert web.canary_connections() == 0


def _check_pace(
    run: CrawlRun, web: HostileWeb, known: str | None = None, *, misread: bool = True
) -> None:
    check_pace(web, run, NORMAL, known, misread=misread)


def _deep_and_big() -> dict:
    return {"deep.test": serve_always(deep_page()), "big.test": serve_always(big_page())}


@alone
@pytest.mark.timeout(60)
async def test_beside_a_deep_and_a_huge_page_normal_hosts_keep_their_pace(tmp_path, web):
    """Issue 12: "With a 100,000-deep page and a 20 MB page among the seeds, two normal
    hosts beside them keep at least 80% of their request rate, and a ``--duration 30``
    crawl exits within 40 s": here 8 s, exiting within 13 s. Every page of both hosts is
    the hostile one."""
    run = await _crawl_beside_normal_hosts(tmp_path, web, _deep_and_big(), duration=8.0)
    _check_whole(run, web)
    assert len(web.paths("deep.test")) >= 2 and len(web.paths("big.test")) >= 2
    _check_pace(run, web)


@alone
@pytest.mark.slow
@pytest.mark.timeout(60)
async def test_beside_wide_pages_normal_hosts_keep_their_pace(tmp_path, web):
    """One host whose every page links 5,000 URLs never seen before (small pages, quick to
    parse): the cost is the crawler's work per new link."""
    hostile = {"wide.test": link_flood()}
    run = await _crawl_beside_normal_hosts(tmp_path, web, hostile, duration=8.0)
    _check_whole(run, web)
    _check_pace(run, web)


@alone
@pytest.mark.timeout(60)
async def test_beside_huge_robots_txt_normal_hosts_keep_their_pace(tmp_path, web):
    """Eight robots.txt files of 500 KiB (25,000 rules): parsed off the event loop, and
    every URL judged by an index rather than by trying each rule."""
    hostile = {f"huge-robots-{i}.test": huge_robots_site() for i in range(8)}
    run = await _crawl_beside_normal_hosts(tmp_path, web, hostile, duration=5.0)
    _check_whole(run, web)
    assert all(len(web.paths(host)) >= 3 for host in hostile)  # rules read, pages judged
    _check_pace(run, web, misread=False)  # the loop stalls for seconds: that is the bug


BIG_IN_FLIGHT = 6


@pytest.fixture(scope="module")
def heavy(tmp_path_factory: pytest.TempPathFactory):
    """One crawl: every compression bomb, a deep page, wide pages, and BIG_IN_FLIGHT hosts
    of 20 MB pages (all asked at once: that many 8 MiB bodies in flight). The sitemap bombs
    are in test_issue_cases.py's robots.txt crawl, where parse workers are free for them."""
    tmp = tmp_path_factory.mktemp("heavy")
    web = HostileWeb.standard()
    hostile = select(mixed_hosts(web), "bomb-")
    hostile |= {f"big-{i}.test": serve_always(big_page()) for i in range(BIG_IN_FLIGHT)}
    hostile |= {"deep.test": serve_always(deep_page()), "wide.test": link_flood()}
    with web:
        # 9 s: big pages (large parse jobs) never take the last parse worker, so fewer of
        # them are parsed per second than when they could take every worker; 6 s sometimes
        # left only one of them parsed by the end.
        run = asyncio.run(_crawl_beside_normal_hosts(tmp, web, hostile, duration=9.0))
        yield web, run


@alone  # the shared crawl (``heavy``) runs in the first of them
@pytest.mark.timeout(90)
def test_bombs_and_many_big_pages_neither_crash_nor_hang_the_crawl(heavy):
    web, run = heavy
    _check_whole(run, web)
    for host in web.hosts:
        if host.startswith(("bomb-", "big-", "deep", "wide")):
            assert "/" in web.paths(host), host  # the bomb really went off


@alone  # the shared crawl (``heavy``) runs in the first of them
@pytest.mark.timeout(90)
def test_bombs_are_cut_at_the_body_limit(heavy):
    web, run = heavy
    # 1 GiB behind each bomb, 20 MB behind each big page: the crawler keeps 8 MiB of each.
    cap = 8 * 2**20
    assert run.stats.bytes <= cap * run.stats.requests
    documents = list(read_documents(run.out_dir))
    by_host = {record["site"].rpartition(":")[0]: record for record in documents}
    # A page still waiting for a parse worker when the crawl stops has no document yet.
    written = [by_host[host] for host in web.hosts if host in by_host]
    bodies = [r for r in written if r["site"].startswith(("bomb-", "big-"))]
    assert len(bodies) >= 3, sorted(by_host)
    for record in bodies:
        assert record["bytes"] <= cap, record
        if record["bytes"] == cap:
            assert record.get("truncated") is True, record
    zstd = by_host.get("bomb-zstd.test")
    if zstd is not None:  # decoded as it arrives, like gzip and br: cut at the limit too
        assert zstd["bytes"] <= cap, zstd
        assert zstd["bytes"] < cap or zstd.get("truncated") is True, zstd


@alone  # the shared crawl (``heavy``) runs in the first of them
@pytest.mark.timeout(90)
def test_peak_memory_with_many_big_pages_in_flight(heavy):
    """Issue 12, case 7: many 8 MiB bodies (the cap) in flight at once. Recorded: the peak
    resident memory of the crawl process and of its parse worker (printed with -s).

    Bodies past ``fetch.spool_bytes`` go to spool files, read there by the parse worker: the
    crawl's process grew 25-26 MiB (473-635 MiB when every body was held in memory and
    piped to the worker), and no spool file outlives the crawl."""
    _web, run = heavy
    rss = run.rss
    assert run.stats.bytes >= BIG_IN_FLIGHT * 8 * 2**20  # the big bodies did come in
    assert rss.growth < 160, str(rss)
    assert rss.child < 1024, str(rss)
    assert not (run.out_dir / "spool").exists()


@alone  # the shared crawl (``heavy``) runs in the first of them
@pytest.mark.timeout(90)
def test_beside_bombs_and_big_pages_normal_hosts_keep_their_pace(heavy):
    web, run = heavy
    _check_pace(run, web)


@pytest.mark.slow
@pytest.mark.long
@pytest.mark.timeout(120)
async def test_a_30_second_crawl_with_deep_and_huge_pages_exits_within_40(tmp_path, web):
    """Issue 12's own numbers."""
    run = await _crawl_beside_normal_hosts(tmp_path, web, _deep_and_big(), duration=30.0)
    _check_whole(run, web)
    assert run.wall < 40.0
    _check_pace(run, web)
