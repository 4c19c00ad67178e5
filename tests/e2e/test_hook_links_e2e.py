"""End to end, judged from the servers' side: a parse hook that steers the crawl.

Two plain seed sites of the simulated web, crawled from Python until done by
``Crawler(hook=steer)``, ``steer`` a module-level function (imported by name in the spawned
parse workers) returning a ``HookResult``:
- the links it drops (every ``/search`` link, ``/item/2``) are never requested: the servers'
  request log has none of them, though the pages linked them (their documents say so);
- the URL it adds inside the seed (``/hook-added``, linked by no page) is requested, once per
  site; the one it adds outside the seed is a horizon URL in the store, never requested;
- its fields are in every parsed page's document, and nothing is a hook error.
"""

from __future__ import annotations

import dataclasses
import importlib
import sqlite3
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from courtier import CrawlConfig, Crawler
from courtier.simweb.log import RequestRecord, read_log
from courtier.simweb.process import SimWebProcess
from courtier.simweb.world import SiteKind, WorldParams
from courtier.sinks.documents import read_documents

# 11 special standalone sites (429s, 503s, traps...) come first: the 12th and 13th are plain.
PARAMS = WorldParams(
    seed=5, n_standalone=13, n_cname_tenants=1, n_header_tenants=1, n_horizon=2, n_farm=0,
    n_items=4, n_lists=1, n_images=1, slow_fraction=0.0,
)  # fmt: skip
SETTINGS = {
    "crawl": {"flush_interval": 0.1, "parse_workers": 1},
    "limits": {"site": {"rate": 20}, "origin": {"rate": 200}},
    "warc": {"enabled": False},
}
HOOK = textwrap.dedent(
    """
    import re

    from courtier import HookResult

    def steer(page):
        return HookResult(
            fields={{"path": "/" + page.url.split("/", 3)[3]}},
            add=["/hook-added", "http://{horizon}/hook-horizon"],
            drop=[re.compile(r"/search[?]"), "/item/2"],
        )
    """
)


@dataclasses.dataclass
class Run:
    hosts: list[str]
    horizon: str
    stats: dict
    documents: list[dict]
    records: list[RequestRecord]
    store: Path


def _host(record: RequestRecord) -> str:
    return record.host.split(":")[0].rstrip(".").lower()


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    tmp = tmp_path_factory.mktemp("hook-links")
    with (
        pytest.MonkeyPatch.context() as patch,
        SimWebProcess(tmp / "web", PARAMS) as web,
    ):
        world = web.world
        hosts = sorted(
            site.host
            for site in world.sites.values()
            if site.kind is SiteKind.STANDALONE and not site.behaviours
        )
        assert len(hosts) == 2
        horizon = sorted(world.horizon_hosts)[-1]
        (tmp / "hooks").mkdir()
        (tmp / "hooks" / "steer_hook_e2e.py").write_text(HOOK.format(horizon=horizon))
        patch.syspath_prepend(str(tmp / "hooks"))  # spawned parse workers inherit sys.path
        steer = importlib.import_module("steer_hook_e2e").steer
        seeds = [
            line
            for line in web.seeds_path.read_text().split()
            if line.split("/")[2].split(":")[0] in hosts
        ]
        crawler = Crawler(
            CrawlConfig.from_mapping(SETTINGS),
            seeds=seeds,
            out=tmp / "out",
            dns=web.dns,
            allow_net=[web.allow_net],
            duration=90.0,
            until_done=True,
            hook=steer,
        )
        stats = crawler.run_sync()
        assert stats.ended_by == "until-done"
        log_path = web.log_path
    records = list(read_log(log_path))  # flushed when the simulated web stopped
    documents = list(read_documents(tmp / "out"))
    yield Run(hosts, horizon, stats.as_dict(), documents, records, tmp / "out" / "frontier.sqlite3")


def _requested(run: Run) -> list[str]:
    return [f"{_host(r)}{r.target}" for r in run.records]


def test_dropped_links_are_never_requested_though_the_pages_linked_them(run: Run) -> None:
    dropped = [url for d in run.documents for url in d.get("hook_links", {}).get("dropped", [])]
    assert any("/search?" in url for url in dropped), dropped
    assert any(url.endswith("/item/2") for url in dropped), dropped
    for document in run.documents:
        for url in document.get("links", []):
            assert "/search?" not in url and not url.endswith("/item/2"), document["url"]
    requested = _requested(run)
    assert not [t for t in requested if "/search" in t or t.endswith("/item/2")]
    for host in run.hosts:  # and the rest of the site was crawled
        assert f"{host}/item/1" in requested and f"{host}/list/1" in requested


def test_a_link_added_inside_the_seed_is_requested_once_per_site(run: Run) -> None:
    requested = _requested(run)
    for host in run.hosts:
        assert requested.count(f"{host}/hook-added") == 1
    added = {d["url"]: d["status"] for d in run.documents if d["url"].endswith("/hook-added")}
    assert len(added) == 2 and set(added.values()) == {404}  # fetched: the site has no such page


def test_a_link_added_outside_the_seed_is_horizon_never_requested(run: Run) -> None:
    assert not [r for r in run.records if _host(r) == run.horizon and "hook" in r.target]
    with sqlite3.connect(run.store) as store:
        rows = store.execute(
            "SELECT canonical, inlinks FROM horizon_urls WHERE canonical LIKE ?",
            ("%/hook-horizon",),
        ).fetchall()
        fetched = store.execute(
            "SELECT count(*) FROM urls WHERE canonical LIKE ?", ("%/hook-horizon",)
        ).fetchone()[0]
    assert [canonical for canonical, _ in rows] == [f"http://{run.horizon}/hook-horizon"]
    assert rows[0][1] == 2  # one vote per linking seed site
    assert fetched == 0


def test_the_hooks_fields_are_in_every_parsed_document_and_nothing_failed(run: Run) -> None:
    parsed = [d for d in run.documents if "title" in d and d.get("kind") != "media"]
    assert parsed
    for document in parsed:
        assert "hook_error" not in document, document["hook_error"]
        assert document["hook"]["path"] == "/" + document["url"].split("/", 3)[3]
        assert document["hook_links"]["priority"] == 0
    assert run.stats["hook_errors"] == {} and run.stats["hook_fields"] == len(parsed)
