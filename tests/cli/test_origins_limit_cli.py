"""``courtier origins limit`` and ``courtier status --origin``: an origin's budget of the
operator's, written to the store with its action; one origin as its store knows it."""

from __future__ import annotations

import json
import time
from pathlib import Path

from cli_helpers import Run

from courtier.frontier.base import NewUrl, Outcome, UrlStatus
from courtier.frontier.sqlite_store import SqliteFrontier
from courtier.origins.cluster import Assignment


def _infer(path: Path, placed: dict[str, str]) -> None:
    store = SqliteFrontier(path)
    try:
        assignments = [Assignment(site, origin, 0.9, ()) for site, origin in placed.items()]
        store.save_origins(assignments, time.time(), {})
    finally:
        store.close()


def test_a_limit_names_the_origin_by_id_pin_or_site(store_path: Path, run: Run) -> None:
    _infer(store_path, {"alpha.test": "addr:127.0.0.9", "bravo.test": "addr:127.0.0.9"})
    assert (
        run("origins", "pin", "pair", "charlie.test", "delta.test", "--store", store_path)[0] == 0
    )
    code, out, err = run(
        "origins", "limit", "bravo.test", "--rate", "0.5", "--until", "1h", "--store", store_path
    )
    assert code == 0, err
    assert out.startswith("addr:127.0.0.9\trate 0.5 units/s until ") and "2 sites" in out
    code, out, _ = run(
        "origins", "limit", "pair", "--rate", "1", "--burst", "2", "--store", store_path, "--json"
    )
    assert code == 0
    assert json.loads(out) == {
        "origin": "pin:pair",
        "control": "rate 1 units/s burst 2 s",
        "sites": ["charlie.test", "delta.test"],
    }
    store = SqliteFrontier(store_path)
    try:
        controls = store.origin_controls()
        actions = [(a.action, a.target, dict(a.detail)) for a in store.control_actions()]
    finally:
        store.close()
    assert controls["pin:pair"].rate == 1.0 and controls["pin:pair"].burst == 2.0
    assert 3590 <= controls["addr:127.0.0.9"].rate_until - time.time() <= 3610  # type: ignore[operator]
    assert actions[-1] == ("origins limit", "pin:pair", {"rate": 1.0, "burst": 2.0})
    assert run("origins", "limit", "origin:pin:pair", "--clear", "--store", store_path)[0] == 0
    store = SqliteFrontier(store_path)
    try:
        assert not store.origin_controls()["pin:pair"].in_effect(time.time())
    finally:
        store.close()


def test_an_unknown_origin_or_a_bad_value_writes_nothing(store_path: Path, run: Run) -> None:
    code, _out, err = run("origins", "limit", "nowhere", "--rate", "1", "--store", store_path)
    assert code == 2 and "'nowhere': no origin of this store" in err
    assert len(err.strip().splitlines()) == 1
    assert run("origins", "limit", "pin:x", "--rate", "0", "--store", store_path)[0] == 2
    assert run("origins", "limit", "x", "--clear", "--burst", "1", "--store", store_path)[0] == 2
    store = SqliteFrontier(store_path)
    try:
        assert store.origin_controls() == {} and store.control_actions() == []
    finally:
        store.close()


