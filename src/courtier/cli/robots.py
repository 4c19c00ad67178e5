"""``courtier robots``: what robots.txt allows, from a file or from the live site.

``courtier robots check --robots-file FILE [--status CODE] [--ua TOKEN] URL...`` judges URLs
against a robots.txt on disk, applying RFC 9309's status rules when ``--status`` says what the
server answered. ``courtier robots URL`` fetches the live robots.txt of that URL's site through
the SSRF guard and explains it.

Exit status, as for every check command: 0 every URL allowed, 1 some URL disallowed (or not a
URL, or the robots.txt unreachable, which RFC 9309 reads as disallow all), 2 bad input.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from courtier.cli.options import add_config_arguments, add_network_arguments, load_config, whole
from courtier.config import RULES, FetchSection, RobotsSection
from courtier.inputs import InputError, parse_nameserver_arg, parse_networks
from courtier.net.fetch import Fetcher
from courtier.net.guard import Guard
from courtier.net.resolve import DnsResolver
from courtier.politeness.robots import RobotsRules, rules_from_response
from courtier.url import Url, UrlError, parse_url

EXIT_ALLOWED, EXIT_DISALLOWED, EXIT_USAGE = 0, 1, 2


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "robots",
        help="check URLs against robots.txt (a file, or the live site)",
        description="'courtier robots check --robots-file FILE URL...' judges URLs against a "
        "robots.txt file; 'courtier robots URL' (short for 'courtier robots explain URL') "
        "fetches the live robots.txt of URL's site through the SSRF guard and explains it. "
        "Exit status: 0 all allowed, 1 some disallowed, 2 bad input.",
    )
    actions = parser.add_subparsers(dest="robots_action", metavar="ACTION")
    check = actions.add_parser(
        "check", help="judge URLs against a robots.txt file (URLs from stdin when none given)"
    )
    check.add_argument("urls", nargs="*", metavar="URL")
    check.add_argument("--robots-file", type=Path, required=True, help="robots.txt to read")
    check.add_argument(
        "--status",
        type=whole(100, 599),
        default=200,
        help="HTTP status the robots.txt was served with (RFC 9309 rules; default 200)",
    )
    explain = actions.add_parser(
        "explain", help="fetch the live robots.txt of URL's site and explain it"
    )
    explain.add_argument("url", metavar="URL")
    add_network_arguments(explain)
    for sub in (check, explain):
        sub.add_argument("--ua", help="user-agent product token (default: the configured one)")
        sub.add_argument("--json", action="store_true", help="one JSON object per line")
        add_config_arguments(sub)
        sub.set_defaults(handler=handle)


def rewrite(words: list[str]) -> list[str]:
    """``courtier robots URL`` means ``courtier robots explain URL`` (``words``: after
    ``robots``)."""
    if not words or words[0].startswith("-") or words[0] in ("check", "explain"):
        return words
    return ["explain", *words]


def _urls(arguments: list[str]) -> Iterator[str]:
    if arguments:
        yield from arguments
        return
    for line in sys.stdin:
        if line.strip():
            yield line.strip()


def _judge(rules: RobotsRules, urls: Iterable[str], token: str, as_json: bool) -> int:
    """Print each URL's verdict; 0 if every one is allowed, else 1."""
    delay = rules.crawl_delay(token)
    code = EXIT_ALLOWED
    for raw in urls:
        try:
            url = parse_url(raw).fetch_url
        except UrlError as exc:
            print(
                json.dumps({"url": raw, "error": str(exc)}) if as_json else f"{raw}\terror: {exc}"
            )
            code = EXIT_DISALLOWED
            continue
        allowed = rules.allows(url, token)
        if not allowed:
            code = EXIT_DISALLOWED
        if as_json:
            print(json.dumps({"url": raw, "allowed": allowed, "crawl_delay": delay}))
        else:
            verdict = "allowed" if allowed else "disallowed"
            print(f"{raw}\t{verdict}\tcrawl-delay {delay if delay is not None else 'none'}")
    return code


def _rules(status: int | None, body: bytes, settings: RobotsSection) -> RobotsRules:
    return rules_from_response(
        status,
        body,
        time.monotonic(),
        max_age=settings.max_age,
        retry_unreachable=settings.retry_unreachable,
        max_bytes=settings.max_bytes,
    )


def _token(text: str | None) -> str | None:
    rule = RULES[FetchSection]["user_agent_token"]
    if text is None or (rule.check is not None and rule.check(text) is None):
        return text
    raise InputError(f"--ua {text}: must be {rule.accepts}")


def handle(args: argparse.Namespace) -> int:
    config = load_config(args)
    token = _token(args.ua) or config.fetch.user_agent_token
    if args.robots_action == "check":
        try:
            body = args.robots_file.read_bytes()
        except OSError as exc:
            raise InputError(f"--robots-file {args.robots_file}: {exc.strerror}") from None
        rules = _rules(args.status, body, config.robots)
        return _judge(rules, _urls(args.urls), token, args.json)
    try:
        url = parse_url(args.url)
    except UrlError as exc:
        raise InputError(f"URL {args.url}: {exc}; must be an http(s) URL") from None
    policy = parse_networks(args.allow_net)
    dns = parse_nameserver_arg(args.dns)
    guard = Guard(policy, DnsResolver(dns))
    return asyncio.run(_live(url, guard, config.fetch, config.robots, token, args.json))


async def _live(
    url: Url, guard: Guard, fetch: FetchSection, settings: RobotsSection, token: str, as_json: bool
) -> int:
    policy = guard.policy
    location = f"{url.scheme}://{url.site}/robots.txt"
    status: int | None = None
    body = b""
    async with Fetcher(fetch, lambda address: policy.check(address).allowed) as fetcher:
        for _hop in range(settings.max_redirects + 1):
            hop = parse_url(location)
            resolution = await guard.resolve(hop.host)
            if not resolution.allowed:
                print(
                    f"{location}: refused by the SSRF guard: {resolution.reason} "
                    f"({resolution.detail})"
                )
                status = None
                break
            result = await fetcher.fetch(hop.fetch_url, hop.host, resolution.addresses)
            status, body = result.status, result.body
            print(f"GET {hop.fetch_url} -> {status if status is not None else result.error}")
            if status in (301, 302, 303, 307, 308) and result.location:
                try:
                    location = parse_url(result.location, hop.fetch_url).fetch_url
                except UrlError as exc:
                    print(f"unusable redirect: {exc}")
                    status = None
                    break
                continue
            break
    rules = _rules(status, body, settings)
    print(f"verdict: {rules.status.value} (RFC 9309 rules for status {status})")
    if rules.parser is not None:
        print(body[: settings.max_bytes].decode("utf-8", errors="replace").rstrip())
    code = _judge(rules, [url.fetch_url], token, as_json)
    return EXIT_DISALLOWED if status is None else code
