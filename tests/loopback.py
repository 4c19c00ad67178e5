"""An aiohttp server on a free port of 127.0.0.1 that answers every GET with one handler
(the fetcher's and the engine's loopback tests share it)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@contextlib.asynccontextmanager
async def serving(handler: Handler) -> AsyncIterator[int]:
    """Serve ``handler`` on 127.0.0.1; yields the port, stops the server on exit."""
    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield runner.addresses[0][1]
    finally:
        await runner.cleanup()
