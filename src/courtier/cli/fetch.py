"""``courtier fetch URL``: fetch one URL as a crawl would, and show every step of it.

The URL is canonicalised, its host judged by the SSRF guard (an address literal from the
address alone, before anything is sent), its site's robots.txt fetched and obeyed (there is
no override: ``courtier robots URL`` explains the rules), each request booked on the keys a
crawl books (``--store``: on the crawl's own clocks where a crawl shares them; see
``pipeline.one_url.booking``), fetched pinned to the checked addresses, redirects followed as
a crawl follows them, and the answer read by the crawl's reader: the document a crawl would
write (title, text, Markdown, language, canonical, robots meta, images, the ``--hook``'s
fields, the links it added and dropped and the priority it gave them: ``hook_links``) and
what the crawl's discovery makes of the links (frontier, horizon). ``--render``
renders the page in headless Chromium through the crawl's render path
(``courtier render``'s).

Exit status: 0 an answer came (whatever its status), 1 nothing came (robots.txt disallows the
URL, the operator holds the site, no answer) or the reader or the hook failed, 2 bad input,
the SSRF guard's refusal of the URL's host included (its verdict is the message).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys
from pathlib import Path
from typing import Any

from courtier.cli.options import add_config_arguments, add_network_arguments, load_config, whole
from courtier.config import Config
from courtier.inputs import InputError, PostgresStore, parse_nameserver_arg, parse_networks
from courtier.url import Url, UrlError

EXIT_ANSWERED, EXIT_NOT_FETCHED, EXIT_USAGE = 0, 1, 2
LINKS_SHOWN = 20


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "fetch",
        help="fetch one URL as a crawl would (robots.txt, guard, booking) and show the page",
        description="Fetch URL through the path a crawl takes: canonicalisation, the SSRF "
        "guard with address pinning, robots.txt (obeyed, no override), booking on the "
        "site's and origin's keys, redirects, then the crawl's decoding, parse and parse "
        "hook. Prints each request, the answer's headers (redacted), the document a crawl "
        "would write and the links split into frontier and horizon. Exit status: 0 an "
        "answer came, 1 none came (disallowed, held, no answer) or the hook failed, 2 bad "
        "input or a host the SSRF guard refuses.",
    )
    parser.add_argument("url", metavar="URL")
    add_fetch_arguments(parser)
    parser.add_argument(
        "--render",
        action="store_true",
        help="render the page in headless Chromium through the crawl's render path",
    )
    parser.set_defaults(handler=handle)


def add_fetch_arguments(parser: argparse.ArgumentParser) -> None:
    """What ``fetch`` and ``parse`` share."""
    parser.add_argument(
        "--hook",
        metavar="MODULE:FUNC",
        help="the parse hook to run on the page ([parse] hook): its fields, the links it "
        "adds and drops and the priority it gives are shown",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    parser.add_argument(
        "--store",
        metavar="PATH|URL",
        help="a crawl's store: book on its clocks, obey its operator's controls, use its "
        "robots.txt answers and origins, count its seed as the seed",
    )
    parser.add_argument(
        "--links",
        type=whole(0),
        default=LINKS_SHOWN,
        metavar="N",
        help=f"links of each kind shown (default {LINKS_SHOWN}; --json has them all)",
    )
    add_network_arguments(parser)
    add_config_arguments(parser)


def with_hook(config: Config, spec: str | None) -> Config:
    """``config`` with ``--hook`` as its parse hook, imported now: a bad one is bad input."""
    from courtier.content.hook import HookError, check_spec, load_hook

    if spec is not None:
        why = check_spec(spec)
        if why or not spec:
            raise InputError(f"--hook {spec!r}: {why or 'empty'}")
        config = dataclasses.replace(config, parse=dataclasses.replace(config.parse, hook=spec))
    if config.parse.hook:
        try:
            load_hook(config.parse.hook)
        except HookError as exc:
            raise InputError(str(exc).replace("[parse] hook", "--hook", 1)) from None
    return config


def target(text: str, name: str = "URL") -> Url:
    from courtier.pipeline.one_url.fetching import parse_target

    try:
        return parse_target(text)
    except UrlError as exc:
        raise InputError(f"{name} {text!r}: {exc}; must be an http(s) URL") from None


def guard_of(args: argparse.Namespace) -> Any:
    from courtier.net.guard import Guard
    from courtier.net.resolve import DnsResolver

    policy = parse_networks(args.allow_net)
    return Guard(policy, DnsResolver(parse_nameserver_arg(args.dns)))


def refused(url: Url, reason: str, detail: str) -> InputError:
    return InputError(f"{url.fetch_url}: refused by the SSRF guard: {reason} ({detail})")


def handle(args: argparse.Namespace) -> int:
    config = with_hook(load_config(args), args.hook)
    url = target(args.url)
    guard = guard_of(args)
    verdict = guard.judge_name(url.host)  # an address literal: judged with no query at all
    if verdict is not None and not verdict.allowed:
        raise refused(url, verdict.reason, verdict.detail)
    if args.render:
        from courtier.cli.fetch_render import render

        if args.store is not None:
            raise InputError(
                "--store: not with --render (a render books on a crawl of its own, like "
                "'courtier render'; it cannot book on a store's clocks)"
            )
        out, code = render(config, url, args)
    else:
        out, code = fetch_and_read(config, url, guard, args)
    show(out, args)
    return code


def show(out: dict[str, Any], args: argparse.Namespace) -> None:
    from courtier.cli.page_report import print_json, print_report

    if args.json:
        print_json(out)
    else:
        print_report(out, links=args.links)


def fetch_and_read(
    config: Config, url: Url, guard: Any, args: argparse.Namespace
) -> tuple[dict[str, Any], int]:
    """Fetch ``url`` (``pipeline.one_url``) and read its answer: the report and exit status."""
    from courtier.cli.page_report import report
    from courtier.pipeline.answers.fetching import TRANSIENT_REFUSALS
    from courtier.pipeline.one_url.reading import read_answer

    trace = asyncio.run(_fetch(config, url, guard, args.store, args.command_prog))
    if trace.refusal is not None:
        resolution = trace.refusal
        if resolution.reason not in TRANSIENT_REFUSALS:
            raise refused(url, resolution.reason, resolution.detail)
        trace.stopped = f"{url.host}: not resolved ({resolution.reason}: {resolution.detail})"
    result = trace.result
    if result is None:
        return report(config, asked=args.url, trace=trace), EXIT_NOT_FETCHED
    from courtier.url import parse_url

    final = parse_url(trace.url)
    # Run here, on the main thread, outside the event loop: the hook's budget is a timer
    reading = read_answer(config, result, final, trace.seed, guard.policy)
    code = EXIT_NOT_FETCHED if result.status is None or reading.failed else EXIT_ANSWERED
    return report(config, asked=args.url, trace=trace, reading=reading), code


async def _fetch(config: Config, url: Url, guard: Any, store_text: str | None, prog: str) -> Any:
    from courtier.net.fetch import Fetcher
    from courtier.pipeline.one_url.fetching import OneUrl

    clocks = await _clocks(config, store_text, prog)
    try:
        policy = guard.policy
        async with Fetcher(config.fetch, lambda address: policy.check(address).allowed) as fetcher:
            return await OneUrl(config, guard, fetcher, clocks).run(url)
    finally:
        await clocks.close()


async def _clocks(config: Config, store_text: str | None, prog: str) -> Any:
    from courtier.pipeline.one_url.booking import Clocks

    def waiting(seconds: float, keys: tuple[str, ...]) -> None:
        print(
            f"{prog}: waiting {seconds:.1f} s for a slot on {', '.join(keys)}",
            file=sys.stderr,
        )

    if store_text is None:
        return Clocks.of_store(config, None, on_wait=waiting)
    from courtier.cli.store_input import open_store
    from courtier.inputs import parse_store

    spec = parse_store(store_text)
    store = open_store(store_text)
    try:
        if isinstance(spec, PostgresStore):
            from courtier.politeness.limiter.postgres import PostgresLimiter

            shared = await PostgresLimiter.connect(spec.conninfo)
            return Clocks.of_store(config, store, shared=shared, on_wait=waiting)
        return Clocks.of_store(config, store, sqlite_path=Path(spec.path), on_wait=waiting)
    finally:
        store.close()
