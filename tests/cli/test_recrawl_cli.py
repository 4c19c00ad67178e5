"""`courtier recrawl`: the fastlane, on demand, for seed pages only."""

from __future__ import annotations

import time
from pathlib import Path

from cli_helpers import POPULAR, Run, json_lines

from courtier.frontier.base import UrlLane, UrlStatus
from courtier.frontier.sqlite_store import SqliteFrontier


def test_a_fetched_page_becomes_due_now_in_the_fastlane(store_path: Path, run: Run) -> None:
    before = time.time()
    code, out, _ = run("recrawl", "--store", store_path, "http://ALPHA.test/", "--json")
    assert code == 0
    assert json_lines(out) == [{"urls": 1, "scheduled": 1, "being_fetched": 0}]
    store = SqliteFrontier(store_path)
    try:
        schedule = store.schedule_of("http://alpha.test/")
        assert schedule is not None and schedule.status is UrlStatus.DONE
        assert schedule.lane is UrlLane.FASTLANE
        assert schedule.next_due is not None and before <= schedule.next_due <= time.time()
        due = store.due(10, ["alpha.test"], time.time())
        assert due["alpha.test"][0].canonical == "http://alpha.test/"
    finally:
        store.close()


def test_an_unknown_page_of_a_seed_site_is_inserted_in_the_fastlane(
    store_path: Path, run: Run
) -> None:
    code, out, _ = run("recrawl", "--store", store_path, "http://bravo.test/news")
    assert code == 0 and out.startswith("1 of 1 URLs scheduled")
    schedule = SqliteFrontier(store_path).schedule_of("http://bravo.test/news")
    assert schedule is not None and schedule.lane is UrlLane.FASTLANE and schedule.depth == 0


def test_a_leased_page_is_left_alone_and_reported(store_path: Path, run: Run) -> None:
    store = SqliteFrontier(store_path)
    (leased,) = store.lease("bravo.test", 1, time.time())
    store.close()
    code, out, _ = run("recrawl", "--store", store_path, leased.fetch_url, "--json")
    assert code == 0
    assert json_lines(out) == [{"urls": 1, "scheduled": 0, "being_fetched": 1}]


def test_pages_outside_the_seed_are_refused_and_nothing_is_scheduled(
    store_path: Path, run: Run
) -> None:
    code, out, err = run(
        "recrawl", "--store", store_path, "http://charlie.test/", f"http://{POPULAR}/"
    )
    assert code == 1 and out == ""
    assert POPULAR in err and "nothing scheduled" in err
    schedule = SqliteFrontier(store_path).schedule_of("http://charlie.test/")
    assert schedule is not None and schedule.lane is UrlLane.DISCOVERY


def test_a_bad_url_is_a_usage_error(store_path: Path, run: Run) -> None:
    code, _, err = run("recrawl", "--store", store_path, "http://alpha.test/", "mailto:x@y.test")
    assert code == 2 and "courtier recrawl: bad URL 'mailto:x@y.test'" in err


def test_a_missing_store_is_a_usage_error(tmp_path: Path, run: Run) -> None:
    code, _, err = run("recrawl", "--store", tmp_path / "none.sqlite3", "http://alpha.test/")
    assert code == 2 and "no store there" in err
