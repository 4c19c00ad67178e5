"""A finished run's output directory, made from synthetic traffic (five minutes, three
origins, an origin slowing down, an outage, an anomaly, samples of the booking counters)."""

from __future__ import annotations

import json
from pathlib import Path

from observe_helpers import T0, event

from courtier.observe.anomaly import AnomalyDetector
from courtier.observe.requestlog import RequestLogWriter
from courtier.observe.rows import RowMaker
from courtier.observe.settings import ObserveSettings
from courtier.politeness.keys import CostModel


def budget_of(key: str) -> float | None:
    return 2.0 if key.startswith("origin:") else None


def make_run(out: Path) -> Path:
    maker = RowMaker(CostModel(), budget_of)
    settings = ObserveSettings()
    detector = AnomalyDetector(settings, budget_of)
    log = RequestLogWriter(out, settings, run="r1", worker="w1", clock=lambda: T0)
    anomalies = []
    for second in range(300):
        at = T0 + second
        for n, origin in enumerate(("alpha", "beta", "gamma")):
            site = f"{origin}-{second % 3}.test"
            status = 200
            latency = 0.02
            if origin == "beta" and second > 200:
                latency = 0.25  # slowed down
            if origin == "gamma" and 100 <= second < 110:
                status = 503
            e = event(
                site,
                at + n * 0.3,
                status=status,
                latency=latency,
                origin=origin,
                retry_after="5" if status == 503 else None,
                wait=0.5,
                late=0.001,
            )
            row = maker.row_of(e)
            log.add(row)
            anomalies += detector.observe(row)
        if second % 20 == 0:
            log.add(maker.row_of(event("bait.test", at, refusal="loopback")))
    log.close()
    (out / "anomalies.jsonl").write_text("".join(json.dumps(a.to_json()) + "\n" for a in anomalies))
    with (out / "samples.jsonl").open("w") as samples:
        for i in range(0, 301, 2):
            slots = 3 * i
            samples.write(
                json.dumps(
                    {
                        "time": T0 + i,
                        "slots": slots,
                        "missed_slots": i // 20,
                        "in_flight": {"pages": 3},
                        "queues": {"pages": 10},
                    }
                )
                + "\n"
            )
    return out
