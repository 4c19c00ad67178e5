"""What the event loop's lag is made of: a crawl at full load (as bench_rebook.py runs it)
with a watchdog on the loop's turns (bench/stall_watch), then every turn of 30 ms or more:
when, how long, how much of it was a garbage collection, where the loop was.

    python bench/bench_stalls.py --sites 2000 --page-bytes 6000 --duration 40

Same arguments as bench_rebook.py (a single run). The watchdog's thread takes the GIL every
5 ms: read its crawl figures beside each other, not against bench_rebook.py's. Loopback only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="courtier-stalls-") as scratch:
        stalls = Path(scratch) / "stalls.jsonl"
        env = dict(os.environ, COURTIER_STALLS=str(stalls))
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(HERE / "stall_watch"), env.get("PYTHONPATH", "")) if p
        )
        done = subprocess.run(
            [sys.executable, str(HERE / "bench_rebook.py"), "--runs", "1", *sys.argv[1:]],
            env=env,
            check=False,
        )
        if not stalls.exists():
            print("no stall record (the crawl did not finish?)", file=sys.stderr)
            return done.returncode or 1
        records = [json.loads(line) for line in stalls.read_text().splitlines() if line]
    start = [r for r in records if r["at_s"] <= 8.0]
    later = [r for r in records if r["at_s"] > 8.0]
    for name, part in (("first 8 s", start), ("after 8 s", later)):
        big = [r for r in part if r["ms"] >= 50]
        by_gc = [r for r in big if r["gc_ms"] >= r["ms"] / 2]
        print(
            f"{name}: {len(part)} stalls of 30 ms or more ({sum(r['ms'] for r in part):.0f} ms),"
            f" {len(big)} of 50 ms or more, {len(by_gc)} of those mostly a collection"
        )
    print("the longest:")
    for r in sorted(records, key=lambda r: -r["ms"])[:12]:
        where = "; ".join(f"{n}x {w}" for w, n in r["where"]) or "-"
        when = f"{r['ms']:6.0f} ms at {r['at_s']:6.2f} s (collection {r['gc_ms']:.0f} ms)"
        print(f"  {when}: {where}")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
