"""What observing costs per request: on the event loop (``Observation.request``) and on the
observer's thread (row, metrics, anomaly detector, Parquet). Printed with ``-s``; the bounds
are loose (a loaded CI machine), the figures in docs/observe.md come from here."""

from __future__ import annotations

import time
from pathlib import Path

from observe_helpers import T0, event
from prometheus_client import CollectorRegistry

from courtier.observe import Observation, ObserveSettings
from courtier.observe.requestlog import RequestLogWriter
from courtier.observe.rows import warm_up

N = 20_000


def events() -> list:
    found = []
    for i in range(N):
        status = 200 if i % 50 else 503
        found.append(
            event(
                f"s{i % 500}.test",
                T0 + i * 0.001,
                origin=f"o{i % 120}",
                status=status,
                latency=0.01 + (i % 7) * 0.001,
                body=b"x" * 6000,
                wait=0.2,
                late=0.001,
            )
        )
    return found


def test_the_event_loop_pays_well_under_a_microsecond_per_request(tmp_path: Path):
    observation = Observation(tmp_path, ObserveSettings(), registry=CollectorRegistry())
    batch = events()
    rounds = 10
    started = time.perf_counter()
    for _ in range(rounds):
        for e in batch:
            observation.request(e)
    per_request = (time.perf_counter() - started) / (rounds * N)
    print(f"\nevent loop: {per_request * 1e6:.3f} µs per request")
    assert per_request < 5e-6


def test_the_observers_thread_keeps_up_with_a_thousand_requests_a_second(tmp_path: Path):
    observation = Observation(tmp_path, ObserveSettings(), registry=CollectorRegistry())
    log = RequestLogWriter(tmp_path, observation.settings, run="r", worker="w", clock=lambda: T0)
    batch = events()
    warm_up()  # once per process, at the observer's start
    started = time.process_time()
    for e in batch:
        row = observation.rows.row_of(e)
        log.add(row)
        observation.metrics.record(row)
        observation.loads.add(row)
        observation.detector.observe(row)
    observation.detector.advance(T0 + N)
    log.close()
    per_request = (time.process_time() - started) / N
    print(f"\nobserver thread: {per_request * 1e6:.1f} µs per request (Parquet included)")
    assert log.rows_written == N
    assert per_request < 500e-6  # 1,000 requests/s take well under half a core
