"""Benchmark: ``courtier index`` over WARC files of simulated pages.

Writes ``--captures`` captures of ``bench_parse``'s 6 KB ordinary pages (fixed seeds) into WARC
files of ``--file-mib`` MiB with the crawl's own writer, then times ``write_index`` (the
command's work: cdxj-indexer's lines per file, the damaged-tail check, the sorted merge),
best of three, wall and CPU time, and prints records per second.

    PYTHONPATH=src python bench/bench_cdxj.py --captures 20000
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from courtier.sinks.cdxj import write_index
from courtier.sinks.warc import Capture, WarcFiles

sys.path.insert(0, str(Path(__file__).parent))
from bench_parse import ordinary_page


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--captures", type=int, default=20_000)
    parser.add_argument("--file-mib", type=int, default=64)
    args = parser.parse_args()
    pages = [ordinary_page(6_000, seed=n) for n in range(50)]
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        files = WarcFiles(root, max_bytes=args.file_mib << 20)
        for n in range(args.captures):
            body = pages[n % len(pages)]
            files.write(
                Capture(
                    f"http://site{n % 997}.test/item/{n}",
                    time.time(),
                    200,
                    (("Content-Type", "text/html; charset=utf-8"),),
                    body,
                    ip_address="127.0.0.1",
                )
            )
        files.close()
        size = sum(path.stat().st_size for path in root.glob("*.warc.gz"))
        best = (float("inf"), float("inf"))
        for _ in range(3):
            wall, cpu = time.perf_counter(), time.process_time()
            result = write_index(root)
            took = (time.perf_counter() - wall, time.process_time() - cpu)
            best = min(best, took)
        print(
            f"{result.lines} records in {len(result.files)} files ({size / 1e6:.0f} MB): "
            f"{best[0]:.2f} s wall, {best[1]:.2f} s CPU, {result.lines / best[0]:,.0f} records/s"
        )


if __name__ == "__main__":
    main()
