"""A crawl with single-page apps rendered in headless Chromium, judged from the server side:
does an app that hangs its browser slow the other sites?

    python bench/bench_render_crawl.py --sites 100 --apps 8 --hang 2 --duration 60

Two runs on the same world but for ``spa_hang``: one where no app hangs its browser, one
where the last ``--hang`` apps do (their script loops forever: each of their renders runs to
``page_timeout``, its browser is retired and replaced). Printed for each: utilisation of the
politeness ceiling per kind of site (the hanging apps' ceiling is their robots.txt and home
page), renders by outcome, render requests by outcome, the crawler's CPU per 1,000 requests
and the audit. The claim it checks: every kind but ``spa`` within 0.02 of the run without
hangs. Loopback only; see bench/_crawlbench.py for how each figure is taken.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
from pathlib import Path

from _crawlbench import run, world_params
from courtier.simweb.world import params_for_total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sites", type=int, default=100, help="ordinary seed sites")
    parser.add_argument("--apps", type=int, default=8, help="single-page apps")
    parser.add_argument("--hang", type=int, default=2, help="apps that hang (second run)")
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("-s", dest="settings", action="append", default=[], metavar="K=V")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    base = world_params("demo", None, None, args.seed)
    base = dataclasses.replace(
        params_for_total(base, args.sites), n_spa=args.apps, spa_twin=1, n_items=20, n_lists=3
    )
    results = {}
    for label, hang in (("no-hang", 0), ("hang", args.hang)):
        params = dataclasses.replace(base, spa_hang=hang)
        with tempfile.TemporaryDirectory(prefix="courtier-bench-") as tmp:
            result = run(
                "courtier", label, params, Path(tmp), args.duration, settings=args.settings
            )
        if result.returncode != 0 or not result.stats:
            print(f"{label}: courtier crawl exited {result.returncode}", file=sys.stderr)
            return 1
        d, crawl = result.as_dict(), result.stats
        results[label] = d
        if args.json:
            print(json.dumps({**d, "renders": crawl.get("renders"), "crawl": crawl}))
            continue
        kinds = " ".join(f"{k}={v:.3f}" for k, v in sorted(d["utilisation_by_kind"].items()))
        print(
            f"{label}: apps={args.apps} hanging={hang} requests={d['requests']} "
            f"({d['requests_per_s']}/s) utilisation={d['utilisation']:.3f} by_kind: {kinds} "
            f"renders={crawl.get('renders')} render_requests={crawl.get('render_requests')} "
            f"cpu_s_per_1000={d['cpu_s_per_1000']} audit_ok={d['audit_ok']} "
            f"violations={d['violations'] or '-'}"
        )
    calm, hung = (results[k]["utilisation_by_kind"] for k in ("no-hang", "hang"))
    drift = {kind: round(hung.get(kind, 0.0) - calm[kind], 3) for kind in calm if kind != "spa"}
    worst = max((abs(v) for v in drift.values()), default=0.0)
    print(f"drift of the other kinds (hang - no-hang): {drift}; worst {worst:.3f}")
    return 0 if worst <= 0.02 and all(r["audit_ok"] for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
