"""What keeps the observer's thread cheap at a thousand requests a second, and that each
shortcut gives the answers the long way gave: budgets worked out once per key, the busiest
origins summed a few times a second, rate windows walked only when one is due, and a batch
counted and logged even when a row breaks the detector."""

from __future__ import annotations

import math
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from observe_helpers import T0, event
from prometheus_client import CollectorRegistry
from test_observation import log_rows, observation

from courtier.observe import budgets as budgets_module
from courtier.observe import observation as observation_module
from courtier.observe.anomaly import Anomaly, AnomalyDetector
from courtier.observe.budgets import budget_from
from courtier.observe.progress import (
    BUSIEST,
    RECENT,
    SUM_SECONDS,
    Loads,
    OriginLoad,
    gcra_bound,
)
from courtier.observe.rows import RequestRow, RowMaker
from courtier.observe.settings import ObserveSettings
from courtier.politeness.gcra import DEFAULT_SLOT_WIDTH
from courtier.politeness.keys import CostModel, KeyParams, LimitKey, LimitPolicy

# -- budgets ------------------------------------------------------------------------------


class CountingPolicy:
    """A ``LimitPolicy`` that counts how often a key's parameters are worked out."""

    def __init__(self, policy: LimitPolicy) -> None:
        self.policy = policy
        self.asked: list[str] = []

    def params(self, key: LimitKey) -> KeyParams:
        self.asked.append(str(key))
        return self.policy.params(key)


def uncached(policy: LimitPolicy, key: str) -> float | None:
    try:
        interval = policy.params(LimitKey.parse(key)).interval
    except ValueError:
        return None
    return 1.0 / interval if interval > 0 else None


KEYS = ["origin:o1", "site:a.test", "origin:o2", "nonsense:x", "site", "origin:o1"]


def test_a_budget_is_worked_out_once_per_key_and_is_what_the_policy_says():
    policy = LimitPolicy()
    counting = CountingPolicy(policy)
    budget_of = budget_from(counting)  # type: ignore[arg-type]
    for _ in range(3):
        assert [budget_of(k) for k in KEYS] == [uncached(policy, k) for k in KEYS]
    assert budget_of("origin:o1") is not None and budget_of("nonsense:x") is None
    assert sorted(counting.asked) == ["origin:o1", "origin:o2", "site:a.test"]


def test_the_budget_cache_is_bounded_and_still_right_past_its_bound(monkeypatch):
    monkeypatch.setattr(budgets_module, "BUDGET_CACHE", 2)
    policy = LimitPolicy()
    counting = CountingPolicy(policy)
    budget_of = budget_from(counting)  # type: ignore[arg-type]
    keys = [f"origin:o{i}" for i in range(5)]
    assert [budget_of(k) for k in keys] == [uncached(policy, k) for k in keys]
    asked = len(counting.asked)
    budget_of("origin:o4")  # the last one is still known ...
    assert len(counting.asked) == asked
    assert budget_of("origin:o0") == uncached(policy, "origin:o0")  # ... the first was let go
    assert len(counting.asked) == asked + 1


# -- the busiest origins ------------------------------------------------------------------

BUDGETS = {f"o{i}": (2.0 if i % 3 else 4.0) for i in range(40)}
MAKER = RowMaker(CostModel(), lambda key: 2.0)


def row(at: float, origin: str, path: str = "/item/1") -> RequestRow:
    return MAKER.row_of(event(f"{origin}.test", at, origin=origin, path=path))


def reference(rows: list[RequestRow], now: float) -> tuple[float, tuple[OriginLoad, ...]]:
    """The rate and the busiest origins summed the long way: every row, every origin,
    every origin ranked (ties in the order the origins were first seen)."""
    loads = Loads(BUDGETS.get)  # type: ignore[arg-type]
    for r in rows:
        loads.add(r)
    start, end = int(now) - RECENT, int(now)
    units: dict[str, float] = {}
    edge: dict[str, float] = {}
    count = 0
    for r in rows:
        second = int(r.time)
        if start <= second < end and r.origin is not None:
            count += 1
            units[r.origin] = units.get(r.origin, 0.0) + r.units
            edge[r.origin] = max(edge.get(r.origin, 0.0), r.units)
    loads_ = [
        OriginLoad(
            o, u / RECENT, BUDGETS[o], gcra_bound(BUDGETS[o], RECENT, DEFAULT_SLOT_WIDTH, edge[o])
        )
        for o, u in units.items()
    ]
    ranked = sorted(loads_, key=lambda load: (-(load.share or 0.0), -load.units_per_s))
    return count / RECENT, tuple(ranked[:BUSIEST])


def traffic(seconds: int) -> list[RequestRow]:
    chance = random.Random(7)
    rows = []
    for second in range(seconds):
        for _ in range(30):
            origin = f"o{chance.randrange(40)}"
            path = "/list/1" if chance.random() < 0.3 else "/item/1"  # 4 or 2 units: ties
            rows.append(row(T0 + second + chance.random(), origin, path))
    return rows


def test_the_busiest_origins_are_those_every_origin_ranked_would_give():
    rows = traffic(25)
    loads = Loads(BUDGETS.get)  # type: ignore[arg-type]
    for r in rows:
        loads.add(r)
    now = T0 + 25.3
    view = loads.view(now, rows=len(rows), anomalies=0)
    rate, busiest = reference(rows, now)
    assert view.rate == rate and view.busiest == busiest and len(busiest) == BUSIEST


