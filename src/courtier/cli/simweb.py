"""`courtier simweb serve` runs a simulated web; `courtier simweb audit` judges a crawl of it;
`courtier simweb truth` prints who shares servers in a world.

serve: builds the world from a seed number and a size (or `--fuzz SEED`: a generated web of
random hosting shapes, `courtier.simweb.fuzz`), listens on loopback, writes the seeds file
(one `http://host/` URL per line) and the info file (JSON: dns, allow_net, port, seeds, log,
world parameters), prints the info as one JSON line on stdout, and serves until SIGTERM or
Ctrl-C, when it flushes the request log and exits 0.

truth: the ground truth the audit judges by, without serving: every origin of the seed, its
budget, the shape that made it and its sites (`--json` for one object), from the same world
options as serve, or from a served world's info file.

audit: rebuilds the world from the parameters in the info file, reads the request log, prints
the audit tables (summary with media traffic, criteria, sites, origins with the cache misses
charged to them, the busiest buckets), optionally writes the audit as JSON (`--json FILE`, `-`
for stdout), and exits 0 when the walking-skeleton criteria hold, 1 when they do not.
`--extra-seeds FILE` names hosts (one per line) that count as seed too, such as the hosts
`courtier rank` promoted.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from courtier.cli.options import seconds, whole
from courtier.runtime.gc_pacing import GcPacing
from courtier.simweb.audit import DEFAULT_TOLERANCE, audit
from courtier.simweb.report import print_report, write_json
from courtier.simweb.server import SimWeb
from courtier.simweb.world import (
    SIZE_PRESETS,
    World,
    WorldParams,
    build_world,
    fuzz_params,
    params_for_total,
)

log = logging.getLogger("courtier.simweb")

SERVER_YOUNG_THRESHOLD = 20_000
"""The server's young collections, more frequent (so shorter) than the crawl's
(``gc_pacing.YOUNG_THRESHOLD``): a pause here shifts the stamps of requests that arrived
apart, which the audit would read as a violation; the crawl's measurements of a higher
threshold did not cover the server."""

_SIZE_FLAGS = {
    "standalone": "n_standalone",
    "cname_tenants": "n_cname_tenants",
    "header_tenants": "n_header_tenants",
    "horizon": "n_horizon",
    "page_bytes": "page_bytes",
    "items": "n_items",
}


_DESCRIPTION = """\
A simulated web on loopback (DNS and HTTP servers for many sites, with their ground truth):
serve it, crawl it, audit the crawl from the servers' side.

  serve --size small|demo|bench|web|spa|articles|news|fuzz [--seed N] [--sites N] ...
  serve --fuzz SEED [--sites N]    a generated web: random platforms (generic headers, their own
                                   caches, behind CDNs), shared hosting, CDN edges shared by
                                   strangers, www/bare pairs, media hosts and robots.txt
                                   redirects, all drawn from SEED (docs/simweb.md, "Fuzzed
                                   webs"); `courtier simweb --fuzz SEED` is the same, with its
                                   seeds file and request log in the current directory
  audit --info INFO                judge a crawl's request log against the world's ground truth
  truth --fuzz SEED | --info INFO  who shares servers: every origin, its budget and its sites
"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "simweb",
        help="run a simulated web on loopback (or a fuzzed one), audit a crawl of it",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--fuzz",
        dest="fuzz_shorthand",
        type=whole(0),
        metavar="SEED",
        help="without a SUBCOMMAND: serve the fuzzed web of SEED ('serve --fuzz SEED'), the "
        "seeds and info files in the current directory",
    )
    commands = parser.add_subparsers(dest="simweb_command", metavar="SUBCOMMAND")
    serve = _register_serve(commands)
    _register_audit(commands)
    _register_truth(commands)

    def shorthand(args: argparse.Namespace) -> int:
        if args.fuzz_shorthand is None:
            parser.print_usage(sys.stderr)
            print("courtier simweb: give a SUBCOMMAND, or --fuzz SEED", file=sys.stderr)
            return 2
        return serve_command(serve.parse_args(["--fuzz", str(args.fuzz_shorthand)]))

    parser.set_defaults(handler=shorthand)


