"""From a request event to a request-log row: every column, every kind of request."""

from __future__ import annotations

import pyarrow as pa
from observe_helpers import T0, event

from courtier.observe.rows import SCHEMA, RowMaker, record_batch, status_class, target_of
from courtier.politeness.keys import CostModel

BUDGETS = {"origin:o1": 2.0}


def maker() -> RowMaker:
    return RowMaker(CostModel(), BUDGETS.get)


def test_a_page_row_carries_keys_costs_phases_and_budget():
    row = maker().row_of(event(wait=0.4, late=0.002, path="/list/3", cost=2.0))
    assert row.time == T0
    assert row.keys == ["site:a.test", "origin:o1"]
    assert row.key_types == ["site", "origin"]
    assert (row.wait_s, row.late_s) == (0.4, 0.002)
    assert row.cost_class == "index"
    assert row.cost_units == 2.0 and row.extra_units == 2.0  # a listing costs 4: charged late
    assert row.origin_budget == 2.0
    assert row.status == 200 and row.status_class == "2xx"
    assert (row.dns_s, row.connect_s, row.tls_s) == (0.001, 0.002, None)
    assert row.first_byte_s == 0.01 and row.total_s is not None
    assert row.bytes == len(b"<html>x</html>")
    assert row.lane == "discovery" and row.refusal is None


def test_robots_txt_is_a_row_of_its_own_class():
    row = maker().row_of(event(kind="robots", path="/robots.txt", cost=1.0, lane=""))
    assert row.cost_class == "robots" and row.extra_units == 0.0
    assert row.lane == "robots"


def test_a_refused_host_is_a_row_without_an_answer():
    row = maker().row_of(event(refusal="loopback"))
    assert row.status is None and row.status_class == "refused"
    assert row.refusal == "loopback" and not row.sent
    assert row.bytes == 0 and row.total_s is None


def test_no_answer_is_an_error_row():
    row = maker().row_of(event(status=None))
    assert row.status_class == "error" and row.error_kind == "ClientConnectorError"
    assert row.total_s == 0.5


def test_media_rows_name_their_bucket_and_cache_verdict():
    store = maker().row_of(
        event(
            "s3.store.test",
            kind="media",
            keys=("bucket:s3/pics",),
            origin=None,
            cost=1.0,
            path="/pics/1.jpg",
            content_type="image/jpeg",
        )
    )
    assert store.bucket == "s3/pics" and store.cost_class == "image"
    cdn = maker().row_of(
        event("cdn.test", kind="media", headers=(("X-Cache", "HIT"),), content_type="image/png")
    )
    assert cdn.cache == "hit"


def test_status_classes_and_targets():
    assert status_class(503, None) == "5xx"
    assert status_class(None, None) == "error"
    assert status_class(None, "private") == "refused"
    assert target_of("http://a.test:8080/x?y=1#frag") == "/x?y=1"
    assert target_of("http://a.test") == "/"


def test_rows_become_one_arrow_batch_in_the_schema():
    rows = [maker().row_of(event(at=T0 + i)) for i in range(3)]
    rows.append(maker().row_of(event(refusal="private")))
    batch = record_batch(rows, "run-1", "worker-1")
    assert batch.schema == SCHEMA
    table = pa.Table.from_batches([batch])
    assert table.column("run").to_pylist() == ["run-1"] * 4
    assert table.column("time").type == pa.timestamp("us", tz="UTC")
    assert table.column("time")[0].as_py().timestamp() == T0
    assert table.column("status").to_pylist() == [200, 200, 200, None]
