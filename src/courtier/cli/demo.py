"""``courtier demo``: start the simulated web, crawl it, audit the crawl from the server side."""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import sys
from pathlib import Path

from rich.console import Console

from courtier.cli.crawl import (
    add_observe_arguments,
    make_crawler,
    observation_for,
    observe_config,
    print_summary,
    run_observed,
)
from courtier.cli.options import add_config_arguments, load_config, seconds, whole
from courtier.inputs import InputError, prepare_directory
from courtier.runtime import event_loop
from courtier.simweb.audit import audit
from courtier.simweb.process import SERVER_NICE, SimWebError, SimWebProcess
from courtier.simweb.report import print_report, write_json
from courtier.simweb.world import SIZE_PRESETS

# What the demo writes into --out, removed at start so every demo begins from nothing.
_DEMO_FILES = ("frontier.sqlite3", "frontier.sqlite3-wal", "frontier.sqlite3-shm",
               "frontier.sqlite3.lock", "documents.jsonl", "audit.json", "summary.json",
               "anomalies.jsonl", "samples.jsonl", "stats.json", "report.html")  # fmt: skip


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="crawl a simulated web on loopback and audit the crawl",
        description="Start the simulated web (its own DNS server and many HTTP sites on "
        "loopback addresses), crawl it with the embedded SQLite store for a bounded time, then "
        "print the crawl summary and the server-side audit. Exit code 1 if the audit fails.",
    )
    parser.add_argument(
        "--duration", type=seconds, default=60.0, help="seconds of crawling (default 60)"
    )
    parser.add_argument(
        "--size",
        choices=sorted(SIZE_PRESETS),
        default="demo",
        help="size of the simulated web (default demo)",
    )
    parser.add_argument("--sites", type=whole(1), help="override: number of seed sites")
    parser.add_argument("--seed", type=whole(0), default=1, help="world seed number (default 1)")
    parser.add_argument(
        "--page-bytes",
        type=whole(1000),
        help="override: size of a simulated HTML page in bytes (at least 1000)",
    )
    parser.add_argument(
        "--out", type=Path, default=Path("demo-out"), help="output directory (default demo-out)"
    )
    add_observe_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print summary and audit as JSON")
    add_config_arguments(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    console = Console(stderr=args.json)
    config = load_config(args)
    params = dataclasses.replace(SIZE_PRESETS[args.size], seed=args.seed)
    if args.sites is not None:
        from courtier.simweb.world import params_for_total

        try:
            params = params_for_total(params, args.sites)
        except ValueError as exc:
            raise InputError(f"--sites {args.sites}: {exc}") from None
    if args.page_bytes is not None:
        params = dataclasses.replace(params, page_bytes=args.page_bytes)
    out: Path = prepare_directory(args.out)
    for name in _DEMO_FILES:
        (out / name).unlink(missing_ok=True)
    shutil.rmtree(out / "requests", ignore_errors=True)  # the last demo's request log
    shutil.rmtree(out / "warc", ignore_errors=True)  # and its WARC files
    shutil.rmtree(out / "documents", ignore_errors=True)  # and its document segments
    try:
        with SimWebProcess(out / "simweb", params, nice=SERVER_NICE) as web:
            console.print(
                f"simulated web: {len(web.world.seed_hosts)} seed sites, DNS {web.dns}, "
                f"allowed net {web.allow_net}, HTTP port {web.port}"
            )
            config = observe_config(config, args)
            observation = observation_for(config, out, console)
            crawler = make_crawler(
                config,
                seeds_path=web.seeds_path,
                dns=web.dns,
                allow_net=[web.allow_net],
                out=out,
                store=None,
                duration=args.duration,
                observer=observation,
            )
            stats = event_loop.run(run_observed(crawler, observation), config.crawl.event_loop)
    except SimWebError as exc:
        print(f"courtier demo: the simulated web failed: {exc}", file=sys.stderr)
        return 2
    # Media hosts are the seed pages' requisites: allowed exactly when the crawl fetches them.
    report = audit(
        web.log_path,
        web.world,
        site_interval=config.site_interval,
        allow_media=config.media.fetch,
    )
    write_json(report, out / "audit.json")
    (out / "summary.json").write_text(json.dumps(stats.as_dict(), indent=1) + "\n")
    if args.json:
        print(json.dumps({"crawl": stats.as_dict(), "audit": report.to_json()}))
    else:
        print_summary(stats, console)
        print_report(report, console)
        console.print(f"written: {out / 'documents'}/, {out / 'audit.json'}")
    return 0 if report.ok else 1
