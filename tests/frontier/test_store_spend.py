"""What a crawl spent of its budgets, kept by every frontier store (SQLite and PostgreSQL):
totals over every run that only ever add up, and each site's URLs fetched at least once."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest

from courtier.frontier.base import FrontierStore, NewUrl, Outcome, UrlStatus
from courtier.frontier.postgres_store import PostgresFrontier
from courtier.frontier.sqlite_store import SqliteFrontier

T0 = 1_800_000_000.0
Opener = Callable[[], FrontierStore]


@pytest.fixture(params=["sqlite", "postgres"])
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    opened: list[FrontierStore] = []
    if request.param == "sqlite":

        def opener() -> FrontierStore:
            opened.append(SqliteFrontier(tmp_path / "frontier.sqlite3"))
            return opened[-1]

        yield opener
        for store in opened:
            store.close()
        return
    dsn: str = request.getfixturevalue("postgres_dsn")
    schema = f"t_{uuid.uuid4().hex[:12]}"

    def pg_opener() -> FrontierStore:
        opened.append(PostgresFrontier(dsn, schema=schema))
        return opened[-1]

    yield pg_opener
    for store in opened:
        store.close()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE".encode())


def test_spend_adds_up_over_runs_and_workers(open_store: Opener) -> None:
    first = open_store()
    assert first.spent() == {"requests": 0, "pages": 0, "bytes": 0}
    assert first.add_spent({"requests": 10, "pages": 4, "bytes": 5000}) == {
        "requests": 10,
        "pages": 4,
        "bytes": 5000,
    }
    second = open_store()  # a later run, or another worker of the fleet
    assert second.add_spent({"requests": 3, "bytes": 1}) == {
        "requests": 13,
        "pages": 4,
        "bytes": 5001,
    }
    assert first.spent() == second.spent()
    assert second.add_spent({}) == second.spent()  # nothing to add, nothing written
    with pytest.raises(ValueError):
        second.add_spent({"dollars": 1})


def test_a_sites_pages_are_its_urls_fetched_at_least_once(open_store: Opener) -> None:
    store = open_store()
    urls = [
        NewUrl(f"http://{site}/{n}", f"http://{site}/{n}", site, 1)
        for site in ("a.test", "b.test")
        for n in range(4)
    ]
    store.write_batch(urls, [], [], T0)
    leased = store.lease_due(10, ["a.test", "b.test"], T0)
    a, b = ([u.id for u in leased[site]] for site in ("a.test", "b.test"))
    store.record_fetch(
        [
            Outcome(a[0], UrlStatus.DONE, 200, T0, "f"),
            Outcome(a[1], UrlStatus.DONE, 404, T0),
            Outcome(a[2], UrlStatus.FAILED, None, T0),  # asked, never answered: fetched
            Outcome(b[0], UrlStatus.REFUSED, None, T0),  # robots.txt said no: no request
            Outcome(b[1], UrlStatus.DONE, 200, T0, "g"),
        ]
    )
    store.release_leases()
    assert store.fetched_per_site() == {"a.test": 3, "b.test": 1}
    assert store.fetched_per_site(["b.test", "c.test"]) == {"b.test": 1}
    # A fetched page leased again for its refresh is still fetched.
    assert store.lease_due(10, ["b.test"], T0 + 400 * 86_400.0)
    assert store.fetched_per_site(["b.test"]) == {"b.test": 1}
