"""A crawl with single-page apps rendered in headless Chromium, judged from the server side:
does an app that hangs its browser, or a browser that crashes, slow the other sites?

    python bench/bench_render_crawl.py --sites 100 --apps 8 --hang 2 --crash-every 10 --duration 60

Runs on the same world: one where no app hangs its browser; one where the last ``--hang``
apps do (their script loops forever: each of their renders stalls, its browser is retired
and replaced); one where nothing hangs but the crawl's browser is killed every
``--crash-every`` seconds, as a crash would end it (its renders fail ``browser-lost``, the
next render starts a fresh one); then the first again, so that the host's own drift between
runs shows (the baseline is the mean of the two calm runs). Printed for each: utilisation of
the politeness ceiling per kind of site (the hanging apps' ceiling is their robots.txt and
home page), renders by outcome, render requests by outcome, the crawler's CPU per 1,000
requests (a killed browser's own CPU is lost with it), the host's speed before and after
(``host_us``) and the audit. The claim it checks: no kind but ``spa`` slowed by more than
0.02 against the calm runs. Loopback only; see bench/_crawlbench.py for how each figure is
taken.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

import psutil

from _crawlbench import run, world_params
from courtier.simweb.world import params_for_total


class BrowserKiller(threading.Thread):
    """SIGKILLs the crawl's Chromium browser processes (not their renderers: the browser,
    as a crash would end it) every ``every`` seconds."""

    def __init__(self, crawler: int, every: float) -> None:
        super().__init__(daemon=True)
        self.crawler = psutil.Process(crawler)
        self.every = every
        self.kills = 0
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(self.every):
            try:
                children = self.crawler.children(recursive=True)
            except psutil.Error:
                return
            for child in children:
                try:
                    args = child.cmdline()
                    if "--remote-debugging-pipe" in args and not any(
                        arg.startswith("--type=") for arg in args
                    ):
                        child.kill()
                        self.kills += 1
                except psutil.Error:
                    continue

    def stop(self) -> None:
        self.stopped.set()
        self.join()


def start_killer(killers: list[BrowserKiller], every: float, pid: int) -> Callable[[], None]:
    killer = BrowserKiller(pid, every)
    killers.append(killer)
    killer.start()
    return killer.stop


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sites", type=int, default=100, help="ordinary seed sites")
    parser.add_argument("--apps", type=int, default=8, help="single-page apps")
    parser.add_argument("--hang", type=int, default=2, help="apps that hang (0: no such run)")
    parser.add_argument(
        "--crash-every", type=float, default=0.0, help="seconds between kills (0: no such run)"
    )
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("-s", dest="settings", action="append", default=[], metavar="K=V")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    base = world_params("demo", None, None, args.seed)
    base = dataclasses.replace(
        params_for_total(base, args.sites), n_spa=args.apps, spa_twin=1, n_items=20, n_lists=3
    )
    runs: list[tuple[str, int, float]] = [("calm", 0, 0.0)]
    if args.hang:
        runs.append(("hang", args.hang, 0.0))
    if args.crash_every:
        runs.append(("crash", 0, args.crash_every))
    runs.append(("calm-again", 0, 0.0))
    results = {}
    for label, hang, every in runs:
        params = dataclasses.replace(base, spa_hang=hang)
        killers: list[BrowserKiller] = []
        with tempfile.TemporaryDirectory(prefix="courtier-bench-") as tmp:
            result = run(
                "courtier",
                label,
                params,
                Path(tmp),
                args.duration,
                settings=args.settings,
                beside=functools.partial(start_killer, killers, every) if every else None,
            )
        if result.returncode != 0 or not result.stats:
            print(f"{label}: courtier crawl exited {result.returncode}", file=sys.stderr)
            return 1
        d, crawl = result.as_dict(), result.stats
        kills = sum(k.kills for k in killers)
        results[label] = d
        if args.json:
            print(
                json.dumps({**d, "renders": crawl.get("renders"), "kills": kills, "crawl": crawl})
            )
            continue
        kinds = " ".join(f"{k}={v:.3f}" for k, v in sorted(d["utilisation_by_kind"].items()))
        print(
            f"{label}: apps={args.apps} hanging={hang} browsers_killed={kills} "
            f"requests={d['requests']} ({d['requests_per_s']}/s) "
            f"utilisation={d['utilisation']:.3f} by_kind: {kinds} "
            f"renders={crawl.get('renders')} render_requests={crawl.get('render_requests')} "
            f"cpu_s_per_1000={d['cpu_s_per_1000']} host_us={d['host_us']} "
            f"audit_ok={d['audit_ok']} "
            f"violations={d['violations'] or '-'}"
        )
    first, again = (results[k]["utilisation_by_kind"] for k in ("calm", "calm-again"))
    calm = {kind: (first[kind] + again.get(kind, 0.0)) / 2 for kind in first if kind != "spa"}
    noise = {kind: round(again.get(kind, 0.0) - first[kind], 3) for kind in calm}
    print(f"the host's drift (calm-again - calm): {noise}")
    worst = 0.0
    for label in results.keys() - {"calm", "calm-again"}:
        other = results[label]["utilisation_by_kind"]
        drift = {kind: round(other.get(kind, 0.0) - calm[kind], 3) for kind in calm}
        worst = max(worst, *(-v for v in drift.values()))
        print(f"drift of the other kinds ({label} - calm runs' mean): {drift}")
    print(f"worst slowdown {max(worst, 0.0):.3f}")
    return 0 if worst <= 0.02 and all(r["audit_ok"] for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
