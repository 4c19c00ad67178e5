"""``courtier fetch --render``: the page rendered through the crawl's render path, reported as
``courtier fetch`` reports a fetch.

The render is ``courtier render``'s: a crawl of the URL's site for that one page, in a
scratch store with clocks of its own (robots.txt first, every request booked, guarded and
cached as in a crawl, the page rendered whatever it looks like), its parse hook run by the
crawl's parse workers (a hook's error is its ``hook_error``, without a traceback). A URL
that redirects is reported with its redirect; render the target to see it.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Any

from courtier.config import Config
from courtier.content.parse import Link, ParsedPage
from courtier.pipeline.events import RequestEvent
from courtier.url import Url, UrlError, parse_url

NO_BROWSER = (
    "--render: no Chromium executable found ([render] browser, or chromium, "
    "chromium-browser or google-chrome on PATH)"
)


def render(config: Config, url: Url, args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    from courtier.api import build_engine
    from courtier.cli.page_report import report
    from courtier.cli.render import FETCH_SECONDS, Watch, render_config
    from courtier.inputs import SqliteStore
    from courtier.pipeline.one_url.reading import judge_links
    from courtier.render.browser import find_chromium

    if find_chromium(config.render.browser or None) is None:
        print(f"courtier fetch: {NO_BROWSER}", file=sys.stderr)
        return {"url": args.url, "stopped": NO_BROWSER}, 1
    crawl_config = config  # the links are judged as a crawl (not this one page) would
    config = render_config(config, url.fetch_url)
    watch = Watch(
        url.fetch_url,
        ("render", "page", "robots", "robots-hop"),
        refused="{url}: refused by the SSRF guard: {refusal}",
        disallowed=f"robots.txt does not allow {url.fetch_url}",
    )
    with tempfile.TemporaryDirectory(prefix="courtier-fetch-") as scratch:
        engine = build_engine(
            config,
            seeds=[url],
            store=SqliteStore(Path(scratch) / "frontier.sqlite3"),
            out=Path(scratch),
            dns=args.dns,
            allow_net=args.allow_net,
            duration=FETCH_SECONDS + config.render.page_timeout,
            sink=watch,
            observer=watch,
        )
        watch.engine = engine
        asyncio.run(watch.run())
    out = report(config, asked=args.url)
    out["final_url"] = url.fetch_url
    out["requests"] = [_sent(event) for event in watch.requests]
    pages = [e for e in watch.requests if e.context.kind == "page" and e.result is not None]
    document = watch.document
    if document is None:
        out["stopped"] = watch.why or "no answer in time"
        return out, 1
    out["status"] = document.get("status")
    if pages and pages[-1].result is not None:
        from courtier.cli.page_report import redacted_headers

        out["headers"] = redacted_headers(config, pages[-1].result)
    out["document"] = document
    location = document.get("location")
    if location:
        out["redirects"] = [
            {"status": document.get("status"), "from": url.fetch_url, "to": location}
        ]
        out["stopped"] = "a redirect: fetch --render its target to render it"
    if "title" in document:
        page = _page_of(document)
        links = judge_links(crawl_config, page, url, {url.site}, _policy(args))
        out["links"] = links.to_json()
    rendered = bool(document.get("render", {}).get("rendered"))
    return out, 0 if rendered and "hook_error" not in document else 1


def _sent(event: RequestEvent) -> dict[str, Any]:
    context, result = event.context, event.result
    record: dict[str, Any] = {"kind": context.kind, "url": event.url}
    if event.refusal is not None or result is None:
        record["refusal"] = event.refusal
        return record
    record.update(keys=list(context.keys), cost=context.cost, waited_s=round(context.wait, 3))
    record.update(
        status=result.status, elapsed_ms=round(result.elapsed * 1000, 1), address=result.address
    )
    if result.error:
        record["error"] = result.error
    return record


def _page_of(document: dict[str, Any]) -> ParsedPage:
    """The parsed page a rendered document describes (for the crawl's discovery)."""
    page = ParsedPage(document.get("title"))
    for name, into in (("links", page.links), ("images", page.images)):
        for text in document.get(name, []):
            try:
                link = parse_url(text)
            except UrlError:
                continue
            into.append(Link(link.canonical, link.fetch_url, link.site))
    page.robots = frozenset(document.get("robots", []))
    nofollow = set(document.get("nofollow", []))
    page.nofollow = {link.canonical for link in page.links if link.fetch_url in nofollow}
    return page


def _policy(args: argparse.Namespace) -> Any:
    from courtier.inputs import parse_networks

    return parse_networks(args.allow_net)
