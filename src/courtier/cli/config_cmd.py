"""``courtier config``: the effective configuration, and where each value comes from.

- ``config show [--config FILE] [-s ...] [--json]`` prints every setting after the layers
  (defaults < file < environment ``COURTIER_SECTION__KEY`` < ``-s``) are applied. The text
  form is a TOML file with the source of each value as a comment; the JSON form is a config
  file too (``--config effective.json``), with ``"$sources"`` naming each value's layer
  (``default``, ``file``, ``env``, ``-s``) and where in it. Either, used as ``--config``, gives
  the same effective configuration.
- ``config check`` checks the same inputs and prints nothing but errors: exit 0 or 2.
"""

from __future__ import annotations

import argparse
import json

from courtier.cli.options import add_config_arguments
from courtier.config import resolve, to_json, to_toml


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "config",
        help="show the effective configuration and sources",
        description="The effective configuration: defaults < --config FILE < environment "
        "(COURTIER_SECTION__KEY, e.g. COURTIER_LIMITS__ORIGIN__RATE=4) < -s SECTION.KEY=VALUE.",
    )
    actions = parser.add_subparsers(dest="config_action", metavar="ACTION", required=True)
    show = actions.add_parser(
        "show",
        help="print every setting with its source (as TOML, or --json)",
        description="Print every setting and where it comes from. The output (TOML, or JSON "
        "with --json) is itself a configuration file giving the same effective configuration.",
    )
    show.add_argument("--json", action="store_true", help="one JSON object on stdout")
    check = actions.add_parser(
        "check",
        help="check the configuration: exit 0 if usable, 2 (with the reason) if not",
    )
    for sub in (show, check):
        add_config_arguments(sub)
        sub.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    resolved = resolve(args.config, args.overrides)
    if args.config_action == "show":
        if args.json:
            print(json.dumps(to_json(resolved), ensure_ascii=False))
        else:
            print(to_toml(resolved), end="")
    return 0
