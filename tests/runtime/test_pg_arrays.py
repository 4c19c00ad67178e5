"""Array literals read back by a real PostgreSQL exactly as the values they were built from."""

from __future__ import annotations

import math
from collections.abc import Iterator

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from courtier.runtime.pg_arrays import float_array, int_array, text_array

TEXT = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)))


@pytest.fixture(scope="module")
def conn(postgres_dsn: str) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    with psycopg.connect(postgres_dsn, autocommit=True) as connection:
        yield connection


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.none() | TEXT, max_size=8))
def test_text_arrays_read_back_as_written(
    conn: psycopg.Connection[tuple[object, ...]], values: list[str | None]
) -> None:
    row = conn.execute("SELECT %s::text[]", (text_array(values),)).fetchone()
    assert row is not None and row[0] == values


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.none() | st.floats(allow_nan=False), max_size=8))
def test_float_arrays_read_back_to_the_same_doubles(
    conn: psycopg.Connection[tuple[object, ...]], values: list[float | None]
) -> None:
    row = conn.execute("SELECT %s::float8[]", (float_array(values),)).fetchone()
    assert row is not None and row[0] == values


def test_not_a_number_and_integers_with_nulls(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    row = conn.execute(
        "SELECT %s::float8[], %s::bigint[]",
        (float_array([math.nan, -math.inf]), int_array([2**62, None, -1])),
    ).fetchone()
    assert row is not None
    assert math.isnan(row[0][0]) and row[0][1] == -math.inf
    assert row[1] == [2**62, None, -1]


def test_empty_arrays(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    row = conn.execute("SELECT %s::text[], %s::int[]", (text_array([]), int_array([]))).fetchone()
    assert row == ([], [])


def test_the_text_null_stays_text(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    values = ["NULL", None, 'a,"b"}', "\\"]
    row = conn.execute("SELECT %s::text[]", (text_array(values),)).fetchone()
    assert row is not None and row[0] == values
