"""The anomaly detector on synthetic traffic: each signal raised, cleared, and not raised."""

from __future__ import annotations

import itertools
import random
from dataclasses import replace

from observe_helpers import T0, event

from courtier.observe.anomaly import Anomaly, AnomalyDetector
from courtier.observe.rows import RowMaker
from courtier.observe.settings import ObserveSettings
from courtier.politeness.keys import CostModel

BUDGET = 2.0


def budget_of(key: str) -> float | None:
    return BUDGET if key.startswith("origin:") else None


def detector(**settings: object) -> AnomalyDetector:
    return AnomalyDetector(replace(ObserveSettings(), **settings), budget_of)


MAKER = RowMaker(CostModel(), budget_of)


def feed(d: AnomalyDetector, *events) -> list[Anomaly]:
    found: list[Anomaly] = []
    for e in events:
        found += d.observe(MAKER.row_of(e))
    return found


def raised(found: list[Anomaly], scope: str = "site") -> set[tuple[str, str]]:
    return {(a.name, a.signal) for a in found if a.state == "raised" and a.scope == scope}


def test_steady_sites_with_jitter_raise_nothing():
    rng = random.Random(7)
    d = detector()
    found: list[Anomaly] = []
    for i in range(2000):
        site = f"s{i % 20}.test"
        base = 0.002 if i % 20 < 10 else 0.3  # fast sites and slow (but steady) ones
        latency = base * rng.lognormvariate(0, 0.3)
        if rng.random() < 0.01:
            latency += 0.03  # the odd scheduling hiccup
        found += feed(d, event(site, T0 + i * 0.05, latency=latency, origin=f"o{i % 20}"))
    found += d.advance(T0 + 1000)
    assert found == []


def test_a_slow_media_edge_is_no_latency_anomaly_of_the_origin_it_serves():
    # An image service rendering slowly (its misses are charged to the customer's origin)
    # is the edge being slow, not the origin's servers: the crawl's latency feedback leaves
    # such answers out of the origin's latency, and so does the detector.
    d = detector()
    pages = (event("site.test", T0 + 1.5 * i, latency=0.02 + 0.001 * (i % 3)) for i in range(20))
    found = feed(d, *pages)
    for i in range(8):
        render = event("img.edge.test", T0 + 30 + 1.5 * i, latency=0.25)
        found += feed(d, replace(render, context=replace(render.context, kind="media")))
    assert raised(found, "origin") == set()
    assert raised(found) == set()


def test_latency_rising_with_load_is_raised_then_cleared():
    d = detector()
    latencies = [0.02, 0.02, 0.025, 0.08, 0.26, 0.56]
    found = feed(d, *(event(at=T0 + i, latency=lat) for i, lat in enumerate(latencies)))
    assert ("a.test", "latency") in raised(found)
    anomaly = next(a for a in found if a.signal == "latency")
    assert anomaly.value > anomaly.threshold > anomaly.baseline
    assert "latency" in anomaly.detail and anomaly.origin == "o1"
    soon = feed(d, *(event(at=T0 + 10 + i, latency=0.02) for i in range(6)))
    assert [a for a in soon if a.scope == "site"] == []  # held raised for anomaly_hold
    back = feed(d, *(event(at=T0 + 70 + i, latency=0.02) for i in range(6)))
    assert [(a.signal, a.state) for a in back if a.scope == "site"] == [("latency", "cleared")]


def test_a_single_slow_answer_is_not_an_anomaly():
    d = detector()
    found = feed(d, *(event(at=T0 + i, latency=0.01) for i in range(10)))
    found += feed(d, event(at=T0 + 10, latency=0.5))
    found += feed(d, *(event(at=T0 + 11 + i, latency=0.01) for i in range(5)))
    assert found == []


def test_an_outage_with_retry_after_is_raised_on_its_first_answer():
    d = detector()
    found = feed(d, event(status=503, retry_after="10", kind="robots", path="/robots.txt"))
    assert raised(found) == {("a.test", "throttled")}
    assert raised(found, "origin") == {("o1", "throttled")}


def test_a_run_of_429_or_503_without_retry_after_is_throttled_and_no_error():
    """A server pushing back without saying for how long is still pushing back: a run of
    them raises ``throttled`` on the site and its origin, never ``errors``; a lone one is
    noise (no Retry-After: nothing says the server will stay away)."""
    for status in (429, 503):
        d = detector()
        found = feed(d, *(event(at=T0 + i) for i in range(5)), event(at=T0 + 5, status=status))
        assert found == [], status
        found = feed(d, *(event(at=T0 + 6 + i, status=status) for i in range(3)))
        assert raised(found) == {("a.test", "throttled")}, status
        assert raised(found, "origin") == {("o1", "throttled")}, status


