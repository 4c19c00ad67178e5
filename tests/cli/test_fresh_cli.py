"""`courtier fresh list`: the crawl's fast sources, from its store."""

from __future__ import annotations

import json
import time
from pathlib import Path

from cli_helpers import Run, json_lines

from courtier.frontier.fresh import FreshSource, FreshState
from courtier.frontier.sqlite_store import SqliteFrontier


def _watch(store_path: Path, *sources: tuple[str, FreshState, float, str]) -> None:
    store = SqliteFrontier(store_path)
    try:
        now = time.time()
        rows = []
        for url, state, interval, evidence in sources:
            schedule = store.schedule_of(url)
            assert schedule is not None, url
            rows.append(
                FreshSource(
                    schedule.id, url, schedule.site, state, interval, evidence, now - 600,
                    now - 30, visits=6, productive=5, last_change=now - 30, new_links=2,
                )
            )  # fmt: skip
        store.save_fresh(rows, rows)
    finally:
        store.close()


def test_sources_are_listed_with_their_evidence_and_quiet_pages_counted(
    store_path: Path, run: Run
) -> None:
    _watch(
        store_path,
        ("http://alpha.test/", FreshState.SOURCE, 60.0, "home page"),
        ("http://bravo.test/", FreshState.QUIET, 86400.0, "home page"),
    )
    code, out, _ = run("fresh", "list", "--store", store_path)
    assert code == 0
    assert "source" in out and "60 s" in out and "5/6" in out and "http://alpha.test/" in out
    assert "home page" in out
    assert "bravo" not in out and "1 pages watched went quiet" in out
    code, out, _ = run("fresh", "list", "--store", store_path, "--all", "--json")
    assert code == 0
    (document,) = json_lines(out)
    assert document["quiet"] == 1
    assert [(s["url"], s["state"]) for s in document["sources"]] == [
        ("http://alpha.test/", "source"),
        ("http://bravo.test/", "quiet"),
    ]
    assert document["sources"][0]["evidence"] == "home page"


def test_no_sources_says_so(store_path: Path, run: Run) -> None:
    code, out, _ = run("fresh", "list", "--store", store_path)
    assert (code, out.strip()) == (0, "no fast sources")


def test_a_missing_store_is_a_usage_error(tmp_path: Path, run: Run) -> None:
    code, _, err = run("fresh", "list", "--store", tmp_path / "nothing.db")
    assert code == 2 and err.startswith("courtier fresh list:")


def test_status_counts_the_fast_sources_and_reads_each_workers_split(
    store_path: Path, tmp_path: Path, run: Run
) -> None:
    _watch(store_path, ("http://alpha.test/", FreshState.SOURCE, 60.0, "home page"))
    out = tmp_path / "out"
    out.mkdir()
    split = {"target": 0.4, "realised": 0.41, "mean_target": 0.405, "contested": 1200.0}
    stats = {"worker": "vm-12", "crawl": {"split": split}}
    (out / "stats-vm-12.json").write_text(json.dumps(stats))
    (out / "stats-vm-13.json").write_text("{not json")
    code, text, _ = run("status", "--store", store_path, "--out", out)
    assert code == 0
    assert "fast sources: 1 source (courtier fresh list)" in text
    assert "discovery share (vm-12): target 0.40, realised 0.41 over 1200 contested" in text
    code, text, _ = run("status", "--store", store_path, "--out", out, "--json")
    (document,) = json_lines(text)
    assert document["fast_sources"] == {"source": 1}
    assert document["split"] == {"vm-12": split}
