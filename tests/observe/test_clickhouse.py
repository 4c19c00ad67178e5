"""The request log's files load into ClickHouse with the DDL docs/observe.md gives (chDB)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from observe_helpers import T0, event

from courtier.observe.query import run_query
from courtier.observe.requestlog import RequestLogWriter
from courtier.observe.rows import RowMaker
from courtier.observe.settings import ObserveSettings
from courtier.politeness.keys import CostModel

try:
    import chdb.session as chdb_session
except ImportError:  # chDB is in the test extra: missing, the test fails saying so (no skip)
    chdb_session = None

DOC = Path(__file__).resolve().parents[2] / "docs" / "observe.md"


def documented_ddl() -> str:
    blocks = re.findall(r"```sql\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    return next(b for b in blocks if b.lstrip().startswith("CREATE TABLE courtier_requests"))


@pytest.fixture
def out(tmp_path: Path) -> Path:
    maker = RowMaker(CostModel(), lambda key: 2.0 if key.startswith("origin:") else None)
    settings = ObserveSettings(rotate_rows=40)  # several files
    log = RequestLogWriter(tmp_path, settings, run="r1", worker="w1", clock=lambda: T0)
    for i in range(100):
        site = f"s{i % 7}.test"
        status = (200, 200, 404, 503, None)[i % 5]
        log.add(maker.row_of(event(site, T0 + i * 0.1, status=status, latency=0.001 * i)))
    log.add(maker.row_of(event("bad.test", T0 + 11, refusal="private")))
    log.add(
        maker.row_of(
            event("s3.test", T0 + 12, kind="media", keys=("bucket:s3/b",), origin=None, cost=1)
        )
    )
    log.close()
    assert len(log.files) == 3
    return tmp_path


def test_the_documented_table_loads_every_file_and_agrees_with_duckdb(out: Path, tmp_path: Path):
    if chdb_session is None:
        pytest.fail("the ClickHouse test needs chDB: pip install -e '.[test]'", pytrace=False)
    session = chdb_session.Session(str(tmp_path / "chdb"))
    try:
        session.query(documented_ddl())
        files = str(out / "requests" / "*.parquet")
        session.query(f"INSERT INTO courtier_requests SELECT * FROM file('{files}', Parquet)")
        result = session.query(
            "SELECT count() AS n, countIf(status IS NULL) AS no_status, "
            "countIf(refusal = 'private') AS refused, sum(length(keys)) AS keys, "
            "round(sum(cost_units + extra_units), 3) AS units, "
            "toString(min(time)) AS first, anyIf(bucket, bucket IS NOT NULL) AS bucket, "
            "uniqExact(site) AS sites FROM courtier_requests",
            "JSONEachRow",
        )
        clickhouse = json.loads(str(result).strip())
        by_status = session.query(
            "SELECT status_class, count() AS n FROM courtier_requests GROUP BY status_class "
            "ORDER BY status_class",
            "JSONEachRow",
        )
        ch_classes = [json.loads(line) for line in str(by_status).strip().splitlines()]
    finally:
        session.close()
    _columns, rows = run_query(
        out,
        "SELECT count(*), count(*) FILTER (WHERE status IS NULL), "
        "count(*) FILTER (WHERE refusal = 'private'), sum(len(keys)), "
        "round(sum(cost_units + extra_units), 3), count(DISTINCT site) FROM requests",
    )
    n, no_status, refused, keys, units, sites = rows[0]
    assert int(clickhouse["n"]) == n == 102
    assert int(clickhouse["no_status"]) == no_status
    assert int(clickhouse["refused"]) == refused == 1
    assert int(clickhouse["keys"]) == keys
    assert float(clickhouse["units"]) == pytest.approx(units)
    assert int(clickhouse["sites"]) == sites
    assert clickhouse["bucket"] == "s3/b"
    assert clickhouse["first"].startswith("2027-01-15 08:00:00")
    _c, duck_classes = run_query(
        out, "SELECT status_class, count(*) FROM requests GROUP BY 1 ORDER BY 1"
    )
    assert [(c["status_class"], int(c["n"])) for c in ch_classes] == duck_classes
