"""PostgreSQL array literals built in one string, for statements that take arrays.

psycopg adapts a Python list element by element in Python (its list dumper), which cost
more of a PostgreSQL worker's CPU than the statements it sent: 11% of a worker's samples
were the list dumper, most of it for the 2,000 rows of an origin map saved after each
re-check (`py-spy` on `python bench/bench_rebook.py --size web --sites 2000 --page-bytes
6000 --duration 60 --store postgresql --workers 2`). A literal joined here is one text
parameter; the statement casts it (``%s::text[]``) and PostgreSQL parses it.

Each element is quoted (text) or written exactly (``repr`` of a float reads back as the same
double; ``inf`` and ``nan`` are PostgreSQL's spellings too); None is NULL.
"""

from __future__ import annotations

from collections.abc import Iterable


def quoted(value: str) -> str:
    """One element of a text[] literal: commas, braces, quotes and backslashes stay inside."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def text_array(values: Iterable[str | None]) -> str:
    return "{" + ",".join("NULL" if v is None else quoted(v) for v in values) + "}"


def float_array(values: Iterable[float | None]) -> str:
    return "{" + ",".join("NULL" if v is None else repr(float(v)) for v in values) + "}"


def int_array(values: Iterable[int | None]) -> str:
    return "{" + ",".join("NULL" if v is None else str(int(v)) for v in values) + "}"
