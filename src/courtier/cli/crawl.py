"""``courtier crawl``: crawl the seed sites politely until stopped, out of time, out of
budget, or (``--until-done``) done."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from courtier.cli.options import (
    add_config_arguments,
    add_network_arguments,
    load_config,
    seconds,
    whole,
)
from courtier.config import Config
from courtier.frontier.base import FrontierError
from courtier.inputs import (
    InputError,
    PostgresStore,
    SqliteStore,
    StoreSpec,
    parse_store,
    read_seed_file,
)
from courtier.pipeline.stats import CrawlStats
from courtier.politeness.limiter.base import LimiterError

if TYPE_CHECKING:
    from courtier.observe.observation import Observation
    from courtier.pipeline.engine import Engine as Crawler
    from courtier.pipeline.events import Observer
    from courtier.sinks.documents import Sink

# The engine is imported where a crawl is built, not here: ``crawl --workers N`` only starts N
# copies of this command, and importing the engine took it half a second of CPU first.

__all__ = [
    "add_config_arguments",
    "add_network_arguments",
    "load_config",
    "make_crawler",
    "print_summary",
    "run_with_progress",
]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "crawl",
        help="crawl the seed sites",
        description="Crawl the sites listed in the seed file: only seed sites are fetched, links "
        "to other sites are recorded as the horizon. Stops after --duration seconds, with "
        "--until-done once nothing is due but future refreshes, when a budget is spent "
        "(-s crawl.max_requests=N, crawl.max_pages, crawl.max_bytes: totals over every run on "
        "the store), or on Ctrl-C / SIGTERM; the summary says which (ended by). Running again "
        "with the same --store resumes. Every input is checked before anything starts (exit "
        "status 2 and one line naming the input).",
    )
    parser.add_argument(
        "--seeds", type=Path, required=True, help="file of seed URLs or hostnames, one per line"
    )
    add_network_arguments(parser)
    parser.add_argument(
        "--out", type=Path, default=Path("crawl-out"), help="output directory (default crawl-out)"
    )
    parser.add_argument(
        "--store",
        metavar="PATH|URL",
        help="frontier store: a SQLite file (default OUT/frontier.sqlite3) or a PostgreSQL URL "
        "(postgresql://USER@HOST/DB, postgresql:///DB?host=/socket/dir)",
    )
    parser.add_argument(
        "--duration", type=seconds, help="stop by itself, cleanly, within this many seconds"
    )
    parser.add_argument(
        "--until-done",
        action="store_true",
        help="stop by itself, exit status 0, once every URL reachable inside the seed has been "
        "fetched once (or failed or refused for good) and nothing is due but refreshes "
        "scheduled for later",
    )
    parser.add_argument(
        "--workers",
        type=whole(1, 64),
        default=1,
        help="worker processes to start on this machine (a PostgreSQL store only; the same "
        "command on another machine joins the same crawl)",
    )
    add_observe_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    parser.add_argument(
        "--no-warc",
        action="store_true",
        help="write no WARC files in OUT/warc/ (the same as -s warc.enabled=false)",
    )
    add_config_arguments(parser)
    parser.set_defaults(handler=handle)


def add_observe_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--metrics-port",
        type=whole(1, 65535),
        help="serve Prometheus metrics on this port of [observe] metrics_host (127.0.0.1)",
    )
    parser.add_argument(
        "--no-request-log",
        dest="request_log",
        action="store_false",
        help="do not write OUT/requests/*.parquet (one row per request)",
    )
    parser.add_argument(
        "--no-live", dest="live", action="store_false", help="no live view on a terminal"
    )


def observe_config(config: Config, args: argparse.Namespace) -> Config:
    """The configuration with the observing flags applied (they win over every layer)."""
    observe = config.observe
    if args.metrics_port is not None:
        observe = dataclasses.replace(observe, metrics_port=args.metrics_port)
    if not args.request_log:
        observe = dataclasses.replace(observe, request_log=False)
    if not args.live:
        observe = dataclasses.replace(observe, live=False)
    return dataclasses.replace(config, observe=observe)


def make_crawler(
    config: Config,
    *,
    seeds_path: Path,
    dns: str | None,
    allow_net: list[str],
    out: Path,
    store: StoreSpec | Path | str | None,
    duration: float | None,
    sink: Sink | None = None,
    handle_signals: bool = True,
    observer: Observer | None = None,
    until_done: bool = False,
) -> Crawler:
    """Everything ``courtier crawl`` wires together, every input checked first; raises
    ``InputError`` (one line naming the input) on bad input. ``store`` is the spec from
    ``parse_store`` (a path or a URL is parsed here); None: ``OUT/frontier.sqlite3``."""
    from courtier.api import build_engine

    seeds, errors = read_seed_file(seeds_path)
    if store is None:
        spec: StoreSpec = SqliteStore(out / "frontier.sqlite3")
    elif isinstance(store, SqliteStore | PostgresStore):
        spec = store
    else:
        spec = parse_store(store)
    engine = build_engine(
        config,
        seeds=seeds,
        store=spec,
        out=out,
        dns=dns,
        allow_net=allow_net,
        duration=duration,
        sink=sink,
        handle_signals=handle_signals,
        observer=observer,
        until_done=until_done,
    )
    for line, error in errors:
        print(f"courtier crawl: skipping seed {line!r}: {error}", file=sys.stderr)
    return engine


def observation_for(config: Config, out: Path, console: Console) -> Observation:
    """The crawl's observer; with ``[observe] anomaly_slowdown`` a raised anomaly halves its
    origin's rate (``run_observed`` connects it to the engine)."""
    from courtier.observe.observation import Observation

    observation = Observation(
        out,
        config.observe.settings(),
        limits=config.limits.policy(),
        costs=config.costs.model(),
        console=console,
        slow_down=lambda anomaly: _slow_down(observation, anomaly),
    )
    return observation


