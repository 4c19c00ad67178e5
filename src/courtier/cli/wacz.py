"""``courtier wacz [--out OUT] [-o FILE.wacz] [--title T] [--json]``: the crawl's archive as
one WACZ file (``courtier.sinks.wacz``: WACZ 1.1.1, what ReplayWeb.page, pywb and py-wacz
open).

Packages every finished WARC file of ``OUT/warc/`` with a ZipNum CDXJ index, the list of its
HTML pages (titled from the documents) and ``datapackage.json`` (every file's sha256), into
``-o FILE`` (default ``OUT/export/crawl.wacz``), written beside its name and renamed into
place. A file a live crawl is still writing (``.open``) is left out: run the command again
after the crawl to include it. Prints the file's path and what went in (``--json``: one
object). Exit status: 0 written; 2 bad input (no finished WARC file under ``--out``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from courtier.inputs import InputError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "wacz",
        help="package a crawl's WARC files as one WACZ (ReplayWeb.page, pywb)",
        description="Write the crawl's finished WARC files, a CDXJ index, the list of its "
        "pages and datapackage.json (sha256 of every file) as one WACZ 1.1.1 file: "
        "ReplayWeb.page, pywb and py-wacz open it. A file a live crawl is still writing is "
        "left out.",
    )
    parser.add_argument(
        "--out", type=Path, default=Path("crawl-out"), help="the crawl's output directory"
    )
    parser.add_argument(
        "-o", "--output", type=Path, help="the WACZ file to write (default OUT/export/crawl.wacz)"
    )
    parser.add_argument("--title", help="the collection's title (datapackage.json)")
    parser.add_argument("--json", action="store_true", help="what was packaged, as JSON")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from courtier.sinks.wacz import NothingToPackage, write_wacz

    out: Path = args.out
    if not out.is_dir():
        raise InputError(f"--out: {out}: not a directory (a crawl's output directory)")
    target: Path = args.output or out / "export" / "crawl.wacz"
    try:
        result = write_wacz(out, target, title=args.title)
    except NothingToPackage as exc:
        raise InputError(f"--out: {exc} (a crawl's output directory)") from None
    except OSError as exc:
        raise InputError(f"-o: {target}: {exc.strerror or exc}") from None
    if args.json:
        document = {
            "wacz": str(result.path),
            "warcs": result.warcs,
            "records": result.records,
            "pages": result.pages,
            "bytes": result.path.stat().st_size,
            "skipped_open": result.skipped,
            "damaged": result.damaged,
        }
        print(json.dumps(document, indent=2))
        return 0
    print(result.path)
    files = len(result.warcs)
    print(
        f"{files} WARC file{'' if files == 1 else 's'}, {result.records} records indexed, "
        f"{result.pages} pages"
    )
    for name in result.skipped:
        print(f"left out {name}: a crawl is still writing it")
    for name, why in result.damaged.items():
        print(f"{name}: packaged up to a damaged record ({why})")
    return 0
