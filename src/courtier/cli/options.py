"""Options shared by several subcommands, and argparse types that check values up front.

A type here raises ``argparse.ArgumentTypeError`` with what the option accepts, so a bad
value is one line: ``courtier crawl: argument --duration: must be a number of seconds above
0, got '-5'``. Nothing heavy is imported: every subcommand imports this module.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from courtier.config import Config


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="configuration file (TOML; or the JSON of 'courtier config show --json')",
    )
    parser.add_argument(
        "-s",
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="override one setting (repeatable), e.g. -s limits.origin.rate=4; "
        "environment variables COURTIER_SECTION__KEY come between the file and -s",
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


def load_config(args: argparse.Namespace) -> Config:
    """The effective configuration of ``--config`` and ``-s`` (with the environment)."""
    from courtier.config import load

    return load(args.config, args.overrides)


def seconds(text: str) -> float:
    """A positive, finite number of seconds."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a number of seconds, above 0, got {text!r}")
    return value


def whole(low: int, high: int | None = None) -> Callable[[str], int]:
    """A whole number from ``low`` (to ``high``)."""
    words = f"from {low} to {high}" if high is not None else f"at least {low}"
    words = f"a whole number, {words}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {words}, got {text!r}") from None
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"must be {words}, got {text!r}")
        return value

    parse.__name__ = "whole number"
    return parse


def fraction(text: str) -> float:
    """A number above 0 and at most 1."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be a number, above 0 and at most 1, got {text!r}")
    return value


port = whole(1, 65535)
