"""The `courtier` command: one subcommand per module in this package.

Each subcommand module exposes ``register(subparsers)``, which adds its parser and sets
``handler`` (a function taking the parsed namespace and returning an exit code) as a default.
Machine output goes to stdout (``--json``), logs to stderr.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from courtier import __version__

# Order is the order shown in --help.
COMMAND_MODULES = (
    "crawl",
    "demo",
    "simweb",
    "url",
    "net",
    "robots",
    "origins",
    "rank",
    "seed",
    "recrawl",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="courtier",
        description="A polite, controlled web crawler: as fast as politeness allows, "
        "and never faster.",
    )
    parser.add_argument("--version", action="version", version=f"courtier {__version__}")
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="more log output on stderr (-vv: debug)"
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        module = importlib.import_module(f"courtier.cli.{name}")
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    words = list(sys.argv[1:] if argv is None else argv)
    for name in COMMAND_MODULES:
        rewrite = getattr(importlib.import_module(f"courtier.cli.{name}"), "rewrite", None)
        if rewrite is not None:
            words = rewrite(words)
    args = parser.parse_args(words)
    level = logging.WARNING - 10 * min(args.verbose, 2)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(handler(args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
