"""Where a crawl's CPU goes: `courtier crawl` under py-spy against a fresh simulated web, its
samples (the crawler's process and its parse workers) sorted into the parts of a request.

    python bench/bench_profile.py --size web --sites 2000 --page-bytes 6000 --duration 40
    python bench/bench_profile.py ... --latency real --top 40     # also the hottest functions

Each sample is charged to the part of the first frame, from the innermost out, that belongs
to one (`PARTS`, matched on the frame's file and function): a `zlib.compress` called by the
WARC writer is the WARC's, a regex run by redaction is redaction's. Samples of no part are
"other" (the event loop's own work: uvloop, asyncio, selectors). The table gives each part's
share of the samples and, with the crawl's CPU seconds and requests (from the crawl's own
JSON summary), its CPU-ms per request; py-spy's sampling costs the crawler little (it reads
the processes' memory from outside) but is no exact measure: the shares are what to trust.

Needs py-spy (`pip install py-spy`) and, as root or with ptrace allowed, permission to read
the crawler's memory. Loopback only, like every bench here.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _crawlbench import run, world_params

PARTS: tuple[tuple[str, str], ...] = (
    ("redaction", r"courtier/sinks/redact"),
    ("WARC", r"courtier/sinks/warc|warcio|fastwarc|courtier/pipeline/keeping/archive"),
    ("request log", r"courtier/observe/request_log|pyarrow|courtier/observe/(columns|sinks)"),
    ("documents", r"courtier/sinks/documents|json/encoder|orjson"),
    ("text and Markdown", r"courtier/content/(text|reading|markdown)|resiliparse"),
    ("language", r"courtier/content/language|pycld2|\bcld\b|py3langid"),
    (
        "HTML parse and links",
        r"courtier/content/(parse|parsed|feed_links|sitemap_links|nesting)"
        r"|selectolax|courtier/url/|ada_url",
    ),
    (
        "dedup and fingerprints",
        r"courtier/content/(duplicates|simhash|canonical)"
        r"|courtier/frontier/(fingerprint|dedup)",
    ),
    ("parse workers' channel", r"courtier/pipeline/workers|pickle|multiprocessing"),
    ("store", r"courtier/frontier/|sqlite3|courtier/pipeline/feed/frontier_io"),
    ("discovery and intake", r"courtier/pipeline/feed/"),
    ("scheduling and politeness", r"courtier/pipeline/scheduling|courtier/politeness/"),
    ("origins", r"courtier/origins/|courtier/pipeline/lanes/origins_live"),
    ("lanes", r"courtier/pipeline/lanes/"),
    ("HTTP and TLS", r"courtier/net/|httptools|ssl\.py|brotli|zstd|gzip|zlib"),
    ("observation and stats", r"courtier/observe/|courtier/pipeline/(stats|events)|prometheus"),
    ("engine", r"courtier/pipeline/"),
    ("garbage collection", r"^gc\b|<gc>"),
)
_COMPILED = [(name, re.compile(pattern)) for name, pattern in PARTS]


def part_of(stack: list[str]) -> str:
    """The part a sample's stack (outermost first) is charged to."""
    for frame in reversed(stack):
        for name, pattern in _COMPILED:
            if pattern.search(frame):
                return name
    return "other"


def read_samples(path: Path) -> tuple[collections.Counter[str], collections.Counter[str]]:
    """(samples per part, samples per innermost function) of py-spy's raw output."""
    parts: collections.Counter[str] = collections.Counter()
    leaves: collections.Counter[str] = collections.Counter()
    for line in path.read_text(errors="replace").splitlines():
        stack_text, _, count_text = line.rpartition(" ")
        if not stack_text or not count_text.isdigit():
            continue
        stack = stack_text.split(";")
        count = int(count_text)
        parts[part_of(stack)] += count
        leaves[stack[-1]] += count
    return parts, leaves


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="web")
    parser.add_argument("--sites", type=int, default=2000)
    parser.add_argument("--page-bytes", type=int, default=6000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--duration", type=float, default=40.0)
    parser.add_argument("--latency", choices=("real", "loopback"), default="loopback")
    parser.add_argument("--rate", type=int, default=67, help="py-spy samples per second")
    parser.add_argument("--top", type=int, default=0, help="also list the N hottest functions")
    parser.add_argument("-s", dest="settings", action="append", default=[])
    parser.add_argument("--keep", type=Path, help="keep the run's files (and py-spy's) here")
    args = parser.parse_args()
    spy = shutil.which("py-spy")
    if spy is None:
        print("py-spy is not installed (pip install py-spy)", file=sys.stderr)
        return 2
    params = world_params(args.size, args.sites, args.page_bytes, args.seed, args.latency)
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="courtier-profile-"))
    raw = workdir / "py-spy.txt"
    command = [spy, "record", "--subprocesses", "--nonblocking", "-r", str(args.rate)]
    command += ["-f", "raw", "-o", str(raw), "--", sys.executable, "-m", "courtier"]
    result = run("courtier", "profile", params, workdir / "run", args.duration,
                 settings=args.settings, courtier=command)  # fmt: skip
    if not raw.exists():
        print(f"py-spy wrote nothing (see {workdir})", file=sys.stderr)
        return 1
    parts, leaves = read_samples(raw)
    total = sum(parts.values()) or 1
    d = result.as_dict()
    requests = max(1, int(d.get("requests") or 0))
    cpu_ms = 1000 * float(d.get("cpu_s") or 0.0) / requests
    print(f"requests={requests} cpu_s={d.get('cpu_s')} cpu_ms_per_request={cpu_ms:.2f} "
          f"samples={total} (py-spy's own CPU counted in cpu_s)")  # fmt: skip
    print("| part | share of samples | CPU-ms per request |")
    print("|---|---|---|")
    for name, count in parts.most_common():
        share = count / total
        print(f"| {name} | {share:.1%} | {share * cpu_ms:.3f} |")
    if args.top:
        print()
        for frame, count in leaves.most_common(args.top):
            print(f"{count / total:6.1%}  {frame}")
    if args.keep is None:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        (workdir / "profile.json").write_text(json.dumps({"parts": parts, "run": d}, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