def test_errors_need_a_run_and_a_single_one_is_noise():
    d = detector()
    assert feed(d, *(event(at=T0 + i) for i in range(5)), event(at=T0 + 5, status=500)) == []
    found = feed(d, event(at=T0 + 6, status=500), event(at=T0 + 7, status=None))
    assert ("a.test", "errors") in raised(found)


def test_an_error_baseline_is_learnt_so_a_flaky_site_is_not_flagged_forever():
    rng = random.Random(3)
    d = detector()
    found: list[Anomaly] = []
    for i in range(3000):
        found += feed(d, event(at=T0 + i, status=500 if rng.random() < 0.05 else 200))
    raised_count = sum(1 for a in found if a.state == "raised")
    assert raised_count <= 4  # a 5% error rate is its normal: rare runs only


def test_a_refused_host_teaches_nothing():
    d = detector()
    assert feed(d, *(event(at=T0 + i, refusal="private") for i in range(10))) == []
    assert d.sites == {}


def test_over_budget_is_raised_in_one_window():
    d = detector(anomaly_rate_window=10.0)
    # 2 units/s allows 20 (+ 4 for a request at the edge) in 10 s: 40 units is a breach
    events = [event(at=T0 + i * 0.5, cost=2.0, path="/item/1") for i in range(20)]
    found = feed(d, *events)
    found += d.advance(T0 + 40)
    assert raised(found, "origin") == {("o1", "over-budget")}
    anomaly = next(a for a in found if a.signal == "over-budget")
    assert anomaly.value == 4.0 and anomaly.baseline == BUDGET


def test_spending_the_budget_exactly_is_no_breach():
    d = detector(anomaly_rate_window=10.0)
    events = [event(at=T0 + i, cost=2.0, path="/item/1", wait=0.9) for i in range(60)]
    found = feed(d, *events) + d.advance(T0 + 100)
    assert found == []


def test_a_rate_drop_while_work_waits_is_raised_but_running_dry_is_not():
    d = detector(anomaly_rate_window=10.0)
    # 60 s at the budget (one detail page a second, each waiting for its slot) ...
    found = feed(d, *(event(at=T0 + i, path="/item/1", wait=0.9) for i in range(60)))
    # ... then one request every 5 s, still waiting: the origin is held back
    found += feed(d, *(event(at=T0 + 60 + 5 * i, path="/item/1", wait=4.5) for i in range(8)))
    found += d.advance(T0 + 200)
    assert raised(found, "origin") == {("o1", "rate-drop")}
    dry = detector(anomaly_rate_window=10.0)
    found = feed(dry, *(event(at=T0 + i, path="/item/1", wait=0.9) for i in range(60)))
    # the same drop without waiting: the site ran out of work
    found += feed(dry, *(event(at=T0 + 60 + 5 * i, path="/item/1") for i in range(8)))
    found += dry.advance(T0 + 200)
    assert found == []


def test_a_long_anomaly_becomes_the_new_baseline():
    d = detector(anomaly_relearn=30.0)
    found = feed(d, *(event(at=T0 + i, latency=0.02) for i in range(5)))
    found += feed(d, *(event(at=T0 + 5 + i, latency=0.5) for i in range(40)))
    states = [(a.signal, a.state) for a in found if a.scope == "site"]
    assert states == [("latency", "raised"), ("latency", "cleared")]
    assert "new baseline" in found[-1].detail or "new baseline" in found[-2].detail
    assert feed(d, *(event(at=T0 + 50 + i, latency=0.5) for i in range(10))) == []


def test_anomaly_json_is_flat_and_complete():
    d = detector()
    found = feed(d, event(status=429, retry_after="5"))
    data = found[0].to_json()
    assert set(data) == {
        "time",
        "scope",
        "name",
        "signal",
        "state",
        "value",
        "baseline",
        "threshold",
        "samples",
        "origin",
        "detail",
    }


def test_a_site_swinging_in_and_out_of_the_band_raises_at_most_once_a_minute():
    """Runs of 429s between runs of good answers, for ten minutes at 1 request/s: before the
    hold, each run raised and each recovery cleared the alert, over and over."""
    d = detector()
    found = feed(d, *(event(at=T0 + i) for i in range(20)))
    for second in range(20, 620):
        status = 429 if second % 10 < 4 else 200
        found += feed(d, event(at=T0 + second, status=status))
    raises = [a.at for a in found if a.state == "raised" and a.scope == "site"]
    assert raises, "the throttling was never raised"
    assert all(b - a >= 60.0 for a, b in itertools.pairwise(raises)), raises
    assert len(raises) <= 10
