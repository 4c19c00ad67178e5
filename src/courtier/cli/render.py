"""``courtier render URL``: render one page as a crawl would, and say what it took.

The page's site is crawled for that one page: robots.txt first, then the page, booked and
guarded like any request; the page is rendered whatever it looks like (``[render]`` rules
say ``always`` for it), and every request the render makes goes through the same booking,
guard, robots.txt and cache as in a crawl. Printed: the decision, each request of the
render with what became of it (fetched with its status, cached, or aborted and why) and
what it was booked on, the counts, and the links the rendered page has.

Exit status: 0 the page was rendered, 1 it could not be (no browser, a failed render, the
page unreachable), 2 bad input.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import re
import tempfile
from pathlib import Path
from typing import Any

from courtier.cli.options import add_config_arguments, add_network_arguments, load_config
from courtier.config import Config
from courtier.inputs import InputError
from courtier.pipeline.events import RequestEvent
from courtier.url import UrlError, parse_url

EXIT_RENDERED, EXIT_NOT_RENDERED = 0, 1
FETCH_SECONDS = 60.0
"""The command's own limit besides the render's (``page_timeout``): robots.txt and the page."""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "render",
        help="render one page in headless Chromium as a crawl would; show what it fetched",
        description="Render URL in headless Chromium as a crawl would: every request the page "
        "makes is booked, guarded, checked against robots.txt and cached exactly as in a "
        "crawl. Prints each request and what became of it (fetched, cached, aborted and "
        "why), and the links found. Exit status: 0 rendered, 1 not rendered, 2 bad input.",
    )
    parser.add_argument("url", metavar="URL")
    add_network_arguments(parser)
    parser.add_argument("--out", type=Path, help="keep the WARC and documents here")
    parser.add_argument("--json", action="store_true", help="the page's document as JSON")
    add_config_arguments(parser)
    parser.set_defaults(handler=handle)


def render_config(config: Config, url: str) -> Config:
    """``config`` for rendering ``url`` alone: that page, always rendered, nothing else."""
    render = dataclasses.replace(
        config.render, rules=(f"^{re.escape(url)}$ => always", *config.render.rules)
    )
    return dataclasses.replace(
        config,
        render=render,
        crawl=dataclasses.replace(config.crawl, max_depth=0),
        frontier=dataclasses.replace(config.frontier, sitemaps=False, freshlane=()),
        media=dataclasses.replace(config.media, fetch=False),
        observe=dataclasses.replace(config.observe, request_log=False, live=False),
    )


class Watch:
    """A one-page crawl's sink and observer (``render``, ``fetch --render``): keeps the page's
    document and the requests of ``kinds``, and stops the crawl once the document is in, or
    the guard or robots.txt refused the page (``why``, worded by ``refused``/``disallowed``)."""

    def __init__(
        self,
        url: str,
        kinds: tuple[str, ...] = ("render", "page", "robots"),
        *,
        refused: str = "the SSRF guard refused {url}: {refusal}",
        disallowed: str = "robots.txt does not allow it",
    ) -> None:
        self.url = url
        self.kinds = kinds
        self.refused, self.disallowed = refused, disallowed
        self.document: dict[str, Any] | None = None
        self.requests: list[RequestEvent] = []
        self.engine: Any = None
        self.why = ""

    def write(self, record: dict[str, Any]) -> None:
        if record.get("url") == self.url and "status" in record:
            self.document = record
            if self.engine is not None:
                self.engine.stop()

    def flush(self) -> None:
        """Nothing is buffered."""

    def close(self) -> None:
        """Nothing is open."""

    def request(self, event: RequestEvent) -> None:
        if event.context.kind in self.kinds:
            self.requests.append(event)
        if event.refusal is not None and event.context.kind in ("page", "robots"):
            self.why = self.refused.format(url=event.url, refusal=event.refusal)
            if self.engine is not None:
                self.engine.stop()

    async def run(self) -> None:
        """The crawl, stopped as soon as there is nothing more to wait for: the page's
        document is in, or robots.txt refused the page."""
        engine = self.engine
        task = asyncio.ensure_future(engine.run())
        while not task.done():
            await asyncio.wait((task,), timeout=0.2)
            if engine.stats.refused.get("robots") and self.document is None:
                self.why = self.disallowed
                engine.stop()
        await task


def handle(args: argparse.Namespace) -> int:
    from courtier.api import build_engine
    from courtier.inputs import SqliteStore

    try:
        url = parse_url(args.url)
    except UrlError as exc:
        raise InputError(f"URL {args.url!r}: {exc}") from None
    if url.scheme not in ("http", "https"):
        raise InputError(f"URL {args.url!r}: must be an http(s) URL")
    config = render_config(load_config(args), url.fetch_url)
    watch = Watch(url.fetch_url)
    with tempfile.TemporaryDirectory(prefix="courtier-render-") as scratch:
        out = args.out or Path(scratch)
        engine = build_engine(
            config,
            seeds=[url],
            store=SqliteStore(Path(scratch) / "frontier.sqlite3"),
            out=out,
            dns=args.dns,
            allow_net=args.allow_net,
            duration=FETCH_SECONDS + config.render.page_timeout,
            sink=watch,
            observer=watch,
        )
        watch.engine = engine
        asyncio.run(watch.run())
    document = watch.document
    if args.json:
        print(json.dumps(document, ensure_ascii=False))
    else:
        _print(url.fetch_url, document, watch.requests, watch.why)
    rendered = document is not None and bool(document.get("render", {}).get("rendered"))
    return EXIT_RENDERED if rendered else EXIT_NOT_RENDERED


def _print(
    url: str, document: dict[str, Any] | None, requests: list[RequestEvent], why: str
) -> None:
    if document is None:
        print(f"{url}: not fetched: {why or 'no answer in time'}")
        return
    print(f"{url}: {document.get('status')} {document.get('content_type', '')}")
    render = document.get("render")
    if render is None:
        print("not rendered: not an HTML page the crawl would parse")
        return
    print(f"decision: {render['decision']}")
    if render.get("error"):
        print(f"render failed: {render['error']}")
    booked = {event.url: event for event in requests if event.context.kind == "render"}
    print(f"\n{'outcome':<24} {'type':<11} {'booked on':<40} url")
    for entry in render.get("log", []):
        event = booked.get(entry["url"])
        keys = ", ".join(event.context.keys) if event is not None else ""
        if event is not None:
            keys += f" (cost {event.context.cost:g}, waited {event.context.wait:.2f} s)"
        print(f"{entry['outcome']:<24} {entry['type']:<11} {keys:<40} {entry['url']}")
    aborted = render.get("aborted", {})
    print(
        f"\nrequests {render.get('requests', 0)}: fetched {render.get('fetched', 0)}, "
        f"cached {render.get('cached', 0)}, aborted {sum(aborted.values())}"
        + (f" ({', '.join(f'{k} {n}' for k, n in aborted.items())})" if aborted else "")
        + f"; {render.get('ms', 0):.0f} ms"
    )
    links = document.get("links", [])
    print(f"\ntitle: {document.get('title')!r}; {len(links)} links")
    for link in links:
        print(f"  {link}")
