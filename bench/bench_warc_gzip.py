"""Benchmark: compressing WARC records, one gzip member each, by level and compressor.

``warc.compression_level`` 1-3 are ISA-L's igzip levels, 4-9 zlib's (``sinks.warc``). This
prints, for each, the CPU time of ``compress_member`` per page, the throughput and the ratio,
on simulated pages (``bench_parse``'s generators, fixed seeds) and, with ``--html-dir``, on
real HTML files of two size bands found there (the first 200 and 40, sorted by path). zlib's
levels 1 and 3, which the setting no longer reaches, are shown as ``zlib 1`` and ``zlib 3``
for comparison. Best of five passes over each set, ``time.process_time()``.

    PYTHONPATH=src python bench/bench_warc_gzip.py
    PYTHONPATH=src python bench/bench_warc_gzip.py \\
        --html-dir ~/.rustup/toolchains/stable-x86_64-unknown-linux-gnu/share/doc/rust/html
"""

from __future__ import annotations

import argparse
import sys
import time
import zlib
from collections.abc import Callable
from pathlib import Path

from courtier.sinks.warc import compress_member, window_bits

sys.path.insert(0, str(Path(__file__).parent))
from bench_parse import ordinary_page, small_page


def _zlib(level: int) -> Callable[[bytes], bytes]:
    def compress(data: bytes) -> bytes:
        packer = zlib.compressobj(level, zlib.DEFLATED, window_bits(len(data)) | 16)
        return packer.compress(data) + packer.flush()

    return compress


def _setting(level: int) -> Callable[[bytes], bytes]:
    return lambda data: compress_member(data, level)


def _real(directory: Path, low: int, high: int, count: int) -> list[bytes]:
    found = []
    for path in sorted(directory.rglob("*.html")):
        if low <= path.stat().st_size < high:
            found.append(path.read_bytes())
            if len(found) == count:
                break
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--html-dir", type=Path, help="real HTML pages to compress as well")
    args = parser.parse_args()
    sets = {
        "simulated 6 KB": [small_page(6000, seed) for seed in range(50)],
        "simulated 100 KB": [ordinary_page(100_000, seed) for seed in range(10)],
    }
    if args.html_dir is not None:
        sets["real 4-6 KB"] = _real(args.html_dir, 4000, 6000, 200)
        sets["real 90-110 KB"] = _real(args.html_dir, 90_000, 110_000, 40)
    ways = [("zlib 1", _zlib(1)), ("zlib 3", _zlib(3))]
    ways += [(f"setting {level}", _setting(level)) for level in (1, 2, 3, 6)]
    for name, pages in sets.items():
        if not pages:
            continue
        total = sum(map(len, pages))
        for label, compress in ways:
            best, out = float("inf"), 0
            for _ in range(5):
                started = time.process_time()
                out = sum(len(compress(page)) for page in pages)
                best = min(best, time.process_time() - started)
            print(
                f"{name:17} ({len(pages):3} pages) {label:10}"
                f" {best / len(pages) * 1e6:7.1f} us/page"
                f" {total / best / 1e6:5.0f} MB/s  ratio {total / out:.2f}"
            )


if __name__ == "__main__":
    main()
