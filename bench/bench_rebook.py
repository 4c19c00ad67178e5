"""Rebook rate under full load: crawl the simulated web with large pages and report how many
booked slots were missed (the request could not start inside its slot), the event loop's lag,
and the server-side audit's verdict.

    python bench/bench_rebook.py --sites 500 --page-bytes 300000 --duration 40

Runs `courtier demo` in a subprocess (the simulated web in another one), so the figures are
those of the real command. Loopback only.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sites", type=int, default=500)
    parser.add_argument("--page-bytes", type=int, default=300_000)
    parser.add_argument("--duration", type=float, default=40.0)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument(
        "-s", dest="settings", action="append", default=[], help="a crawl setting, as for demo"
    )
    args = parser.parse_args()
    for run in range(1, args.runs + 1):
        with tempfile.TemporaryDirectory(prefix="courtier-bench-") as out:
            command = [
                sys.executable, "-m", "courtier", "demo", "--json", "--out", out,
                "--sites", str(args.sites), "--page-bytes", str(args.page_bytes),
                "--duration", str(args.duration),
                *(arg for setting in args.settings for arg in ("-s", setting)),
            ]  # fmt: skip
            started = time.perf_counter()
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            wall = time.perf_counter() - started
        if done.returncode not in (0, 1):
            print(done.stderr, file=sys.stderr)
            return 1
        result = json.loads(done.stdout.strip().splitlines()[-1])
        crawl, audit = result["crawl"], result["audit"]
        failed = [c["name"] for c in audit["criteria"] if not c["ok"]]
        print(
            f"run {run}: sites={args.sites} page_bytes={args.page_bytes} "
            f"requests={crawl['requests']} ({crawl['requests_per_s']}/s, "
            f"{crawl['bytes'] / 1e6:.0f} MB) slots={crawl['slots']} "
            f"missed={crawl['missed_slots']} rebook_rate={crawl['rebook_rate']:.4%} "
            f"loop_lag_p99={crawl['loop_lag_p99_ms']}ms max={crawl['loop_lag_max_ms']}ms "
            f"audit_ok={audit['ok']} failed={failed or '-'} wall={wall:.0f}s "
            f"media={sum(crawl.get('media_requests', {}).values())}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