def test_the_busiest_origins_are_summed_a_few_times_a_second_and_at_each_new_second():
    loads = Loads(BUDGETS.get)  # type: ignore[arg-type]
    rows = traffic(15)
    for r in rows:
        loads.add(r)
    now = T0 + 15.05
    first = loads.view(now, rows=0, anomalies=0)
    # a late answer for a second already counted: the counts move at once, the sums wait
    late = row(T0 + 14.5, "o39", "/list/1")
    loads.add(late)
    rows.append(late)
    soon = loads.view(now + SUM_SECONDS / 2, rows=0, anomalies=0)
    assert soon.requests == first.requests + 1
    assert (soon.rate, soon.busiest) == (first.rate, first.busiest)
    later = loads.view(now + SUM_SECONDS, rows=0, anomalies=0)
    assert (later.rate, later.busiest) == reference(rows, now + SUM_SECONDS)
    assert later.rate == first.rate + 1 / RECENT
    # a new second is summed at once, however soon after the last sum it comes
    next_second = T0 + 16.0
    assert next_second - (now + SUM_SECONDS) < SUM_SECONDS
    fresh = loads.view(next_second, rows=0, anomalies=0)
    assert (fresh.rate, fresh.busiest) == reference(rows, next_second)


def test_an_observation_asks_an_origins_budget_once(tmp_path: Path):
    counting = CountingPolicy(LimitPolicy())
    obs = observation_module.Observation(
        tmp_path,
        ObserveSettings(live=False),
        limits=counting,  # type: ignore[arg-type]
        registry=CollectorRegistry(),
    )
    for second in range(12):
        obs.loads.add(obs.rows.row_of(event("a.test", T0 + second, origin="o1")))
        obs.loads.view(T0 + second + 0.5, rows=0, anomalies=0)
    assert counting.asked == ["origin:o1"]


# -- rate windows -------------------------------------------------------------------------


def budget_of(key: str) -> float | None:
    return 2.0 if key.startswith("origin:") else None


def detector() -> AnomalyDetector:
    return AnomalyDetector(replace(ObserveSettings(), anomaly_rate_window=10.0), budget_of)


def windows_traffic() -> list[Any]:
    chance = random.Random(3)
    events = []
    for i in range(3000):
        at = T0 + i * 0.04
        origin = f"o{chance.randrange(12)}"
        busy = origin in ("o1", "o2") and 40 <= at - T0 < 80
        events.append(
            event(
                f"{origin}-{chance.randrange(3)}.test",
                at,
                origin=origin,
                cost=4.0 if busy else 2.0,
                path="/list/1" if busy else "/item/1",
                wait=0.5 if chance.random() < 0.8 else 0.0,
            )
        )
    return events


def test_rate_windows_close_as_a_walk_over_every_origin_would_close_them():
    quick, walking = detector(), detector()
    found: dict[str, list[Anomaly]] = {"quick": [], "walking": []}
    for i, e in enumerate(windows_traffic()):
        r = MAKER.row_of(e)
        found["quick"] += quick.observe(r)
        found["walking"] += walking.observe(r)
        if i % 7 == 0:
            now = e.at + 0.2
            found["quick"] += quick.advance(now)
            walking._next_close = -math.inf  # the walk every time, as before the shortcut
            found["walking"] += walking.advance(now)
    end = T0 + 200
    found["quick"] += quick.advance(end)
    walking._next_close = -math.inf
    found["walking"] += walking.advance(end)
    assert found["quick"] == found["walking"]
    assert {a.signal for a in found["quick"]} >= {"over-budget"}
    assert all(entity.window is None for entity in quick.origins.values())


def test_a_rate_window_closes_at_its_end_plus_a_window_of_grace():
    d = detector()
    rows = [MAKER.row_of(event(at=T0 + i * 0.5, cost=2.0)) for i in range(20)]  # 40 units
    for r in rows:
        d.observe(r)
    window_end = (int(T0 // 10) + 1) * 10.0
    assert d.advance(window_end + 9.99) == []
    found = d.advance(window_end + 10.0)
    assert [(a.name, a.signal, a.state) for a in found] == [("o1", "over-budget", "raised")]
    assert d.advance(window_end + 1000) == []  # nothing open: nothing to close


# -- a batch that breaks --------------------------------------------------------------------


async def test_a_row_that_breaks_the_detector_is_still_counted_and_logged(tmp_path: Path):
    obs = observation(tmp_path)
    observe = obs.detector.observe

    def breaks_on_b(r: RequestRow) -> list[Anomaly]:
        if r.site == "b.test":
            raise RuntimeError("a detector bug")
        return observe(r)

    obs.detector.observe = breaks_on_b  # type: ignore[method-assign]
    async with obs:
        for site in ("a.test", "b.test", "c.test"):
            obs.request(event(site, T0))
        await obs.flush()
        assert log_rows(tmp_path) == 3
        assert obs.metrics.requests.children and sum(obs.metrics.requests.children.values()) == 3
        assert obs.internal_errors == 1
        assert set(obs.detector.sites) == {"a.test", "c.test"}


@pytest.mark.parametrize("n", [0, 1])
def test_a_view_without_traffic_is_empty(n: int):
    loads = Loads(BUDGETS.get)  # type: ignore[arg-type]
    for i in range(n):
        loads.add(row(T0 + i, "o1"))
    view = loads.view(T0 + 0.5, rows=0, anomalies=0)
    assert view.busiest == () and view.rate == 0.0 and view.requests == n