def _slow_down(observation: Observation, anomaly: Any) -> None:
    from courtier.pipeline.engine import Engine

    engine = getattr(observation, "engine", None)
    if isinstance(engine, Engine) and anomaly.state == "raised" and anomaly.origin:
        engine.slow_origin(anomaly.origin)


async def run_observed(crawler: Crawler, observation: Observation) -> CrawlStats:
    """Run the crawl under ``observation``: request log, metrics, anomalies, progress."""
    from courtier.observe.probe import engine_probe

    observation.watch(engine_probe(crawler))
    observation.engine = crawler  # type: ignore[attr-defined]
    async with observation:
        return await crawler.run()


async def run_with_progress(crawler: Crawler, console: Console) -> CrawlStats:
    """Run the crawl, showing a one-line live status on a terminal."""
    task = asyncio.create_task(crawler.run())
    started = time.monotonic()
    with console.status("starting") as status:
        while not task.done():
            await asyncio.wait({task}, timeout=0.5)
            stats = crawler.stats
            elapsed = max(time.monotonic() - started, 1e-9)
            status.update(
                f"{stats.requests} requests  {stats.requests / elapsed:.1f}/s  "
                f"refused {sum(stats.refused.values())}  horizon links {stats.horizon_links}  "
                f"missed slots {stats.missed_slots}"
            )
    return task.result()


