"""``courtier query``: DuckDB over the request log, the named queries answer their questions."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from observe_helpers import T0, event

from courtier.cli import query as query_cli
from courtier.inputs import InputError
from courtier.observe.query import NAMED_QUERIES, QueryError, connect, run_query
from courtier.observe.requestlog import RequestLogWriter
from courtier.observe.rows import RowMaker
from courtier.observe.settings import ObserveSettings
from courtier.politeness.keys import CostModel

START = T0 - T0 % 60  # on a minute


def write_run(out: Path) -> None:
    """Two minutes: origin a spends 2 units/s, b 1 unit/s in minute 1 and 0.5 in minute 2;
    site slow.test answers in 10 ms in the first half and 400 ms in the second."""
    maker = RowMaker(CostModel(), lambda key: {"origin:a": 2.0, "origin:b": 1.0}.get(key))
    log = RequestLogWriter(out, ObserveSettings(), run="r", worker="w", clock=lambda: START)
    for second in range(120):
        at = START + second
        log.add(maker.row_of(event("a1.test", at, origin="a", path="/item/1", cost=2.0)))
        if second < 60 or second % 2 == 0:
            b = event(
                "b1.test",
                at + 0.5,
                origin="b",
                path="/img/2.jpg",
                cost=1.0,
                content_type="image/jpeg",
            )
            log.add(maker.row_of(b))
        if second % 10 == 0:
            latency = 0.01 if second < 60 else 0.4
            log.add(maker.row_of(event("slow.test", at + 0.2, origin="c", latency=latency)))
    log.close()


@pytest.fixture
def out(tmp_path: Path) -> Path:
    write_run(tmp_path)
    return tmp_path


def run_cli(*words: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser()
    query_cli.register(parser.add_subparsers())
    args = parser.parse_args(["query", *words])
    code = args.handler(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_units_per_second_per_origin_per_minute(out, capsys):
    code, stdout, _err = run_cli("--out", str(out), "origin-units", "--json", capsys=capsys)
    assert code == 0
    rows = [json.loads(line) for line in stdout.splitlines()]
    by = {(r["origin"], r["minute"][11:16]): r for r in rows}
    first, second = rows[0]["minute"][11:16], rows[-1]["minute"][11:16]
    assert first != second
    # the last minute ends at the last request (59.5 s in): divided by what the run covered
    assert by[("a", first)]["units_per_s"] == pytest.approx(2.0, abs=0.05)
    assert by[("a", first)]["utilisation"] == pytest.approx(1.0, abs=0.03)
    assert by[("b", first)]["units_per_s"] == pytest.approx(1.0, abs=0.03)
    assert by[("b", second)]["units_per_s"] == pytest.approx(0.5, abs=0.03)
    assert by[("b", second)]["budget"] == 1.0


def test_sites_whose_p95_rose_most(out):
    columns, rows = run_query(out, "p95-rise")
    assert columns[:2] == ["site", "first_n"]
    top = dict(zip(columns, rows[0], strict=True))
    assert top["site"] == "slow.test"
    assert top["p95_first_ms"] == pytest.approx(10.0) and top["p95_second_ms"] == 400.0
    assert top["rise_ms"] == pytest.approx(390.0) and top["ratio"] == pytest.approx(40.0)


def test_every_named_query_runs_on_a_run_and_on_an_empty_directory(out, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    for name in NAMED_QUERIES:
        run_query(out, name)
        assert run_query(empty, name)[1] == []


def test_duckdb_never_installs_or_loads_extensions_by_itself(out):
    con = connect(out)
    try:
        settings = dict(
            con.execute(
                "SELECT name, value FROM duckdb_settings() WHERE name IN "
                "('autoinstall_known_extensions', 'autoload_known_extensions')"
            ).fetchall()
        )
    finally:
        con.close()
    assert settings == {
        "autoinstall_known_extensions": "false",
        "autoload_known_extensions": "false",
    }


def test_plain_sql_a_table_and_errors(out, capsys):
    code, stdout, _ = run_cli(
        "--out",
        str(out),
        "SELECT site, count(*) AS n FROM requests GROUP BY 1 ORDER BY 1",
        capsys=capsys,
    )
    assert code == 0 and "a1.test" in stdout and "120" in stdout and "3 rows" in stdout
    with pytest.raises(InputError, match=r"SQL: .*nope"):
        run_cli("--out", str(out), "SELECT nope FROM requests", capsys=capsys)
    with pytest.raises(QueryError):
        run_query(out, "SELEC")
    with pytest.raises(InputError, match="--out"):
        run_cli("--out", str(out / "missing"), "status-mix", capsys=capsys)
    with pytest.raises(InputError, match="--list"):
        run_cli("--out", str(out), capsys=capsys)


def test_list_names_the_queries(capsys):
    code, stdout, _ = run_cli("--list", capsys=capsys)
    assert code == 0
    for name in ("origin-units", "p95-rise"):
        assert name in stdout


def test_anomalies_are_a_view_too(out):
    (out / "anomalies.jsonl").write_text(
        json.dumps(
            {
                "time": T0,
                "scope": "site",
                "name": "x.test",
                "signal": "latency",
                "state": "raised",
                "value": 1.0,
                "baseline": 0.1,
                "threshold": 0.2,
                "samples": 5,
                "origin": None,
                "detail": "slow",
            }
        )
        + "\n"
    )
    columns, rows = run_query(out, "anomalies")
    assert rows and dict(zip(columns, rows[0], strict=True))["name"] == "x.test"
