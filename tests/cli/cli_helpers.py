"""Helpers for the controlled-crawl command tests: a small frontier store with a known host
graph, and JSON-lines parsing."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from courtier.frontier.base import HorizonLink, HostEdge, NewUrl, Outcome, SiteState, UrlStatus
from courtier.frontier.sqlite_store import SqliteFrontier

T0 = 1_800_000_000.0
SEEDS = ("alpha.test", "bravo.test", "charlie.test", "delta.test")
POPULAR = "popular.test"  # linked from three seed hosts of three domains
RUNNER_UP = "runner-up.test"  # linked from two
ONCE = "once.test"  # linked from one seed host, by many pages
FARM = ("farm-one.test", "farm-two.test", "farm-three.test")  # link only to each other
CDN = "cdn.simcdn.test"  # embedded by every seed page
BUCKET = "media-alpha.s3.simstore.test"
ADDRESS = "127.0.0.9"  # an address literal linked from everywhere


def build_store(path: Path) -> Path:
    store = SqliteFrontier(path)
    try:
        store.add_sites(SEEDS, SiteState.SEED, T0)
        roots = [NewUrl(f"http://{s}/", f"http://{s}/", s, 0) for s in SEEDS]
        store.write_batch(roots, [], [], T0)
        horizon = [
            HorizonLink(f"http://{POPULAR}/", POPULAR, s) for s in ("alpha.test", "bravo.test")
        ]
        horizon += [HorizonLink(f"http://{POPULAR}/p", POPULAR, "charlie.test")]
        horizon += [HorizonLink(f"http://{RUNNER_UP}/", RUNNER_UP, s) for s in SEEDS[2:]]
        horizon += [HorizonLink(f"http://{ONCE}/{n}", ONCE, "delta.test") for n in range(40)]
        horizon += [HorizonLink(f"http://{CDN}/{s}/1.jpg", CDN, s) for s in SEEDS for _ in "ab"]
        horizon += [HorizonLink(f"http://{BUCKET}/1.jpg", BUCKET, s) for s in SEEDS]
        horizon += [HorizonLink(f"http://{ADDRESS}/", ADDRESS, s) for s in SEEDS]
        farm = [HostEdge(a, b, 50) for a in FARM for b in FARM if a != b]
        store.write_batch([], [], horizon, T0, host_edges=farm)
        store.add_sites(FARM, SiteState.HORIZON, T0)
        leased = store.lease("alpha.test", 1, T0)
        store.record_fetch([Outcome(leased[0].id, UrlStatus.DONE, 200, T0 + 1, "f" * 32)])
    finally:
        store.close()
    return path


Run = Callable[..., tuple[int, str, str]]


def json_lines(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]
