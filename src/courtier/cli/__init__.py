"""The `courtier` command: one subcommand per module in this package, imported only when used.

Rules:
- ``COMMANDS`` is the registry, in the order ``courtier --help`` lists them. Adding a
  subcommand is one line there, ``Command("status", "courtier.cli.status", "one-line help")``,
  plus its module, which exposes ``register(subparsers)``: it adds its parser and sets
  ``handler`` (a function of the parsed namespace returning the exit status) as a default.
  A module may also expose ``rewrite(words)``, given the words after its command name (for
  shorthands such as ``courtier robots URL``).
- Only the chosen subcommand's module is imported: ``courtier --version`` and ``courtier
  --help`` import none, so start-up does not pay for scipy, aiohttp or the crawl engine.
- Global options (``-v``, ``--log-format``) are accepted before or after the subcommand.
- Exit status: 0 success (a check: everything allowed), 1 a check refused or disallowed
  something, 2 bad input. Bad input is one line on stderr, ``courtier CMD: INPUT: what is
  accepted``, never a traceback: handlers raise ``InputError`` (``ConfigError`` included) and
  this module prints it. Usage errors from argparse are one line too.
- Machine output goes to stdout (``--json``), logs to stderr.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, NoReturn

from courtier import __version__


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    module: str
    help: str


COMMANDS: tuple[Command, ...] = (
    Command("crawl", "courtier.cli.crawl", "crawl the seed sites"),
    Command("demo", "courtier.cli.demo", "crawl a simulated web on loopback and audit the crawl"),
    Command("simweb", "courtier.cli.simweb", "run a simulated web on loopback, or audit a crawl"),
    Command("config", "courtier.cli.config_cmd", "show the effective configuration and sources"),
    Command("url", "courtier.cli.url", "inspect how Courtier canonicalises URLs"),
    Command("net", "courtier.cli.net", "network safety tools (SSRF guard)"),
    Command("robots", "courtier.cli.robots", "check URLs against robots.txt (a file, or live)"),
    Command(
        "render", "courtier.cli.render", "render one page in headless Chromium, as a crawl would"
    ),
    Command("fetch", "courtier.cli.fetch", "fetch one URL as a crawl would; show every step"),
    Command("parse", "courtier.cli.parse", "read a saved page (or a URL) as a crawl; run the hook"),
    Command("origins", "courtier.cli.origins", "which sites share servers (origins) and why"),
    Command("rank", "courtier.cli.rank", "rank the host graph; promote horizon hosts to the seed"),
    Command("seed", "courtier.cli.seed", "request hosts, flag critical pages, list the seed"),
    Command("site", "courtier.cli.site", "pause, resume, slow down or drop sites of a crawl"),
    Command(
        "recrawl", "courtier.cli.recrawl", "fetch these URLs again as soon as politeness allows"
    ),
    Command("fresh", "courtier.cli.fresh", "the crawl's fast sources and why each is one"),
    Command("status", "courtier.cli.status", "a crawl's workers, leases, frontier and rates"),
    Command(
        "query", "courtier.cli.query", "run SQL over a crawl's request log and documents (DuckDB)"
    ),
    Command(
        "export", "courtier.cli.export", "write a crawl's documents as Parquet, CSV or JSON Lines"
    ),
    Command("report", "courtier.cli.report", "write OUT/report.html: charts from the request log"),
    Command("index", "courtier.cli.index", "write a CDXJ index of a crawl's WARC files (replay)"),
    Command("wacz", "courtier.cli.wacz", "package a crawl's WARC files as one WACZ (replay)"),
)

COMMAND_MODULES: tuple[str, ...] = tuple(command.name for command in COMMANDS)
"""The commands this process offers (tests narrow it to one)."""

EXIT_OK, EXIT_REFUSED, EXIT_USAGE = 0, 1, 2
LOG_FORMATS = ("text", "json")


class Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see '{self.prog} --help')\n")


def _commands() -> list[Command]:
    return [command for command in COMMANDS if command.name in COMMAND_MODULES]


def _command_word(words: Sequence[str]) -> int | None:
    """The index of the subcommand's name: the first word that is not a global option."""
    skip = False
    for index, word in enumerate(words):
        if skip:
            skip = False
        elif word == "--log-format":
            skip = True
        elif not word.startswith("-"):
            return index
    return None


def _add_global_options(parser: argparse.ArgumentParser, depth: int) -> None:
    """``-v`` and ``--log-format`` on this parser and every parser below it. Each depth
    keeps its own destination (a subparser's namespace replaces its parent's values)."""
    default = 0 if depth == 0 else argparse.SUPPRESS
    if "-v" not in parser._option_string_actions:
        parser.add_argument(
            "-v",
            "--verbose",
            action="count",
            dest=f"verbose_{depth}",
            default=default,
            help="more log output on stderr (-vv: debug)",
        )
    if "--log-format" not in parser._option_string_actions:
        parser.add_argument(
            "--log-format",
            choices=LOG_FORMATS,
            dest=f"log_format_{depth}",
            default="text" if depth == 0 else argparse.SUPPRESS,
            help="log lines as text or as JSON objects (default text)",
        )
    parser.set_defaults(command_prog=parser.prog)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                _add_global_options(sub, depth + 1)


def build_parser(chosen: str | None = None, module: ModuleType | None = None) -> Parser:
    """The parser: the chosen command's own, a one-line placeholder for every other."""
    parser = Parser(
        prog="courtier",
        description="A polite, controlled web crawler: as fast as politeness allows, "
        "and never faster.",
        epilog="Exit status: 0 done (or all allowed), 1 refused or disallowed, 2 bad input.",
    )
    parser.add_argument("--version", action="version", version=f"courtier {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for command in _commands():
        if command.name == chosen and module is not None:
            module.register(subparsers)
        else:
            subparsers.add_parser(command.name, help=command.help, add_help=False)
    _add_global_options(parser, 0)
    return parser


def _global(args: argparse.Namespace, name: str) -> list[Any]:
    """A global option's values, outermost parser first."""
    depths = sorted(int(k.rsplit("_", 1)[1]) for k in vars(args) if k.startswith(name + "_"))
    return [getattr(args, f"{name}_{depth}") for depth in depths]


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    index = _command_word(words)
    name = words[index] if index is not None else None
    command = next((c for c in _commands() if c.name == name), None)
    module = importlib.import_module(command.module) if command is not None else None
    rewrite = getattr(module, "rewrite", None)
    if rewrite is not None and index is not None:
        words = [*words[: index + 1], *rewrite(words[index + 1 :])]
    parser = build_parser(name, module)
    args = parser.parse_args(words)
    args.words = words  # the command line as given (``crawl --workers`` starts copies of it)
    from courtier.cli.logs import configure_logging

    configure_logging(sum(_global(args, "verbose")), _global(args, "log_format")[-1])
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    from courtier.inputs import InputError

    try:
        return int(handler(args))
    except InputError as exc:
        message = " ".join(str(exc).splitlines())
        print(f"{args.command_prog}: {message}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
