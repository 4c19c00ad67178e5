"""``courtier crawl``: crawl the seed sites politely until stopped or out of time."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from courtier.config import Config, ConfigError, load
from courtier.net.guard import Guard
from courtier.net.policy import AddressPolicy
from courtier.net.resolve import DnsResolver
from courtier.origins.dns_evidence import DnsEvidenceSource
from courtier.origins.infer import OriginInference
from courtier.pipeline.engine import Engine as Crawler
from courtier.pipeline.site import read_seeds
from courtier.pipeline.stats import CrawlStats


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, help="TOML configuration file")
    parser.add_argument(
        "-s",
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="override one setting (repeatable), e.g. -s limits.origin.rate=4",
    )


def add_network_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dns", metavar="HOST:PORT", help="DNS server to resolve through (default: the system's)"
    )
    parser.add_argument(
        "--allow-net",
        action="append",
        default=[],
        metavar="CIDR",
        help="let the crawl reach this otherwise blocked range (repeatable); the only way "
        "past the SSRF guard, e.g. the simulated web's loopback range",
    )


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "crawl",
        help="crawl the seed sites",
        description="Crawl the sites listed in the seed file: only seed sites are fetched, links "
        "to other sites are recorded as the horizon. Stops after --duration seconds, or on "
        "Ctrl-C / SIGTERM; running again with the same --store resumes.",
    )
    parser.add_argument(
        "--seeds", type=Path, required=True, help="file of seed URLs or hostnames, one per line"
    )
    add_network_arguments(parser)
    parser.add_argument(
        "--out", type=Path, default=Path("crawl-out"), help="output directory (default crawl-out)"
    )
    parser.add_argument("--store", type=Path, help="frontier store (default: OUT/frontier.sqlite3)")
    parser.add_argument(
        "--duration", type=float, help="stop by itself, cleanly, within this many seconds"
    )
    parser.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    add_config_arguments(parser)
    parser.set_defaults(handler=handle)


def load_config(args: argparse.Namespace) -> Config:
    return load(args.config, args.overrides)


def make_crawler(
    config: Config,
    *,
    seeds_path: Path,
    dns: str | None,
    allow_net: list[str],
    out: Path,
    store: Path | None,
    duration: float | None,
) -> Crawler:
    """Everything ``courtier crawl`` wires together; raises ValueError on bad input."""
    policy = AddressPolicy(allow=allow_net)
    guard = Guard(policy, DnsResolver(dns))
    seeds, errors = read_seeds(seeds_path.read_text(encoding="utf-8").splitlines())
    for line, error in errors:
        print(f"courtier: skipping seed {line!r}: {error}", file=sys.stderr)
    if not seeds:
        raise ValueError(f"{seeds_path}: no usable seed")
    return Crawler(
        config,
        store_path=store or out / "frontier.sqlite3",
        out_dir=out,
        guard=guard,
        address_allowed=lambda address: policy.check(address).allowed,
        seeds=seeds,
        duration=duration,
        origins=OriginInference(DnsEvidenceSource(dns)),
    )


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
            "missed slots (rebook rate)",
            f"{data['missed_slots']} of {data['slots']} ({data['rebook_rate']:.2%})",
        ),
        ("bookings refused for lead", data["lead_refusals"]),
        (
            "latency slowdowns / origin pauses",
            f"{sum(data['latency_slowdowns'].values())} / {data['origin_pauses']}",
        ),
        (
            "media requests (cache hit/miss)",
            ", ".join(f"{k} {v}" for k, v in sorted(data["media_requests"].items()))
            + f" ({data['cache'].get('hit', 0)}/{data['cache'].get('miss', 0)})",
        ),
        ("event loop lag p99 / max", f"{data['loop_lag_p99_ms']} / {data['loop_lag_max_ms']} ms"),
        ("frontier", ", ".join(f"{k} {v}" for k, v in data["store"].items())),
    ]
    for name, value in rows:
        table.add_row(name, str(value))
    console.print(table)
    if stats.top_horizon:
        console.print(
            "most-linked horizon sites: "
            + ", ".join(f"{site} ({n})" for site, n in stats.top_horizon[:5])
        )


def handle(args: argparse.Namespace) -> int:
    console = Console(stderr=args.json)
    try:
        config = load_config(args)
        crawler = make_crawler(
            config,
            seeds_path=args.seeds,
            dns=args.dns,
            allow_net=args.allow_net,
            out=args.out,
            store=args.store,
            duration=args.duration,
        )
    except (ConfigError, ValueError, OSError) as exc:
        print(f"courtier crawl: {exc}", file=sys.stderr)
        return 2
    stats = asyncio.run(run_with_progress(crawler, console))
    if args.json:
        print(json.dumps(stats.as_dict()))
    else:
        print_summary(stats, console)
    return 0