def print_summary(stats: CrawlStats, console: Console) -> None:
    data = stats.as_dict()
    table = Table(title="Crawl summary", show_header=False)
    table.add_column("what")
    table.add_column("value", justify="right")
    rows: list[tuple[str, Any]] = [
        ("elapsed", f"{data['elapsed_s']} s"),
        ("ended by", _ended_text(data)),
        ("seed sites", data["seed_sites"]),
        ("requests (robots.txt)", f"{data['requests']} ({data['robots_requests']})"),
        ("request rate", f"{data['requests_per_s']} /s"),
        ("pages fetched (2xx)", data["by_status"].get("2xx", 0)),
        ("by status", ", ".join(f"{k} {v}" for k, v in sorted(data["by_status"].items()))),
        ("refused, by reason", ", ".join(f"{k} {v}" for k, v in sorted(data["refused"].items()))),
        (
            "links to blocked addresses",
            ", ".join(f"{k} {v}" for k, v in sorted(data["bait_links"].items())) or "none",
        ),
        ("robots.txt", ", ".join(f"{k} {v}" for k, v in sorted(data["robots"].items()))),
        ("new URLs queued", data["new_urls"]),
        (
            "horizon links / sites",
            f"{data['horizon_links']} / {data['store'].get('horizon_sites')}",
        ),
        (
            "spacing achieved / allowed, keys waited on (median)",
            _spacing_text(data.get("spacing", {})),
        ),
        (
            "missed slots (rebook rate)",
            f"{data['missed_slots']} of {data['slots']} ({data['rebook_rate']:.2%})",
        ),
        (
            "bookings refused for lead / lanes that joined a key's line unasked / held by "
            "the start gate",
            f"{data['lead_refusals']} / {data['line_joins']} / {data['gate_holds']}",
        ),
        (
            "latency slowdowns / origin pauses",
            f"{sum(data['latency_slowdowns'].values())} / {data['origin_pauses']}",
        ),
        (
            "media requests (cache hit/miss)",
            ", ".join(f"{k} {v}" for k, v in sorted(data["media_requests"].items()))
            + f" ({data['cache'].get('hit', 0)}/{data['cache'].get('miss', 0)})",
        ),
        (
            "pages rendered (requests of renders)",
            ", ".join(f"{k} {v}" for k, v in sorted(data["renders"].items()))
            + " ("
            + ", ".join(f"{k} {v}" for k, v in sorted(data["render_requests"].items()))
            + ")"
            if data["renders"]
            else "none",
        ),
        ("event loop lag p99 / max", f"{data['loop_lag_p99_ms']} / {data['loop_lag_max_ms']} ms"),
        (
            "WARC records (bytes, writer ms each)",
            ", ".join(f"{k} {v}" for k, v in sorted(data["warc_records"].items()))
            + f" ({data['warc_bytes']} B, {data['warc_write_ms_per_capture']} ms)"
            if data["warc_records"]
            else "none",
        ),
        ("unchanged refreshes (304)", data["not_modified"]),
        (
            "redacted, by kind",
            ", ".join(f"{k} {v}" for k, v in sorted(data["redactions"].items())) or "nothing",
        ),
        (
            "robots meta: nofollow pages / links, noindex",
            f"{data['nofollow_pages']} / {data['nofollow_links']}, {data['noindex_pages']}",
        ),
        (
            "PDFs and feeds read (unreadable)",
            ", ".join(f"{k} {v}" for k, v in sorted(data["formats"].items())) or "none",
        ),
        (
            "parse hook: pages with fields / errors",
            f"{data['hook_fields']} / "
            + (", ".join(f"{k} {v}" for k, v in sorted(data["hook_errors"].items())) or "none"),
        ),
        ("frontier", ", ".join(f"{k} {v}" for k, v in data["store"].items())),
    ]
    for name, value in rows:
        table.add_row(name, str(value))
    console.print(table)
    for site, why in sorted(stats.adopted.items()):
        console.print(f"{site} joined the seed: {why}")
    for site, target in sorted(stats.seed_redirects.items()):
        console.print(f"seed {site} redirects out of scope, to {target}: not followed")
    if stats.top_horizon:
        console.print(
            "most-linked horizon sites: "
            + ", ".join(f"{site} ({n})" for site, n in stats.top_horizon[:5])
        )