def _add_world_options(parser: argparse.ArgumentParser) -> None:
    """The options that choose a world, shared by serve and truth."""
    chosen = parser.add_mutually_exclusive_group()
    chosen.add_argument(
        "--size", choices=sorted(SIZE_PRESETS), help="world size preset (default small)"
    )
    chosen.add_argument(
        "--fuzz",
        type=whole(0),
        metavar="SEED",
        help="a generated web of random hosting shapes drawn from SEED (the fuzz preset, "
        "seed SEED): platforms, shared hosting, CDN edges, www/bare pairs, media, redirects",
    )
    parser.add_argument(
        "--seed", type=whole(0), help="world seed number (default 1; --fuzz sets it)"
    )
    parser.add_argument(
        "--sites",
        type=whole(1),
        help="number of seed sites (split like a real mix; with --fuzz, generated sites fill "
        "what the older shapes leave)",
    )
    for flag in _SIZE_FLAGS:
        parser.add_argument(
            f"--{flag.replace('_', '-')}",
            dest=flag,
            type=whole(0),
            help=f"override {_SIZE_FLAGS[flag]}",
        )
    parser.add_argument("--world", metavar="JSON", help="all world parameters as a JSON object")


def _register_serve(commands: Any) -> argparse.ArgumentParser:
    serve: argparse.ArgumentParser = commands.add_parser(
        "serve", help="serve a simulated web until SIGTERM or Ctrl-C"
    )
    _add_world_options(serve)
    serve.add_argument(
        "--block", type=whole(1, 254), help="address block B of 127.B.0.0/16 (default random)"
    )
    serve.add_argument(
        "--port", type=whole(0, 65535), help="HTTP port (default 80 if bindable, else free)"
    )
    serve.add_argument("--log", type=Path, help="request log, JSON lines")
    serve.add_argument("--info", type=Path, help="write the info JSON here once listening")
    serve.add_argument("--seeds", type=Path, help="write the seed URLs here")
    serve.set_defaults(handler=serve_command)
    return serve


def _register_truth(commands: Any) -> None:
    truth = commands.add_parser(
        "truth", help="print who shares servers in a world: every origin, budget and sites"
    )
    _add_world_options(truth)
    truth.add_argument("--info", type=Path, help="the world of a served web's info file")
    truth.add_argument("--json", action="store_true", help="one JSON object on stdout")
    truth.set_defaults(handler=truth_command)


def _register_audit(commands: Any) -> None:
    cmd = commands.add_parser("audit", help="audit a request log against the world's ground truth")
    cmd.add_argument("--info", type=Path, required=True, help="the info file `serve` wrote")
    cmd.add_argument("--log", type=Path, help="request log (default: the one named in --info)")
    cmd.add_argument("--json", metavar="OUT", help="also write the audit as JSON ('-': stdout)")
    cmd.add_argument(
        "--site-interval",
        type=seconds,
        default=1.0,
        help="per-site start-to-start interval in seconds (default 1.0)",
    )
    cmd.add_argument(
        "--tolerance",
        type=float,
        default=DEFAULT_TOLERANCE,
        help=f"slack allowed on every interval (default {DEFAULT_TOLERANCE})",
    )
    cmd.add_argument(
        "--allow-media",
        action="store_true",
        help="do not count CDN/store/image-service requests as outside the seed",
    )
    cmd.add_argument(
        "--extra-seeds",
        type=Path,
        metavar="FILE",
        help="hosts that count as seed too, one per line (first word; '#' comments), such "
        "as the output of 'courtier seed list': hosts the crawl promoted or was asked to add",
    )
    cmd.set_defaults(handler=audit_command)


def read_extra_seeds(path: Path) -> list[str]:
    """Hosts from a file: the first word of each line; blank lines and ``#`` comments are
    skipped (so the output of ``courtier seed list`` can be used as it is)."""
    words = (line.split("#", 1)[0].split() for line in path.read_text().splitlines())
    return [line[0] for line in words if line]


def world_params(args: argparse.Namespace) -> WorldParams:
    if args.world:
        return WorldParams.from_json(json.loads(args.world))
    if getattr(args, "fuzz", None) is not None:
        if args.seed is not None and args.seed != args.fuzz:
            raise ValueError("--fuzz SEED sets the seed: leave --seed out")
        params = fuzz_params(args.fuzz)
    else:
        seed = 1 if args.seed is None else args.seed
        params = dataclasses.replace(SIZE_PRESETS[args.size or "small"], seed=seed)
    if args.sites is not None:
        params = params_for_total(params, args.sites)
    overrides = {field: getattr(args, flag) for flag, field in _SIZE_FLAGS.items()}
    return dataclasses.replace(params, **{k: v for k, v in overrides.items() if v is not None})


