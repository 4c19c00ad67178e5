"""``courtier status --site``: one site as its store knows it."""

from __future__ import annotations

import json
import time

from cli_helpers import Run

from courtier.frontier.base import NewUrl, Outcome, StoredRobots, UrlStatus
from courtier.frontier.sqlite_store import SqliteFrontier


def test_one_site_its_urls_fetches_robots_and_kept_pause(store_path, run: Run) -> None:
    now = time.time()
    store = SqliteFrontier(store_path)
    try:
        urls = [NewUrl(f"http://bravo.test/p{n}", f"http://bravo.test/p{n}", "bravo.test", 1)
                for n in range(3)]  # fmt: skip
        store.write_batch(urls, [], [], now - 100)
        leased = store.lease("bravo.test", 2, now - 30)
        store.record_fetch([Outcome(leased[0].id, UrlStatus.DONE, 200, now - 30)])
        store.save_robots([StoredRobots("bravo.test", 503, b"", now - 50, now + 550)])
        store.save_clock_floors({"site:bravo.test": now + 120}, now)
    finally:
        store.close()
    code, out, err = run("status", "--store", store_path, "--site", "BRAVO.test", "--json")
    assert code == 0, err
    status = json.loads(out)
    assert status["site"] == "bravo.test" and status["state"] == "seed"
    assert status["urls"] == {"queued": 2, "leased": 1, "done": 1}
    assert status["fetched_last_minute"] == 1 and 29 <= status["last_fetch_s_ago"] <= 40
    assert status["robots"]["status"] == 503
    assert status["robots"]["meaning"].startswith("unreachable")
    assert 100 <= status["floors"]["site:bravo.test"] <= 120
    code, text, _ = run("status", "--store", store_path, "--site", "bravo.test")
    assert code == 0 and "robots.txt: 503 (unreachable" in text and "no start for" in text


def test_a_site_the_store_does_not_know_is_bad_input(store_path, run: Run) -> None:
    code, _out, err = run("status", "--store", store_path, "--site", "nowhere.test")
    assert code == 2 and "nowhere.test: not in this store" in err
