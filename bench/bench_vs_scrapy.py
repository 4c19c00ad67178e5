"""Courtier and Scrapy side by side on the same simulated worlds, judged from the server side.

    python bench/bench_vs_scrapy.py                       # the demo's world, 60 s each
    python bench/bench_vs_scrapy.py --world sites2000     # ~2,000 seed sites
    python bench/bench_vs_scrapy.py --world demo --world sites2000 --duration 60

For each world and each crawler: a fresh simulated web (its own process, its own request log),
the crawler in a child process for --duration seconds, then the audit of that log. Printed per
run: requests/s, the ceiling and the share of it used (overall, second half), the crawler's
CPU seconds per 1,000 requests (its process and the children it waited for; never the
simulated web), the rebook rate (Courtier only), event-loop lag p99 and the audit's violations.
Scrapy runs as politely as it allows (bench/_scrapy_crawl.py): robots.txt obeyed,
DOWNLOAD_DELAY=1 with no jitter, one request per domain at a time, AutoThrottle, resolving
through the simulated web's DNS. Loopback only. Needs the `bench` extra (scrapy, psutil).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from _crawlbench import RunResult, run, table, world_params

WORLDS = {
    "demo": lambda a: world_params("demo", None, a.page_bytes, a.seed),
    "sites2000": lambda a: world_params("demo", 2000, a.page_bytes, a.seed),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--world",
        action="append",
        choices=sorted(WORLDS),
        help="demo (default) or sites2000; repeatable",
    )
    parser.add_argument(
        "--crawler",
        action="append",
        choices=("courtier", "scrapy"),
        help="default both; repeatable",
    )
    parser.add_argument("--duration", type=float, default=60.0, help="seconds per run")
    parser.add_argument("--page-bytes", type=int, help="override the world's page size")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "-s",
        dest="settings",
        action="append",
        default=[],
        help="a Courtier crawl setting, as for demo",
    )
    parser.add_argument(
        "--scrapy-concurrency",
        type=int,
        help="Scrapy's CONCURRENT_REQUESTS (default: one per seed site)",
    )
    parser.add_argument("--keep", type=Path, help="keep the runs' files in this directory")
    parser.add_argument("--json", type=Path, help="also write the results here as JSON")
    args = parser.parse_args()
    results: list[RunResult] = []
    for name in args.world or ["demo"]:
        params = WORLDS[name](args)
        for crawler in args.crawler or ["courtier", "scrapy"]:
            with tempfile.TemporaryDirectory(prefix="courtier-vs-") as tmp:
                workdir = (args.keep or Path(tmp)) / f"{name}-{crawler}"
                result = run(
                    crawler,
                    name,
                    params,
                    workdir,
                    args.duration,
                    settings=args.settings,
                    scrapy_concurrency=args.scrapy_concurrency,
                )
            if result.returncode != 0:
                print(f"{crawler} on {name}: exited {result.returncode}", file=sys.stderr)
            results.append(result)
            print(json.dumps(result.as_dict()), file=sys.stderr, flush=True)
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps([r.as_dict() for r in results], indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
