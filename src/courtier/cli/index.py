"""``courtier index [--out OUT] [--json]``: a CDXJ index of the crawl's WARC files.

Writes ``OUT/warc/index.cdxj`` (SURT-keyed, sorted: what pywb and OpenWayback replay from;
``courtier.sinks.cdxj``), from every finished WARC file there. A file a live crawl is still
writing (``.open``) is left out: run the command again after the crawl to include it.
Prints the index's path and what went in (``--json``: one object). On a terminal, a
progress bar on stderr while the files are read (none with ``--json``).
Exit status: 0 written; 2 bad input (no WARC directory under ``--out``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from courtier.cli.progress_bar import progress_bar
from courtier.inputs import InputError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "index",
        help="write a CDXJ index (SURT keys) of a crawl's WARC files, for replay",
        description="Write OUT/warc/index.cdxj, the CDXJ index pywb and OpenWayback replay "
        "from, over the crawl's finished WARC files (a file a live crawl is still writing is "
        "left out). Running it again rebuilds the same index.",
    )
    parser.add_argument(
        "--out", type=Path, default=Path("crawl-out"), help="the crawl's output directory"
    )
    parser.add_argument("--json", action="store_true", help="what was indexed, as JSON")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from courtier.sinks.cdxj import write_index

    out: Path = args.out
    directory = out / "warc"
    if not directory.is_dir():
        raise InputError(f"--out: {out}: no warc/ directory (a crawl's output directory)")
    with progress_bar("indexing WARC files", json_output=args.json) as advance:
        result = write_index(directory, progress=advance)
    if args.json:
        document = {
            "index": str(result.path),
            "files": result.files,
            "lines": result.lines,
            "skipped_open": result.skipped,
            "finished_orphans": result.finished,
            "damaged": result.damaged,
        }
        print(json.dumps(document, indent=2))
        return 0
    print(result.path)
    files = len(result.files)
    print(f"{result.lines} records from {files} WARC file{'' if files == 1 else 's'}")
    for name in result.skipped:
        print(f"left out {name}: a crawl is still writing it")
    for name, why in result.damaged.items():
        print(f"{name}: indexed up to a damaged record ({why})")
    return 0
