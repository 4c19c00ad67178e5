"""`courtier seed add | flag | list`: requested hosts, critical pages, the listed seed."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import ONCE, POPULAR, SEEDS, Run, json_lines

from courtier.frontier.base import SiteState, UrlStatus
from courtier.frontier.refresh import Importance
from courtier.frontier.sqlite_store import SqliteFrontier


def _store(path: Path) -> SqliteFrontier:
    return SqliteFrontier(path)


def test_add_requests_each_host_and_queues_its_root_at_depth_0(tmp_path: Path, run: Run) -> None:
    path = tmp_path / "new" / "frontier.sqlite3"
    code, out, _ = run("seed", "add", "--store", path, "Example.TEST.", "shop.test:8080", "--json")
    assert code == 0
    lines = json_lines(out)
    assert lines == [
        {
            "site": "example.test",
            "state": "requested",
            "root_url": "http://example.test/",
            "in_scope": True,
        },
        {
            "site": "shop.test:8080",
            "state": "requested",
            "root_url": "http://shop.test:8080/",
            "in_scope": True,
        },
    ]
    store = _store(path)
    try:
        assert store.site_states() == {"example.test": "requested", "shop.test:8080": "requested"}
        root = store.schedule_of("http://shop.test:8080/")
        assert root is not None and root.depth == 0 and root.status is UrlStatus.QUEUED
    finally:
        store.close()


def test_add_takes_the_site_of_a_url_and_queues_its_root(store_path: Path, run: Run) -> None:
    code, out, _ = run("seed", "add", "--store", store_path, "https://Fresh.test/a/b?c=d")
    assert code == 0 and out.split("\t")[0] == "fresh.test"
    store = _store(store_path)
    try:
        assert store.schedule_of("https://fresh.test/") is not None
        assert store.schedule_of("https://fresh.test/a/b?c=d") is None
    finally:
        store.close()


def test_add_moves_a_horizon_host_to_requested_and_leaves_a_seed_a_seed(
    store_path: Path, run: Run
) -> None:
    code, _, _ = run("seed", "add", "--store", store_path, POPULAR, SEEDS[0])
    states = _store(store_path).site_states()
    assert code == 0
    assert states[POPULAR] == "requested" and states[SEEDS[0]] == "seed"


def test_add_leaves_a_suspended_host_suspended_and_exits_1(store_path: Path, run: Run) -> None:
    store = _store(store_path)
    store.set_site_state(SEEDS[1], SiteState.SUSPENDED)
    store.close()
    code, out, _ = run("seed", "add", "--store", store_path, SEEDS[1], ONCE, "--json")
    assert code == 1
    by_site = {line["site"]: line for line in json_lines(out)}
    assert by_site[SEEDS[1]]["state"] == "suspended" and by_site[SEEDS[1]]["in_scope"] is False
    assert by_site[ONCE]["state"] == "requested"


@pytest.mark.parametrize("host", ["exa mple.test", "a..b.test", "ftp://x.test/", "x.test:99999"])
def test_add_refuses_a_bad_host_and_writes_nothing(tmp_path: Path, run: Run, host: str) -> None:
    path = tmp_path / "frontier.sqlite3"
    code, out, err = run("seed", "add", "--store", path, "good.test", host)
    assert code == 2 and out == ""
    assert "courtier seed add: bad host" in err
    assert not path.exists()


def test_flag_marks_known_pages_critical(store_path: Path, run: Run) -> None:
    code, out, _ = run("seed", "flag", "--store", store_path, "HTTP://ALPHA.test/", "--json")
    assert code == 0
    assert json_lines(out) == [
        {"url": "http://alpha.test/", "importance": "critical", "queued": False}
    ]
    schedule = _store(store_path).schedule_of("http://alpha.test/")
    assert schedule is not None and schedule.importance is Importance.CRITICAL
    # A fetched page's next refresh comes under the critical ceiling (7 days) at once.
    assert schedule.refresh_interval is not None and schedule.refresh_interval <= 7 * 86400


def test_flag_queues_an_unknown_page_of_a_seed_site(store_path: Path, run: Run) -> None:
    code, out, _ = run("seed", "flag", "--store", store_path, "http://bravo.test/prices")
    assert code == 0 and "(queued)" in out
    schedule = _store(store_path).schedule_of("http://bravo.test/prices")
    assert schedule is not None
    assert schedule.importance is Importance.CRITICAL and schedule.status is UrlStatus.QUEUED


def test_flag_refuses_pages_outside_the_seed_and_flags_nothing(store_path: Path, run: Run) -> None:
    code, _, err = run(
        "seed", "flag", "--store", store_path, "http://alpha.test/", f"http://{ONCE}/page"
    )
    assert code == 1 and "not in the seed" in err and "nothing flagged" in err
    store = _store(store_path)
    try:
        known = store.schedule_of("http://alpha.test/")
        assert known is not None and known.importance is Importance.ORDINARY
        assert store.schedule_of(f"http://{ONCE}/page") is None
    finally:
        store.close()


def test_flag_refuses_a_bad_url(store_path: Path, run: Run) -> None:
    code, _, err = run("seed", "flag", "--store", store_path, "http://alpha.test/", "http:///")
    assert code == 2 and "bad URL 'http:///'" in err


def test_list_shows_the_seed_by_default_and_other_states_on_request(
    store_path: Path, run: Run
) -> None:
    code, out, _ = run("seed", "list", "--store", store_path, "--json")
    assert code == 0
    lines = json_lines(out)
    assert lines == [{"site": s, "state": "seed"} for s in sorted(SEEDS)]
    _, out, _ = run("seed", "list", "--store", store_path, "--state", "horizon")
    assert f"{POPULAR}\thorizon" in out.splitlines()
    assert not any(line.endswith("\tseed") for line in out.splitlines())


def test_list_refuses_an_unknown_state(store_path: Path, run: Run) -> None:
    code, _, err = run("seed", "list", "--store", store_path, "--state", "promoted")
    assert code == 2 and "invalid choice" in err


@pytest.mark.parametrize("command", [["list"], ["flag", "http://a.test/"]])
def test_commands_other_than_add_need_an_existing_store(
    tmp_path: Path, run: Run, command: list[str]
) -> None:
    missing = tmp_path / "frontier.sqlite3"
    code, _, err = run("seed", *command, "--store", missing)
    assert code == 2 and "no store there" in err
    assert not missing.exists()


def test_popular_marks_the_top_fraction_of_a_retrieval_feed(
    tmp_path: Path, store_path: Path, run: Run
) -> None:
    feed = tmp_path / "counts.txt"
    feed.write_text(
        "# url count\n"
        + "".join(
            f"http://{site}/ {count}\n" for site, count in zip(SEEDS, (900, 50, 7, 3), strict=False)
        )
        + "http://unknown.test/ 5000\n"
    )
    code, out, _ = run(
        "seed",
        "popular",
        "--store",
        store_path,
        "--counts",
        feed,
        "--top-fraction",
        "0.4",
        "--json",
    )
    assert code == 0
    rows = json_lines(out)
    assert [r["url"] for r in rows] == ["http://alpha.test/", "http://unknown.test/"]
    assert rows[1]["known"] is False
    store = _store(store_path)
    try:
        schedule = store.schedule_of("http://alpha.test/")
        assert schedule is not None and schedule.importance is Importance.POPULAR
        other = store.schedule_of("http://bravo.test/")
        assert other is not None and other.importance is Importance.ORDINARY
    finally:
        store.close()


@pytest.mark.parametrize("line", ["http://alpha.test/", "http://alpha.test/ many", "a b c"])
def test_popular_rejects_a_malformed_feed_line(
    tmp_path: Path, store_path: Path, run: Run, line: str
) -> None:
    feed = tmp_path / "counts.txt"
    feed.write_text(line + "\n")
    code, _out, err = run("seed", "popular", "--store", store_path, "--counts", feed)
    assert code == 2 and "COUNT" in err


def test_seed_and_recrawl_work_on_a_postgresql_store(postgres_dsn: str, run: Run) -> None:
    """The store a fleet of workers shares takes the same commands as a SQLite file."""
    from pg import fresh_database

    with fresh_database(postgres_dsn, "seedcli") as url:
        code, out, err = run("seed", "add", "--store", url, "shop.test", "--json")
        assert code == 0, err
        assert json_lines(out)[0]["state"] == "requested"
        code, out, err = run("seed", "list", "--store", url, "--state", "requested", "--json")
        assert code == 0 and json_lines(out) == [{"site": "shop.test", "state": "requested"}]
        code, _out, err = run("seed", "flag", "--store", url, "http://shop.test/item/1")
        assert code == 0, err
        code, _out, err = run("recrawl", "--store", url, "http://shop.test/")
        assert code == 0, err
        code, _out, err = run("recrawl", "--store", url, "http://elsewhere.test/")
        assert code == 1 and "elsewhere.test" in err  # outside the seed, as on SQLite
        code, _out, err = run("rank", "--store", url)
        assert code == 0, err
