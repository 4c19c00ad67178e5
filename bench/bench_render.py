"""The render lane's cost: renders per second, CPU seconds per render, browser memory.

A small single-page app is served from memory by the intercept (no sockets): a document, a
stylesheet, an image and a script that fetches a JSON list of 20 links and writes them into
the DOM. Each row renders it ``--renders`` times on one ``Renderer`` with ``--browsers``
browsers and ``--pages`` pages at once in each, after ``--warmup`` renders per browser that
start them (their start is not timed).

- ``renders/s``: wall clock, the pages in flight waiting for ``settle`` (0.5 s by default)
  included: what one browser gives at that concurrency.
- ``CPU ms/render``: the browser's process tree (utime+stime of every live process, and of
  the children they reaped: renderers come and go with each page's context, from /proc) plus
  this process's own CPU (``time.process_time``), per render.
- ``renders/s/core``: 1000 / ``CPU ms/render``: what a fully busy core sustains once the
  settle wait is covered by enough pages in flight.
- ``RSS MiB``: the (largest) browser tree's resident memory not backed by files after the run (what
  the memory limit is compared with; the peak over the renders in brackets); ``+files``: the
  file-backed part, summed per process (the one Chromium executable mapped a dozen times).

    PYTHONPATH=src python bench/bench_render.py
    PYTHONPATH=src python bench/bench_render.py --renders 300 --pages 1 4 8 --settle 0.2
    PYTHONPATH=src python bench/bench_render.py --browsers 2 --pages 4
    PYTHONPATH=src python bench/bench_render.py --json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
import time
from dataclasses import asdict, dataclass

from courtier.render.browser import find_chromium
from courtier.render.intercept import Abort, BrowserRequest, Fulfil
from courtier.render.renderer import MiB, Renderer

_SITE: dict[str, tuple[str, bytes]] = {
    "http://spa.test/": (
        "text/html; charset=utf-8",
        b"<!doctype html><html><head><title>Shop</title>"
        b'<link rel="stylesheet" href="/style.css"><script src="/app.js"></script></head>'
        b'<body><header><img src="/logo.gif" alt="logo"></header><ul id="items"></ul></body>'
        b"</html>",
    ),
    "http://spa.test/app.js": (
        "application/javascript",
        b'addEventListener("DOMContentLoaded", () => {'
        b' fetch("/api/items").then(r => r.json()).then(items => {'
        b'  const list = document.getElementById("items");'
        b"  for (const item of items) {"
        b'   const li = document.createElement("li"); const a = document.createElement("a");'
        b"   a.href = item.href; a.textContent = item.name; li.appendChild(a);"
        b"   list.appendChild(li);"
        b"  }"
        b" });"
        b"});",
    ),
    "http://spa.test/api/items": (
        "application/json",
        json.dumps([{"href": f"/item/{i}", "name": f"Item {i}"} for i in range(20)]).encode(),
    ),
    "http://spa.test/style.css": ("text/css", b"ul { list-style: none } a { color: #036 }"),
    "http://spa.test/logo.gif": (
        "image/gif",
        b"GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00"
        b"\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;",
    ),
}


async def _intercept(request: BrowserRequest) -> Fulfil | Abort:
    found = _SITE.get(request.url)
    if found is None:
        return Abort("third-party")  # the favicon
    kind, body = found
    return Fulfil(200, (("Content-Type", kind),), body)


@dataclass
class Row:
    pages: int
    renders: int
    failures: int
    wall_s: float
    renders_per_s: float
    cpu_ms_per_render: float
    browser_cpu_ms_per_render: float
    renders_per_s_per_core: float
    rss_mib: float
    peak_rss_mib: float
    rss_files_mib: float
    browsers: int


async def _row(
    executable: str, browsers: int, pages: int, renders: int, warmup: int, settle: float
) -> Row:
    renderer = Renderer(
        executable,
        browsers=browsers,
        pages_per_browser=pages,
        settle=settle,
        pages_before_recycle=warmup + renders + 1,
        memory_limit=1 << 40,  # measured here, not acted on
    )
    try:
        # Enough pages at once that every browser starts before the clock does.
        await asyncio.gather(
            *(renderer.render("http://spa.test/", _intercept) for _ in range(warmup * browsers))
        )
        started = renderer.browsers()
        own_before = time.process_time()
        tree_before = sum(browser.usage().cpu_seconds for browser in started)
        start = time.perf_counter()
        results = await asyncio.gather(
            *(renderer.render("http://spa.test/", _intercept) for _ in range(renders))
        )
        wall = time.perf_counter() - start
        usages = [browser.usage() for browser in started]
        own = time.process_time() - own_before
        tree = sum(usage.cpu_seconds for usage in usages) - tree_before
        assert renderer.browsers() == started, "a browser was replaced during the run"
    finally:
        await renderer.close()
    failures = sum(result.error is not None for result in results)
    cpu_ms = 1000 * (own + tree) / renders
    return Row(
        pages=pages,
        renders=renders,
        failures=failures,
        wall_s=round(wall, 2),
        renders_per_s=round(renders / wall, 2),
        cpu_ms_per_render=round(cpu_ms, 1),
        browser_cpu_ms_per_render=round(1000 * tree / renders, 1),
        renders_per_s_per_core=round(1000 / cpu_ms, 2),
        rss_mib=round(max(usage.rss for usage in usages) / MiB, 1),
        peak_rss_mib=round(renderer.stats.peak_rss / MiB, 1),
        rss_files_mib=round(max(usage.rss_files for usage in usages) / MiB, 1),
        browsers=browsers,
    )


async def _main(args: argparse.Namespace) -> list[Row]:
    executable = find_chromium(args.chromium)
    if executable is None:
        sys.exit("no Chromium found (install Debian's chromium package, or give --chromium)")
    return [
        await _row(executable, browsers, pages, args.renders, args.warmup, args.settle)
        for browsers in args.browsers
        for pages in args.pages
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--renders", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--browsers", type=int, nargs="+", default=[1])
    parser.add_argument("--pages", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument("--settle", type=float, default=0.5)
    parser.add_argument("--chromium", default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    rows = asyncio.run(_main(args))
    if args.json:
        print(json.dumps([asdict(row) for row in rows], indent=2))
        return
    print(f"{os.cpu_count()} cores, settle {args.settle} s, {args.renders} renders per row")
    header = (
        "browsers", "pages", "renders/s", "CPU ms/render", "(browser)", "renders/s/core",
        "RSS MiB", "(peak)", "+files", "failed",
    )  # fmt: skip
    print(" ".join(f"{title:>14}" for title in header))
    for row in rows:
        cells = (
            row.browsers, row.pages, row.renders_per_s, row.cpu_ms_per_render,
            row.browser_cpu_ms_per_render, row.renders_per_s_per_core, row.rss_mib,
            row.peak_rss_mib, row.rss_files_mib, row.failures,
        )  # fmt: skip
        print(" ".join(f"{cell:>14}" for cell in cells))


if __name__ == "__main__":
    main()
