"""The crawl writes a site's origin when it changed, not at every inference."""

from __future__ import annotations

from typing import Any

import pytest

from courtier.origins.cluster import Assignment
from courtier.origins.evidence import Evidence, Kind
from courtier.origins.infer import InferenceResult
from courtier.pipeline.lanes.origin_saves import OriginSaves


class Store:
    def __init__(self) -> None:
        self.saved: list[list[str]] = []
        self.down = False

    def save_origins(self, assignments: list[Assignment], now: float, recheck: Any) -> list[Any]:
        if self.down:
            raise OSError("the store is away")
        self.saved.append(sorted(a.site for a in assignments))
        return []


def _result(origins: dict[str, str], recheck: dict[str, float], **provisional: bool):
    evidence = (Evidence(Kind.CNAME, "edge.test", 0.9),)
    assignments = {
        site: Assignment(site, origin, 0.9, evidence, provisional.get(site.split(".")[0], False))
        for site, origin in origins.items()
    }
    return InferenceResult(assignments, (), recheck, 0)


def test_only_sites_whose_assignment_or_recheck_changed_are_written() -> None:
    store, saves = Store(), OriginSaves()
    origins = {f"s{n}.test": "addr:1" for n in range(2000)}
    recheck = {site: 100.0 for site in origins}
    saves(store, _result(origins, recheck), 1.0)  # type: ignore[arg-type]
    assert len(store.saved[-1]) == 2000
    saves(store, _result(origins, recheck), 2.0)  # type: ignore[arg-type]
    assert len(store.saved) == 1  # nothing changed: nothing written
    origins["s7.test"] = "hdr:x"
    recheck["s8.test"] = 400.0
    saves(store, _result(origins, recheck, s9=True), 3.0)  # type: ignore[arg-type]
    assert store.saved[-1] == ["s7.test", "s8.test"]  # provisional is not stored


def test_a_write_that_failed_is_tried_again_with_the_next_inference() -> None:
    store, saves = Store(), OriginSaves()
    store.down = True
    with pytest.raises(OSError):
        saves(store, _result({"a.test": "addr:1"}, {}), 1.0)  # type: ignore[arg-type]
    store.down = False
    saves(store, _result({"a.test": "addr:1"}, {}), 2.0)  # type: ignore[arg-type]
    assert store.saved == [["a.test"]]


def test_a_fleet_worker_writes_the_rows_of_the_sites_it_holds_only() -> None:
    """Every worker infers every site's origin; each site's row (and each change logged) is
    written by its holder alone. A site given back and taken again is written again."""
    held = {"a.test"}
    store, saves = Store(), OriginSaves(lambda: set(held))
    origins = {"a.test": "addr:1", "b.test": "addr:1"}
    saves(store, _result(origins, {}), 1.0)  # type: ignore[arg-type]
    assert store.saved == [["a.test"]]
    held = {"b.test"}  # a.test's shard given back, b.test's taken
    saves(store, _result(origins, {}), 2.0)  # type: ignore[arg-type]
    assert store.saved[-1] == ["b.test"]
    held = {"a.test", "b.test"}
    saves(store, _result(origins, {}), 3.0)  # type: ignore[arg-type]
    assert store.saved[-1] == ["a.test"]
