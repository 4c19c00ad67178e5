from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from courtier.frontier.base import HorizonLink, NewUrl, Outcome, SiteState, UrlStatus
from courtier.frontier.sqlite_store import SqliteFrontier


def _url(path: str, site: str = "a.test", depth: int = 0) -> NewUrl:
    return NewUrl(f"http://{site}{path}", f"http://{site}{path}", site, depth)


def test_lease_hands_out_shallowest_first_and_never_twice(tmp_path: Path):
    store = SqliteFrontier(tmp_path / "f.sqlite3")
    store.write_batch(
        [_url("/deep", depth=3), _url("/", depth=0), _url("/mid", depth=1)], [], [], 0.0
    )
    first = store.lease("a.test", 2)
    assert [u.fetch_url for u in first] == ["http://a.test/", "http://a.test/mid"]
    second = store.lease("a.test", 5)
    assert [u.fetch_url for u in second] == ["http://a.test/deep"]
    assert store.lease("a.test", 5) == []


def test_duplicate_urls_are_written_once_and_report_which_sites_got_new_work(tmp_path: Path):
    store = SqliteFrontier(tmp_path / "f.sqlite3")
    assert store.write_batch([_url("/"), _url("/", site="b.test")], [], [], 0.0) == [
        "a.test",
        "b.test",
    ]
    assert store.write_batch([_url("/")], [], [], 0.0) == []
    assert store.counts()["queued"] == 2


def test_released_leases_resume_after_a_stop(tmp_path: Path):
    path = tmp_path / "f.sqlite3"
    store = SqliteFrontier(path)
    store.write_batch([_url("/"), _url("/x")], [], [], 0.0)
    leased = store.lease("a.test", 10)
    store.write_batch([], [Outcome(leased[0].id, UrlStatus.DONE, 200, 1.0)], [], 1.0)
    store.close()
    store = SqliteFrontier(path)
    assert store.release_leases() == 1
    assert [u.fetch_url for u in store.lease("a.test", 10)] == ["http://a.test/x"]


def test_horizon_links_are_recorded_with_host_graph_counts(tmp_path: Path):
    store = SqliteFrontier(tmp_path / "f.sqlite3")
    store.add_sites(["a.test"], SiteState.SEED, 0.0)
    links = [
        HorizonLink("http://out.test/", "out.test", "a.test"),
        HorizonLink("http://out.test/", "out.test", "a.test"),
        HorizonLink("http://other.test/", "other.test", "a.test"),
    ]
    store.write_batch([], [], links, 0.0)
    assert store.horizon_sites() == [("out.test", 2), ("other.test", 1)]
    assert set(store.sites_in_state(SiteState.HORIZON)) == {"out.test", "other.test"}
    # A horizon site that becomes a seed is promoted; a seed never falls back to horizon.
    store.add_sites(["out.test"], SiteState.SEED, 1.0)
    store.write_batch([], [], [HorizonLink("http://a.test/", "a.test", "x.test")], 1.0)
    assert set(store.sites_in_state(SiteState.SEED)) == {"a.test", "out.test"}


def test_clock_floors_are_saved_and_loaded_on_the_store_thread(tmp_path: Path):
    """The engine opens the store on one thread and calls it from its single store thread."""
    path = tmp_path / "f.sqlite3"
    store = SqliteFrontier(path)
    with ThreadPoolExecutor(1) as store_thread:
        store_thread.submit(store.save_clock_floors, {"site:a.test": 130.0}, 100.0).result()
        assert store_thread.submit(store.load_clock_floors, 100.0).result() == {
            "site:a.test": 130.0
        }
        store_thread.submit(store.close).result()
    reopened = SqliteFrontier(path)
    assert reopened.load_clock_floors(120.0) == {"site:a.test": 130.0}
    reopened.close()
