"""``courtier net check``: would the crawler be allowed to connect to these targets?

Each target (a URL, a host or an address in any spelling) is canonicalised the way the crawler
does it, then judged by the same guard the fetcher uses: local names and IP literals without
DNS, names through ``--dns`` (or the system's nameservers) and every address they resolve to.
Nothing is ever connected to; the only traffic is DNS queries.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from courtier.cli.options import seconds
from courtier.inputs import parse_nameserver_arg, parse_networks
from courtier.net.guard import Guard
from courtier.net.resolve import DnsResolver
from courtier.url import UrlError, canonical_host, parse_url

__all__ = ["TargetCheck", "check_targets", "host_of_target", "register"]

EXIT_ALL_ALLOWED = 0
EXIT_SOME_REFUSED = 1
EXIT_USAGE = 2
_CONCURRENCY = 32


@dataclass(frozen=True, slots=True)
class TargetCheck:
    """The verdict on one command-line target."""

    input: str
    host: str | None
    allowed: bool
    reason: str
    detail: str
    addresses: tuple[str, ...]

    def to_json(self) -> str:
        return json.dumps(
            {
                "input": self.input,
                "verdict": "allow" if self.allowed else "refuse",
                "reason": self.reason,
                "addresses": list(self.addresses),
                "host": self.host,
                "detail": self.detail,
            },
            ensure_ascii=False,
        )

    def to_text(self) -> str:
        verdict = "allow" if self.allowed else "refuse"
        addresses = ",".join(self.addresses) or "-"
        return f"{verdict:<6} {self.reason:<24} {self.input}  [{addresses}]  {self.detail}"


def host_of_target(target: str) -> str:
    """The canonical host a target names: a URL's host, or the target read as a host.

    ``host:port`` and ``host/path`` are read as scheme-less URLs. Raises ``UrlError``.
    """
    text = target.strip()
    if "://" in text:
        return parse_url(text).host
    if text.startswith("//"):
        return parse_url("http:" + text).host
    try:
        return canonical_host(text)
    except UrlError as host_error:
        try:
            return parse_url("http://" + text).host
        except UrlError:
            raise host_error from None


async def check_target(target: str, guard: Guard) -> TargetCheck:
    try:
        host = host_of_target(target)
    except UrlError as error:
        reason = "invalid-url" if "://" in target else "invalid-host"
        return TargetCheck(target, None, False, reason, str(error), ())
    resolution = await guard.resolve(host)
    return TargetCheck(
        target,
        host,
        resolution.allowed,
        resolution.reason,
        resolution.detail,
        resolution.addresses,
    )


async def check_targets(
    targets: Sequence[str], guard: Guard, *, concurrency: int = _CONCURRENCY
) -> list[TargetCheck]:
    """Judge every target, a bounded number at a time, results in input order."""
    gate = asyncio.Semaphore(concurrency)

    async def one(target: str) -> TargetCheck:
        async with gate:
            return await check_target(target, guard)

    return list(await asyncio.gather(*(one(target) for target in targets)))


def _targets_from_lines(lines: Iterable[str]) -> list[str]:
    stripped = (line.strip() for line in lines)
    return [line for line in stripped if line and not line.startswith("#")]


def _run_check(args: argparse.Namespace) -> int:
    policy = parse_networks(args.allow_net)
    resolver = DnsResolver(parse_nameserver_arg(args.dns), timeout=args.timeout)
    targets = list(args.targets) or _targets_from_lines(sys.stdin)
    checks = asyncio.run(check_targets(targets, Guard(policy, resolver)))
    for check in checks:
        print(check.to_json() if args.json else check.to_text())
    return EXIT_ALL_ALLOWED if all(check.allowed for check in checks) else EXIT_SOME_REFUSED


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    net = subparsers.add_parser("net", help="network safety tools (SSRF guard)")
    net_commands = net.add_subparsers(dest="net_command", metavar="NET_COMMAND")
    net.set_defaults(handler=lambda _args: _missing_subcommand(net))
    check = net_commands.add_parser(
        "check",
        help="judge URLs, hosts or addresses against the SSRF guard (never connects)",
        description="Print the verdict (allow/refuse), the reason and the canonical addresses "
        "judged for each target. Exit status: 0 all allowed, 1 some refused (a target that is "
        "not a URL, host or address is refused), 2 bad input.",
    )
    check.add_argument(
        "targets", nargs="*", metavar="TARGET", help="URL, host or IP address (default: stdin)"
    )
    check.add_argument(
        "--dns", metavar="HOST:PORT", help="nameserver to query (default: the system's)"
    )
    check.add_argument(
        "--allow-net",
        metavar="CIDR",
        action="append",
        default=[],
        help="allow this network although it is special-purpose (repeatable)",
    )
    check.add_argument("--timeout", type=seconds, default=5.0, help="DNS timeout in seconds")
    check.add_argument("--json", action="store_true", help="one JSON object per line")
    check.set_defaults(handler=_run_check)


def _missing_subcommand(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return EXIT_USAGE
