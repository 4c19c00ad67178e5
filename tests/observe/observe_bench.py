"""The observer's thread under a crawl-sized load: 2,000 sites on 600 origins at 1,000
requests/s, request log, anomalies and progress on, driven batch by batch on a fake clock.

    python tests/observe/observe_bench.py [--events 50000] [--profile] [--dump OUT.json]

Prints CPU microseconds per event (the thread is the only one running, so that is the
interpreter lock it would hold). ``--dump`` writes every output (request log rows, metrics,
anomalies, progress views, stats) as JSON, to compare two versions of the observer.
"""

from __future__ import annotations

import argparse
import cProfile
import heapq
import json
import logging
import pstats
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import pyarrow.parquet as pq
from observe_helpers import T0, event
from prometheus_client import CollectorRegistry, generate_latest

from courtier.observe import CrawlSample, Observation, ObserveSettings
from courtier.pipeline.events import RequestEvent

SITES = 2_000
ORIGINS = 600
RATE = 1_000.0
TICK = 0.2
HEADERS = (
    ("Content-Type", "text/html"),
    ("Content-Length", "6000"),
    ("Date", "Fri, 15 Jan 2027 08:00:00 GMT"),
    ("Server", "Python/3.11 aiohttp/3.9.5"),
)


def workload(n: int) -> Iterator[tuple[float, RequestEvent]]:
    """``(arrival, event)`` in arrival order: a request starts at ``at`` and its event
    reaches the observer when it is answered, a few to a few hundred ms later. Made as they
    are needed, as in a crawl (a list of them all would make every garbage collection of
    the run walk 50,000 events)."""
    answered: list[tuple[float, int, RequestEvent]] = []
    for i in range(n):
        at = T0 + i / RATE
        while answered and answered[0][0] <= at:
            arrival, _, e = heapq.heappop(answered)
            yield arrival, e
        s = (i * 7919) % SITES
        site, origin = f"s{s}.test", f"o{s % ORIGINS}"
        status: int | None = 200
        latency = 0.01 + (i % 13) * 0.003
        if s % 97 == 0 and (i // 5000) % 2 == 1:
            status = 503  # an outage on a few sites, on and off
        elif s % 101 == 0 and i > n // 2:
            latency = 0.4  # an origin slowing down
        elif i % 211 == 0:
            status = None  # no answer at all
        elif i % 37 == 0:
            status = 404
        kind, keys, path = "page", None, f"/item/{i}"
        if i % 9 == 0:
            kind, path = "media", f"/img/{i}.jpg"
            keys = (f"bucket:s3/b{s % 50}", f"origin:{origin}")
        elif i % 53 == 0:
            kind, path = "robots", "/robots.txt"
        e = event(
            site,
            at,
            status=status,
            latency=latency,
            kind=kind,
            path=path,
            origin=origin,
            keys=keys,
            wait=0.3 if i % 3 else 0.0,
            late=0.0005,
            retry_after="5" if status == 503 else None,
            content_type="image/jpeg" if kind == "media" else "text/html",
            lane="fastlane" if i % 4 == 0 else "discovery",
            headers=HEADERS + ((("X-Cache", "HIT"),) if kind == "media" else ()),
        )
        heapq.heappush(answered, (at + latency + 0.004, i, e))
    while answered:
        arrival, _, e = heapq.heappop(answered)
        yield arrival, e


class FakeClock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


def run(n: int, out: Path, profile: bool) -> tuple[float, dict[str, Any]]:
    clock = FakeClock()
    settings = ObserveSettings(live=False, worker="bench")
    obs = Observation(out, settings, registry=CollectorRegistry(), clock=clock)
    out.mkdir(parents=True, exist_ok=True)
    from courtier.observe.requestlog import RequestLogWriter
    from courtier.observe.rows import warm_up

    obs.request_log = RequestLogWriter(out, settings, run=obs.run_id, worker="w", clock=clock)
    warm_up()
    pending = workload(n)
    views: list[dict[str, Any]] = []
    profiler = cProfile.Profile() if profile else None
    spent = 0.0
    with (out / "anomalies.jsonl").open("a") as a_file, (out / "samples.jsonl").open("a") as s_file:
        next_sample, tick = T0, T0
        upcoming = next(pending, None)
        while upcoming is not None:
            tick += TICK
            clock.now = tick
            while upcoming is not None and upcoming[0] <= tick:
                obs.request(upcoming[1])
                upcoming = next(pending, None)
            if tick >= next_sample:
                next_sample += settings.sample_seconds
                k = int(tick - T0)
                stats = {"slots": 1000 * k, "missed_slots": k // 3}
                sample = CrawlSample(tick, stats, {"pages": 40}, {"pages": 300}, {}, 0.001)
                obs._controls.append(("sample", sample))
            started = time.process_time()
            if profiler is not None:
                profiler.enable()
            obs._drain(a_file, s_file)
            if profiler is not None:
                profiler.disable()
            spent += time.process_time() - started
            if obs.view is not None:
                summed = getattr(obs.loads, "_summed_at", obs.view.at)  # None: summed every view
                views.append(obs.view.fields() | {"at": obs.view.at, "summed": summed})
        clock.now = tick + 30.0
        started = time.process_time()
        obs._drain(a_file, s_file)
        obs._finish()
        spent += time.process_time() - started
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
    outputs = {
        "rows": [
            json.loads(json.dumps(row, default=str))
            for p in sorted((out / "requests").glob("*.parquet"))
            for row in pq.read_table(p).to_pylist()
        ],
        "metrics": sorted(
            line
            for line in generate_latest(obs.registry).decode().splitlines()
            if "_created" not in line  # when the metric was made: the wall clock
        ),
        "anomalies": (out / "anomalies.jsonl").read_text().splitlines(),
        "samples": (out / "samples.jsonl").read_text().splitlines(),
        "stats": json.loads((out / "stats.json").read_text()),
        "views": views,
    }
    return spent / n, outputs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--dump", type=Path)
    args = parser.parse_args()
    # anomalies are logged as warnings: without a handler they would be printed
    logging.getLogger("courtier").addHandler(logging.NullHandler())
    with tempfile.TemporaryDirectory() as tmp:
        per_event, outputs = run(args.events, Path(tmp) / "out", args.profile)
    print(f"observer thread: {per_event * 1e6:.1f} µs CPU per event ({args.events} events)")
    print(f"rows {len(outputs['rows'])}, anomalies {len(outputs['anomalies'])}")
    if args.dump:
        args.dump.write_text(json.dumps(outputs, indent=0, default=str))


if __name__ == "__main__":
    main()
