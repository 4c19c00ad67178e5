"""``courtier site pause|resume|limit|render|drop SITE... --store S``: an operator's answer
to "please slow down" and "stop crawling us", taken by every running worker within seconds.

Rules (what a worker does with them: ``courtier.pipeline.lanes.controls``):
- ``pause [--until T]``: no request starts on the site (work in flight finishes) until
  ``resume``, or until ``T``. ``resume`` lifts a pause.
- ``limit --rate R [--until T]``: the site's requests start at most ``R`` per second, in
  place of the configured rate (backoff and Crawl-delay still slow it further); ``limit
  --clear`` goes back to the configured rate.
- ``render --mode M [--rule REGEX]``: the site's pages are rendered ``never``, ``auto`` or
  ``always``, over the configuration's ``[render]``; with ``--rule``, only its URLs the
  regex is found in (those rules go before the site's mode). ``render --clear`` goes back
  to the configuration (``--clear --rule REGEX``: that rule only).
- ``drop``: the site leaves the seed (state ``horizon``): not crawled again unless it is
  seeded again (the seeds file at a start, ``seed add``, a promotion). ``drop --opt-out``:
  its owner asked not to be crawled: state ``opted-out``, which nothing changes back; no
  request of any kind goes to its host again, even when a seed page links it.
- ``T`` is a duration from now (``90s``, ``30m``, ``2h``, ``7d``) or a UTC time
  (``2026-12-24T18:00:00Z``). Every action is logged in the store with the command line
  (without the store's address) and who ran it; ``courtier status`` shows the latest.
- Like the other commands on a store (``courtier.cli.seed``): the store must exist; a bad
  host or value is exit 2 and nothing is written.
"""

from __future__ import annotations

import argparse
import re
import time
from datetime import UTC, datetime

from courtier.cli.actions import log_action
from courtier.cli.store_input import UsageError, emit, fail, open_store, parse_host
from courtier.frontier.base import SiteState
from courtier.frontier.controls import SiteControl, utc_text

_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhd])")
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_until(text: str, now: float) -> float:
    """``--until``: a duration from ``now`` or a UTC time; the wall-clock time it names."""
    match = _DURATION.fullmatch(text.strip())
    if match:
        return now + float(match.group(1)) * _UNITS[match.group(2)]
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(
            f"--until: {text!r} is neither a duration (90s, 30m, 2h, 7d) nor a time "
            "(2026-12-24T18:00:00Z)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    at = moment.timestamp()
    if at <= now:
        raise UsageError(f"--until: {text} has passed")
    return at


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "site",
        help="pause, resume, slow down, render or drop sites of a running crawl",
        description="Control sites of a crawl through its store: every running worker "
        "takes the change within seconds ([control] poll).",
    )
    commands = parser.add_subparsers(dest="site_command", metavar="SUBCOMMAND", required=True)
    pause = commands.add_parser("pause", help="no request starts on the site until resumed")
    pause.add_argument("--until", metavar="T", help="end the pause by itself: 30m, 2h, a time")
    resume = commands.add_parser("resume", help="lift a pause")
    limit = commands.add_parser("limit", help="a rate of the site's own")
    rate = limit.add_mutually_exclusive_group(required=True)
    rate.add_argument("--rate", type=positive, metavar="R", help="requests per second, above 0")
    rate.add_argument("--clear", action="store_true", help="back to the configured rate")
    limit.add_argument("--until", metavar="T", help="end the rate by itself: 30m, 2h, a time")
    render = commands.add_parser("render", help="when the site's pages are rendered")
    mode = render.add_mutually_exclusive_group(required=True)
    mode.add_argument("--mode", choices=("never", "auto", "always"), help="over the config's")
    mode.add_argument("--clear", action="store_true", help="back to the configuration")
    render.add_argument("--rule", type=_regex, metavar="REGEX", help="only URLs it is found in")
    drop = commands.add_parser("drop", help="take the site out of the seed")
    drop.add_argument(
        "--opt-out",
        action="store_true",
        help="its owner asked not to be crawled: never fetched again, whoever links it",
    )
    for command in (pause, resume, limit, render, drop):
        command.add_argument("sites", nargs="+", metavar="SITE", help="host, host:port or URL")
        command.add_argument("--reason", default="", help="why (shown by status)")
        command.add_argument(
            "--store", required=True, metavar="PATH", help="the crawl's frontier store"
        )
        command.add_argument("--json", action="store_true", help="one JSON object per site")
        command.set_defaults(handler=run_site)


def positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number above 0, got {text!r}") from None
    if not (0 < value < float("inf")):
        raise argparse.ArgumentTypeError(f"must be a number above 0, got {text!r}")
    return value


def _regex(text: str) -> str:
    try:
        re.compile(text)
    except re.error as exc:
        raise argparse.ArgumentTypeError(f"not a regular expression ({exc})") from None
    return text


def run_site(args: argparse.Namespace) -> int:
    verb = args.site_command
    name = f"site {verb}"
    now = time.time()
    try:
        sites = list(dict.fromkeys(parse_host(h).site for h in args.sites))
        until = parse_until(args.until, now) if getattr(args, "until", None) else None
        store = open_store(args.store)
    except UsageError as exc:
        return fail(name, str(exc))
    refused = 0
    try:
        controls = store.site_controls()
        states = store.site_states()
        for site in sites:
            old = controls.get(site) or SiteControl(site)
            if old.opted_out:
                refused += 1
                _say(args, site, "opted-out", "its owner opted out; nothing changed")
                continue
            new, new_states, detail = _change(args, verb, old, until, now)
            if (
                verb == "drop"
                and not args.opt_out
                and states.get(site)
                not in (
                    SiteState.SEED,
                    SiteState.REQUESTED,
                    SiteState.SUSPENDED,
                )
            ):
                _say(args, site, states.get(site, "unknown"), "not in the seed; nothing changed")
                continue
            if args.reason:
                detail["reason"] = args.reason
            log_action(store, name, site, detail, now, control=new, states=new_states)
            state = new_states.get(site, states.get(site, "unknown"))
            _say(args, site, state, new.describe(now) if new is not None else "dropped")
    finally:
        store.close()
    return 1 if refused else 0


def _change(
    args: argparse.Namespace, verb: str, old: SiteControl, until: float | None, now: float
) -> tuple[SiteControl | None, dict[str, str], dict[str, object]]:
    """(the site's new controls, new states, the action's detail)."""
    detail: dict[str, object] = {}
    if until is not None:
        detail["until"] = utc_text(until)
    if verb == "pause":
        return old.paused_at(now, until, args.reason), {}, detail
    if verb == "resume":
        return old.resumed_at(now), {}, detail
    if verb == "limit":
        rate = None if args.clear else args.rate
        detail["rate"] = rate if rate is not None else "configured"
        return old.limited_at(now, rate, until), {}, detail
    if verb == "render":
        mode = None if args.clear else args.mode
        detail["render"] = mode or "configured"
        if args.rule is not None:
            detail["rule"] = args.rule
        return old.rendering(now, mode, args.rule), {}, detail
    if args.opt_out:
        detail["opt_out"] = True
        control = SiteControl(old.site, opted_out=True, reason=args.reason, updated_at=now)
        return control, {old.site: SiteState.OPTED_OUT}, detail
    return None, {old.site: SiteState.HORIZON}, detail


def _say(args: argparse.Namespace, site: str, state: str, what: str) -> None:
    if args.json:
        emit({"site": site, "state": state, "control": what})
    else:
        print(f"{site}\t{state}\t{what}")