def serve_command(args: argparse.Namespace) -> int:
    try:
        world = build_world(world_params(args))
    except (ValueError, TypeError) as exc:
        print(f"courtier simweb serve: {exc}", file=sys.stderr)
        return 2
    base = args.info.parent if args.info else Path.cwd()
    log_path = args.log or base / "simweb-requests.jsonl"
    seeds_path = args.seeds or base / "simweb-seeds.txt"
    _use_uvloop()
    asyncio.run(_serve(world, args.block, args.port, log_path, seeds_path, args.info))
    return 0


async def _serve(
    world: World,
    block: int | None,
    port: int | None,
    log_path: Path,
    seeds_path: Path,
    info_path: Path | None,
) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    # A server process for as long as the run: its request stamps are the audit's ground
    # truth, so the collector must not stop it for a full scan of the world mid-run (no
    # periodic full collection either: the world and the page cache are what lives long).
    pacing = GcPacing(young_threshold=SERVER_YOUNG_THRESHOLD)
    async with SimWeb(world, block=block, port=port, log_path=log_path) as web:
        pacing.start()
        try:
            seeds = "".join(f"{url}\n" for url in web.seed_urls())
            await asyncio.to_thread(seeds_path.write_text, seeds)
            info = {**web.info(), "seeds": str(seeds_path), "pid": os.getpid()}
            if info_path is not None:
                text = json.dumps(info, indent=1) + "\n"
                await asyncio.to_thread(_write_atomically, info_path, text)
            print(json.dumps(info), flush=True)
            log.warning(
                "simweb: %d sites (%d seed) on %s port %d, DNS %s; SIGTERM to stop",
                len(world.sites),
                len(world.seed_hosts),
                web.allow_net,
                web.port,
                info["dns"],
            )
            await stop.wait()
        finally:
            pacing.stop()
        count = web.requests_logged
    log.warning("simweb: stopped after %d requests; log in %s", count, log_path)


def _write_atomically(path: Path, text: str) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text)
    partial.replace(path)


def _use_uvloop() -> None:
    try:
        import uvloop
    except ImportError:
        return
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())


def truth_command(args: argparse.Namespace) -> int:
    try:
        if args.info is not None:
            params = WorldParams.from_json(json.loads(args.info.read_text())["world"])
        else:
            params = world_params(args)
        world = build_world(params)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"courtier simweb truth: {exc}", file=sys.stderr)
        return 2
    truth = ground_truth(world)
    if args.json:
        print(json.dumps(truth))
        return 0
    console = Console()
    table = Table(title=f"Who shares servers (seed {params.seed})")
    for column in ("origin", "shape", "budget", "sites", "first sites"):
        right = column in ("budget", "sites")
        table.add_column(
            column, justify="right" if right else "left", no_wrap=column != "first sites"
        )
    for origin, entry in truth["origins"].items():
        hosts = entry["sites"]
        shown = ", ".join(hosts[:3]) + (f", … {len(hosts) - 3} more" if len(hosts) > 3 else "")
        table.add_row(origin, entry["shape"], f"{entry['budget']:g}", str(len(hosts)), shown)
    console.print(table)
    return 0


def ground_truth(world: World) -> dict[str, Any]:
    """Every origin of the seed with its budget, the shape or kind that made it and its sites;
    the generated CDNs' edges; the redirecting robots.txt files."""
    origins = {}
    for origin, hosts in world.origin_sites().items():
        first = world.sites[hosts[0]]
        origins[origin] = {
            "budget": world.origin_budget(origin),
            "shape": first.shape or str(first.kind),
            "sites": list(hosts),
        }
    return {
        "seed": world.params.seed,
        "seed_sites": len(world.seed_hosts),
        "origins": origins,
        "cdn_edges": [
            {"name": e.name, "says_cdn": e.says_cdn, "addresses": len(e.slots)}
            for e in world.cdn_edges
        ],
        "robots_redirects": {
            s.host: s.robots_redirect for s in world.sites.values() if s.robots_redirect
        },
    }


def audit_command(args: argparse.Namespace) -> int:
    try:
        info = json.loads(args.info.read_text())
        world = build_world(WorldParams.from_json(info["world"]))
        log_path = args.log or Path(info["log"])
        extra_seeds = read_extra_seeds(args.extra_seeds) if args.extra_seeds else []
        report = audit(
            log_path,
            world,
            site_interval=args.site_interval,
            tolerance=args.tolerance,
            allow_media=args.allow_media,
            extra_seeds=extra_seeds,
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"courtier simweb audit: {exc}", file=sys.stderr)
        return 2
    if args.json == "-":
        print(json.dumps(report.to_json(), ensure_ascii=False))
        print_report(report, Console(stderr=True))
    else:
        print_report(report, Console())
        if args.json:
            write_json(report, Path(args.json))
    return 0 if report.ok else 1