def test_status_of_an_origin_sums_its_sites(store_path: Path, run: Run) -> None:
    now = time.time()
    _infer(store_path, {"bravo.test": "addr:127.0.0.9", "charlie.test": "addr:127.0.0.9"})
    store = SqliteFrontier(store_path)
    try:
        urls = [NewUrl(f"http://bravo.test/p{n}", f"http://bravo.test/p{n}", "bravo.test", 1)
                for n in range(3)]  # fmt: skip
        store.write_batch(urls, [], [], now - 100)
        leased = store.lease("bravo.test", 1, now - 30)
        store.record_fetch([Outcome(leased[0].id, UrlStatus.DONE, 200, now - 20)])
        store.save_clock_floors({"origin:addr:127.0.0.9": now + 120}, now)
    finally:
        store.close()
    assert run("site", "pause", "charlie.test", "--store", store_path)[0] == 0
    config = ["-s", "limits.overrides=['origin:addr:127.0.0.9 => rate=3 burst=1']"]
    code, out, err = run(
        "status", "--store", store_path, "--origin", "charlie.test", "--json", *config
    )
    assert code == 0, err
    status = json.loads(out)
    assert status["origin"] == "addr:127.0.0.9"
    assert status["sites"] == ["bravo.test", "charlie.test"]
    # bravo: its root and three pages, one fetched 20 s ago; charlie: its root
    assert status["urls"] == {"done": 1, "queued": 4} and status["queue"] == 4
    assert status["fetched_last_minute"] == 1
    assert status["budget"] == {"rate": 3.0, "burst": 1.0, "source": "override", "operator": "-"}
    assert 100 <= status["floor_s"] <= 120
    assert status["site_controls"] == {"charlie.test": "paused"}
    assert "held_by" not in status  # one machine's crawl: its store holds every site
    assert (
        run("origins", "limit", "addr:127.0.0.9", "--rate", "0.25", "--store", store_path)[0] == 0
    )
    code, text, _ = run("status", "--store", store_path, "--origin", "addr:127.0.0.9")
    assert code == 0
    assert "origin addr:127.0.0.9: 2 sites: bravo.test, charlie.test" in text
    assert "budget: 0.25 cost units/s, burst 0 s (operator)" in text
    assert "queue 4" in text and "no start for" in text and "origins limit addr:127.0.0.9" in text
    code, text, _ = run("status", "--store", store_path, "--json")
    assert json.loads(text)["origin_controls"] == {"addr:127.0.0.9": "rate 0.25 units/s"}


def test_status_reads_the_recent_rate_from_the_request_log(
    store_path: Path, run: Run, tmp_path: Path
) -> None:
    import pyarrow.parquet as pq

    from courtier.observe.requestlog import REQUESTS_DIR
    from courtier.observe.rows import SCHEMA

    _infer(store_path, {"alpha.test": "site:alpha.test"})
    now = time.time()
    out = tmp_path / "out"
    (out / REQUESTS_DIR).mkdir(parents=True)
    rows = {name: [] for name in SCHEMA.names}  # type: ignore[var-annotated]
    for n, (ago, origin, units) in enumerate(
        [(10, "site:alpha.test", 2.0), (20, "site:alpha.test", 4.0), (90, "site:alpha.test", 4.0),
         (5, "site:other.test", 2.0)]
    ):  # fmt: skip
        row = _row(now - ago, origin, units, n)
        for name in SCHEMA.names:
            rows[name].append(row.get(name))
    pq.write_table(_table(rows, SCHEMA), out / REQUESTS_DIR / "part-1.parquet")
    code, text, err = run(
        "status", "--store", store_path, "--origin", "site:alpha.test", "--out", out, "--json"
    )
    assert code == 0, err
    log = json.loads(text)["requests_last_minute"]
    assert log == {"requests": 2, "units": 6.0, "units_per_s": 0.1, "use": 0.05}


def test_an_unknown_origin_is_one_line_and_exit_2(store_path: Path, run: Run) -> None:
    code, out, err = run("status", "--store", store_path, "--origin", "pin:none")
    assert code == 2 and out == ""
    assert "--origin 'pin:none': no origin of this store" in err
    assert len(err.strip().splitlines()) == 1


def _row(at: float, origin: str, units: float, n: int) -> dict[str, object]:
    import datetime as dt

    return {
        "time": dt.datetime.fromtimestamp(at, dt.UTC), "run": "r", "worker": "w",
        "site": origin.partition(":")[2], "origin": origin, "lane": "site", "kind": "page",
        "url": f"http://x.test/{n}", "keys": [], "key_types": [], "wait_s": 0.0,
        "late_s": 0.0, "cost_class": "detail", "cost_units": units, "extra_units": 0.0,
        "status_class": "2xx", "reused": False, "bytes": 0, "truncated": False, "attempt": 1,
    }  # fmt: skip


def _table(rows: dict[str, list[object]], schema):  # type: ignore[no-untyped-def]
    """The rows, with a plain value in every required column the test does not care about."""
    import pyarrow as pa

    for field in schema:
        if not field.nullable and all(v is None for v in rows[field.name]):
            blank = [] if pa.types.is_list(field.type) else pa.scalar(0).cast(field.type).as_py()
            if pa.types.is_string(field.type):
                blank = ""
            rows[field.name] = [blank] * len(rows[field.name])
    return pa.Table.from_pydict(rows, schema=schema)
