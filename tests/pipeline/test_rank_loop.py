"""The crawl's ranking cycle on the store thread: a graph that cannot be ranked skips it."""

from __future__ import annotations

from pathlib import Path

import pytest

import courtier.graph.cycle as cycle
from courtier.frontier.sqlite_store import SqliteFrontier
from courtier.graph.pagerank import GraphError
from courtier.pipeline.feed.promotion import _ranked


def test_an_unrankable_graph_is_a_reason_not_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unrankable(*_args: object, **_kwargs: object) -> None:
        raise GraphError("no host to trust")

    monkeypatch.setattr(cycle, "ranking_cycle", unrankable)
    store = SqliteFrontier(tmp_path / "f.sqlite3")
    try:
        assert _ranked(store, 1, 0.0) == "no host to trust"
    finally:
        store.close()


def test_a_store_with_nothing_to_promote_ranks_to_an_empty_round(tmp_path: Path) -> None:
    store = SqliteFrontier(tmp_path / "f.sqlite3")
    try:
        store.add_sites(["a.test"], "seed", 0.0)
        round_ = _ranked(store, 1, 0.0)
        assert not isinstance(round_, str)
        assert round_.promoted == ()
    finally:
        store.close()
