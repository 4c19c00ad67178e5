"""Crawl throughput at full load, judged from the server side: requests/s, the share of the
politeness ceiling used (overall and in the run's second half), the crawler's CPU seconds per
1,000 requests, how many booked slots were missed (the rebook rate), the event loop's lag and
the audit's violations.

    python bench/bench_rebook.py --sites 500 --page-bytes 300000 --duration 40
    python bench/bench_rebook.py --size web --sites 2000 --duration 40   # the real web's shapes

Each run starts a fresh simulated web in its own process and runs `courtier crawl` against it
in another (the command `courtier demo` runs, with the same world), so the crawler's CPU time
is its own: the `courtier crawl` process and its parse workers, never the simulated web.
Loopback only. See bench/_crawlbench.py for how each figure is taken.

It also prints the crawl's own spacing report (achieved start-to-start spacing against the
allowed one, per key type) and fails (exit 1, "SPACING FAIL") when site or origin keys that
work waited on ran more than 5% slower than they allow: every standalone site at half its
pace at 2,000 sites is a failure of the run, not a figure to explain.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from _crawlbench import kinds_text, run, world_params


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--size", default="demo", help="world preset, as for demo (web: the real web's shapes)"
    )
    parser.add_argument("--sites", type=int, default=500, help="seed sites (0: the preset's)")
    parser.add_argument("--page-bytes", type=int, default=300_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--duration", type=float, default=40.0)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument(
        "-s", dest="settings", action="append", default=[], help="a crawl setting, as for demo"
    )
    parser.add_argument("--keep", type=Path, help="keep the runs' files in this directory")
    parser.add_argument("--json", action="store_true", help="one JSON object per run")
    args = parser.parse_args()
    params = world_params(args.size, args.sites or None, args.page_bytes, args.seed)
    failed = False
    for n in range(1, args.runs + 1):
        with tempfile.TemporaryDirectory(prefix="courtier-bench-") as tmp:
            workdir = (args.keep or Path(tmp)) / f"run{n}"
            result = run(
                "courtier", args.size, params, workdir, args.duration, settings=args.settings
            )
        if result.returncode != 0 or not result.stats:
            print(f"run {n}: courtier crawl exited {result.returncode}", file=sys.stderr)
            return 1
        d, crawl = result.as_dict(), result.stats
        if args.json:
            print(json.dumps({**d, "crawl": crawl}))
            continue
        half = d["cpu_s_per_1000_second_half"]
        print(
            f"run {n}: sites={d['seed_sites']} page_bytes={params.page_bytes} "
            f"requests={d['requests']} ({d['requests_per_s']}/s, {crawl['bytes'] / 1e6:.0f} MB, "
            f"media={sum(crawl.get('media_requests', {}).values())}) "
            f"ceiling={d['ceiling_units_per_s']} units/s utilisation={d['utilisation']:.3f} "
            f"second_half={d['utilisation_second_half']:.3f} by_kind={kinds_text(d)} "
            f"late_start={d['late_start']}/{d['origins_with_work']} "
            f"cpu_s_per_1000={d['cpu_s_per_1000']} (second half {half}; "
            f"cpu {d['cpu_s']}s, main {d['main_cpu_s']}s) "
            f"slots={crawl['slots']} missed={crawl['missed_slots']} "
            f"rebook_rate={crawl['rebook_rate']:.4%} "
            f"loop_lag_p99={crawl['loop_lag_p99_ms']}ms max={crawl['loop_lag_max_ms']}ms "
            f"parse_queue={crawl.get('parse_queue_mean', '-')} "
            f"places_full={crawl.get('places_full_share', '-')} "
            f"audit_ok={d['audit_ok']} violations={d['violations'] or '-'} wall={d['wall_s']:.0f}s "
            f"host_us={'/'.join(map(str, d['host_us'] or ['-']))} "
            f"server_stalled={d['server_stalled_requests']}/{d['server_stall_max_ms']}ms "
            f"spacing={spacing_text(crawl)}"
        )
        drifted = spacing_drift(crawl)
        if drifted:
            print(f"run {n}: SPACING FAIL: {drifted}", file=sys.stderr)
            failed = True
    return 1 if failed else 0


SPACING_TOLERANCE = 1.05
"""Median achieved/allowed start-to-start spacing a key type may show: site and origin keys
that work waited on start at their allowance (the crawl's ``spacing`` report)."""


def spacing_text(crawl: dict[str, Any]) -> str:
    rows = crawl.get("spacing", {})
    return (
        ",".join(
            f"{kind}:x{row['median_ratio']:.2f}/p90x{row['p90_ratio']:.2f}/{row['starts']}"
            for kind, row in rows.items()
        )
        or "-"
    )


def spacing_drift(crawl: dict[str, Any]) -> str:
    """Site or origin keys whose median spacing drifted above their allowance (empty: none)."""
    rows = crawl.get("spacing", {})
    return ", ".join(
        f"{kind} keys x{row['median_ratio']:.2f} of their allowance (over {SPACING_TOLERANCE})"
        for kind in ("site", "origin")
        if (row := rows.get(kind))
        and row["starts"] >= 100
        and row["median_ratio"] > SPACING_TOLERANCE
    )


if __name__ == "__main__":
    sys.exit(main())
