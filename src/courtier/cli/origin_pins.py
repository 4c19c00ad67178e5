"""``courtier origins pin|split|unpin|limit``: an operator's word on which sites share servers,
over what inference says, and on what their servers may take, taken by every running worker
within seconds.

- ``pin NAME SITE...``: the sites book on one origin, ``pin:NAME``, with one budget
  (``[limits.origin]``, or an override for ``origin:pin:NAME``), whatever inference finds.
- ``split SITE...``: each site books on an origin of its own, ``own:SITE``.
- ``unpin SITE...``: inference decides again.
- ``limit NAME|SITE --rate R [--burst B] [--until T]``: the origin's shared key
  (``origin:<id>``, every site on it, on every worker) takes at most ``R`` cost units per
  second (``[costs]``: a detail page 2, an index page 4), with a burst tolerance of ``B``
  seconds (default: the configured one), over ``[limits.origin]`` and any override in
  configuration, until ``T`` or for good; ``limit --clear`` gives it back to the
  configuration. The origin is named as ``courtier.cli.origin_names`` says (an origin id, a
  pin's name, or a site on it); an unknown one is exit 2. Backoff and latency feedback still
  slow it further.

Written to the store as the site's control with a logged action (``courtier.cli.site``'s
rules); ``origins explain`` and ``status --site`` show a pin. A worker moving a site to its
new origin raises that origin's clock to what the site's own requests spent on the old one.
"""

from __future__ import annotations

import argparse
import re
import time

from courtier.cli.actions import log_action
from courtier.cli.origin_names import members, origins_of_sites, resolve_origin
from courtier.cli.site import parse_until, positive
from courtier.cli.store_input import UsageError, emit, fail, open_store, parse_host
from courtier.frontier.controls import OriginControl, SiteControl, utc_text

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
    limit = actions.add_parser("limit", help="a budget of the origin's own, for all its sites")
    limit.add_argument(
        "origin", metavar="NAME|SITE", help="an origin id, a pin's name, or a site on the origin"
    )
    rate = limit.add_mutually_exclusive_group(required=True)
    rate.add_argument("--rate", type=positive, metavar="R", help="cost units per second, above 0")
    rate.add_argument("--clear", action="store_true", help="back to the configured budget")
    limit.add_argument("--burst", type=_seconds, metavar="B", help="burst tolerance, seconds")
    limit.add_argument("--until", metavar="T", help="end the budget by itself: 30m, 2h, a time")
    limit.add_argument("--reason", default="", help="why (shown by status)")
    limit.add_argument("--store", required=True, metavar="PATH", help="the crawl's frontier store")
    limit.add_argument("--json", action="store_true", help="one JSON object")
    limit.set_defaults(handler=run_limit)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be seconds, 0 or more, got {text!r}") from None
    if not (0 <= value < float("inf")):
        raise argparse.ArgumentTypeError(f"must be seconds, 0 or more, got {text!r}")
    return value


def run_limit(args: argparse.Namespace) -> int:
    name = "origins limit"
    now = time.time()
    try:
        if args.clear and (args.burst is not None or args.until):
            raise UsageError("--clear takes no --burst or --until")
        until = parse_until(args.until, now) if args.until else None
        store = open_store(args.store)
    except UsageError as exc:
        return fail(name, str(exc))
    try:
        try:
            origin = resolve_origin(store, args.origin)
        except UsageError as exc:
            return fail(name, str(exc))
        old = store.origin_controls().get(origin) or OriginControl(origin)
        rate = None if args.clear else args.rate
        new = old.limited_at(now, rate, args.burst, until, args.reason)
        detail: dict[str, object] = {"rate": "configured" if rate is None else rate}
        if args.burst is not None:
            detail["burst"] = args.burst
        if until is not None:
            detail["until"] = utc_text(until)
        if args.reason:
            detail["reason"] = args.reason
        log_action(store, name, origin, detail, now, control=new)
        sites = members(origins_of_sites(store), origin)
    finally:
        store.close()
    what = new.describe(now) if rate is not None else "the configured budget"
    if args.json:
        emit({"origin": origin, "control": what, "sites": sites})
    else:
        print(f"{origin}\t{what}\t{len(sites)} sites")
    return 0


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
