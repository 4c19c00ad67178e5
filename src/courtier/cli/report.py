"""``courtier report --out OUT [--output FILE] [--title TEXT]``: ``OUT/report.html``.

One self-contained page of charts and tables built from the run's request log, its
anomalies and its samples: requests per second, status codes over time, the busiest
origins' cost units per second against their budgets, latency percentiles and phases, the
rebook rate, the top sites and origins, anomalies on the time axis.
On a terminal, a progress bar on stderr while it is built. Exit status: 0 written (its path
on stdout); 2 bad input (no output directory, or a request log without rows).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from courtier.cli.progress_bar import progress_bar
from courtier.inputs import InputError
from courtier.observe.query import QueryError
from courtier.observe.report import ReportError, write_report


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "report",
        help="write an HTML report of a crawl (charts from its request log)",
        description="Write OUT/report.html: a single self-contained page with charts and "
        "tables from the crawl's request log, anomalies and samples.",
    )
    parser.add_argument(
        "--out", type=Path, default=Path("crawl-out"), help="the crawl's output directory"
    )
    parser.add_argument("--output", type=Path, help="where to write (default OUT/report.html)")
    parser.add_argument("--title", help="the page's title")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    out: Path = args.out
    if not out.is_dir():
        raise InputError(f"--out: {out}: not a directory (a crawl's output directory)")
    try:
        with progress_bar("writing the report") as advance:
            path = write_report(out, args.output, args.title, advance)
    except (ReportError, QueryError) as exc:
        raise InputError(f"--out: {exc}") from None
    print(path)
    return 0
