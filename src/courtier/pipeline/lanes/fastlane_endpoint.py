"""The fastlane over HTTP, for upstream systems: ``POST /recrawl`` on a running crawl.

Off unless ``[control] http_port`` is set; it then needs ``[control] http_token`` (16
characters or more) and listens on ``http_host`` (loopback by default). A request:

    POST /recrawl
    Authorization: Bearer TOKEN
    Content-Type: application/json

    {"urls": ["https://shop.example/sale", ...]}          (at most ``MAX_URLS``)

is answered ``200 {"urls": N, "scheduled": K}`` once the URLs are due now in the fastlane and
the action is logged in the store (``frontier.fastlane.recrawl``): every worker of the crawl
reads it within ``[control] poll`` seconds and the worker holding each site leases its URLs
at once, booked like any request. ``401`` without the token, ``400`` for a body that is not
that or a URL that does not parse, ``422`` when a URL's site is not in the seed (nothing is
scheduled then), ``503`` while the store cannot be reached. The token is compared in constant
time; a request never logs it.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Collection
from typing import Any, Final

from aiohttp import web

from courtier.frontier.fastlane import recrawl
from courtier.pipeline.feed.frontier_io import FrontierIO
from courtier.url import Url, UrlError, parse_url

log = logging.getLogger(__name__)

MAX_URLS: Final = 1000
MAX_BODY: Final = 1 << 20


class FastlaneEndpoint:
    def __init__(self, frontier: FrontierIO, scope: Collection[str], token: str) -> None:
        self.frontier = frontier
        self.scope = scope
        self._token = token.encode()
        self.requests = 0
        self._runner: web.AppRunner | None = None

    async def start(self, host: str, port: int) -> None:
        app = web.Application(client_max_size=MAX_BODY)
        app.router.add_post("/recrawl", self._recrawl)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, host, port).start()
        log.info("fastlane endpoint on http://%s:%d/recrawl", host, port)

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _recrawl(self, request: web.Request) -> web.Response:
        given = request.headers.get("Authorization", "").removeprefix("Bearer ").encode()
        if not hmac.compare_digest(given, self._token):
            return _answer(401, error="a bearer token is required (Authorization: Bearer ...)")
        try:
            body = json.loads(await request.read())
            raw = body["urls"]
            if not isinstance(raw, list) or not all(isinstance(u, str) for u in raw):
                raise TypeError("urls must be a list of strings")
        except (ValueError, KeyError, TypeError) as exc:
            return _answer(400, error=f'the body must be {{"urls": [URL, ...]}}: {exc}')
        if not 0 < len(raw) <= MAX_URLS:
            return _answer(400, error=f"1 to {MAX_URLS} URLs a request")
        urls: dict[str, Url] = {}
        for text in raw:
            try:
                url = parse_url(text.strip())
            except UrlError as exc:
                return _answer(400, error=f"bad URL {text!r}: {exc}")
            urls.setdefault(url.canonical, url)
        outside = sorted({u.site for u in urls.values() if u.site not in self.scope})
        if outside:
            return _answer(422, error="not in the seed; nothing scheduled", sites=outside)
        peer = request.remote or "?"
        store = self.frontier.store
        try:
            scheduled = await self.frontier.call(
                lambda: recrawl(
                    store, list(urls.values()), command="POST /recrawl", actor=f"http {peer}"
                )
            )
        except Exception as exc:  # the store is away for longer than the crawl waits
            log.warning("fastlane request from %s not scheduled: %s", peer, exc)
            return _answer(503, error="the store cannot be reached; try again")
        self.requests += 1
        return _answer(200, urls=len(urls), scheduled=scheduled)


def _answer(status: int, **fields: Any) -> web.Response:
    return web.json_response(fields, status=status)