def handle(args: argparse.Namespace) -> int:
    console = Console(stderr=args.json)
    config = load_config(args)
    if args.no_warc:
        config = dataclasses.replace(config, warc=dataclasses.replace(config.warc, enabled=False))
    store = parse_store(args.store) if args.store is not None else None
    if args.workers > 1:
        if not isinstance(store, PostgresStore):
            raise InputError(
                f"--workers {args.workers}: several workers need a PostgreSQL store (--store "
                "postgresql://…); one crawl at a time runs on a SQLite store"
            )
        return run_workers(args.words, args.workers, args.json, config.crawl.parse_workers)
    from courtier.pipeline.store_lock import StoreBusy
    from courtier.runtime import event_loop

    config = observe_config(config, args)
    observation = observation_for(config, args.out, console)
    crawler = make_crawler(
        config,
        seeds_path=args.seeds,
        dns=args.dns,
        allow_net=args.allow_net,
        out=args.out,
        store=store,
        duration=args.duration,
        observer=observation,
        until_done=args.until_done,
    )
    try:
        stats = event_loop.run(run_observed(crawler, observation), config.crawl.event_loop)
    except StoreBusy as exc:
        print(f"courtier crawl: --store {crawler.store_path}: {exc}", file=sys.stderr)
        return 2
    except (FrontierError, LimiterError) as exc:  # the store failed under the running crawl
        print(f"courtier crawl: --store: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(stats.as_dict()))
    else:
        print_summary(stats, console)
    return 0


def run_workers(words: list[str], workers: int, as_json: bool, parse_workers: int = 0) -> int:
    """Start ``workers`` processes of this very command (one worker each, ``worker_command``),
    forward SIGINT and SIGTERM to them, and wait; the exit status is the worst of theirs."""
    command = worker_command(words, workers, parse_workers, os.cpu_count() or 1)
    children = [
        subprocess.Popen(command, stdout=subprocess.PIPE if as_json else None, text=True)
        for _ in range(workers)
    ]

    def forward(signum: int, _frame: object) -> None:
        for child in children:
            if child.poll() is None:
                child.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        outputs = [child.communicate()[0] for child in children]
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if as_json:
        summaries = [json.loads(out.strip().splitlines()[-1]) for out in outputs if out.strip()]
        total = sum(int(s.get("requests", 0)) for s in summaries)
        print(json.dumps({"workers": summaries, "requests": total}))
    return max(child.returncode for child in children)


def worker_command(words: list[str], workers: int, parse_workers: int, cores: int) -> list[str]:
    """The command one of ``workers`` workers on this machine runs: this one without
    ``--workers``. Parse workers, "one per core" by default, are one per core *of this
    machine*: each worker gets its share of the cores. A parse pool per worker sized to every
    core put twice as many parsers as cores beside each other, each often asleep, and a page
    took a third more CPU to parse (``python bench/bench_rebook.py --size web --sites 2000
    --page-bytes 6000 --duration 60 --store postgresql --workers 2``)."""
    command = [sys.executable, "-m", "courtier", *_without_workers(words)]
    if parse_workers == 0:  # the default; an operator's own number is kept as given
        command += ["-s", f"crawl.parse_workers={max(1, cores // workers)}"]
    return command


def _without_workers(words: list[str]) -> list[str]:
    kept: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word == "--workers":
            skip = True
        elif not word.startswith("--workers="):
            kept.append(word)
    return kept


def _ended_text(data: dict[str, Any]) -> str:
    """What ended the crawl, and what every run on the store spent when it had budgets."""
    spent = data.get("spent") or {}
    if not spent:
        return str(data.get("ended_by") or "-")
    figures = ", ".join(f"{k} {v}" for k, v in spent.items())
    return f"{data.get('ended_by') or '-'} (spent, every run: {figures})"


def _spacing_text(spacing: dict[str, Any]) -> str:
    from courtier.pipeline.spacing_report import describe

    return describe(spacing)
