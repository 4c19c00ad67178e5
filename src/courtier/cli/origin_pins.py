"""``courtier origins pin|split|unpin``: an operator's word on which sites share servers, over
what inference says, taken by every running worker within seconds.

- ``pin NAME SITE...``: the sites book on one origin, ``pin:NAME``, with one budget
  (``[limits.origin]``, or an override for ``origin:pin:NAME``), whatever inference finds.
- ``split SITE...``: each site books on an origin of its own, ``own:SITE``.
- ``unpin SITE...``: inference decides again.

Written to the store as the site's control with a logged action (``courtier.cli.site``'s
rules); ``origins explain`` and ``status --site`` show a pin. A worker moving a site to its
new origin raises that origin's clock to what the site's own requests spent on the old one.
"""

from __future__ import annotations

import argparse
import re
import time

from courtier.cli.actions import log_action
from courtier.cli.store_input import UsageError, emit, fail, open_store, parse_host
from courtier.frontier.controls import SiteControl

_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,62}")


def register(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    pin = actions.add_parser("pin", help="the sites share one origin (one budget), over inference")
    pin.add_argument("name", metavar="NAME", help="the origin's name: lower-case letters, digits")
    split = actions.add_parser("split", help="each site books on an origin of its own")
    unpin = actions.add_parser("unpin", help="inference decides the sites' origins again")
    for command in (pin, split, unpin):
        command.add_argument("sites", nargs="+", metavar="SITE", help="host, host:port or URL")
        command.add_argument(
            "--store", required=True, metavar="PATH", help="the crawl's frontier store"
        )
        command.add_argument("--json", action="store_true", help="one JSON object per site")
        command.set_defaults(handler=run_pin)


def run_pin(args: argparse.Namespace) -> int:
    verb = args.origins_action
    name = f"origins {verb}"
    now = time.time()
    try:
        if verb == "pin" and not _NAME.fullmatch(args.name):
            raise UsageError(f"NAME {args.name!r}: lower-case letters, digits, '.', '_', '-'")
        sites = list(dict.fromkeys(parse_host(h).site for h in args.sites))
        store = open_store(args.store)
    except UsageError as exc:
        return fail(name, str(exc))
    try:
        controls = store.site_controls()
        for site in sites:
            origin = {"pin": f"pin:{getattr(args, 'name', '')}", "split": f"own:{site}"}.get(verb)
            control = (controls.get(site) or SiteControl(site)).pinned_at(now, origin)
            log_action(store, name, site, {"origin": origin or "inferred"}, now, control=control)
            if args.json:
                emit({"site": site, "origin": origin})
            else:
                print(f"{site}\t{origin or 'inferred'}")
    finally:
        store.close()
    return 0
