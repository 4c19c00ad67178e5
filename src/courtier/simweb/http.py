"""The simulated web's HTTP servers: one listening socket per server slot, routing by Host.

Rules:
- A request is answered only by a server the site lives on (its DNS answer); a Host the
  server does not host gets a 404, like a real virtual-hosting server.
- The canary answers anything and every request it receives is logged with `canary: true`.
- Behaviours (429, 503, latency) are decided before the page is rendered; traffic is recorded
  for every request, refused or not.
- The CDN and the image service are caches: the first fetch of an object is `X-Cache: MISS`,
  later ones `HIT` with an `Age`. The store reports the bucket it served in the log.
- Every request is logged after its response is written, with start and end times, and the
  earliest it may have arrived when the server's loop had stood still (``stalls``).
"""

from __future__ import annotations

import asyncio
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from aiohttp import web
from aiohttp.web_request import BaseRequest
from aiohttp.web_response import StreamResponse

from courtier.simweb.behaviours import SiteTraffic, decide
from courtier.simweb.log import RequestLog, RequestRecord
from courtier.simweb.network import Network
from courtier.simweb.pages import TEXT, Page, PageRenderer, not_found
from courtier.simweb.stalls import LoopWatch
from courtier.simweb.world import CANARY_SLOT, Site, SiteKind, World

Clock = Callable[[], float]
SHUTDOWN_SECONDS = 1.0
CANARY_BODY = b"canary: this address is outside the crawl's allowed net\n"
_STANDALONE_SERVERS = ("Apache/2.4.58", "nginx/1.24.0", "Caddy", "lighttpd/1.4.73")


def platform_headers(site: Site) -> tuple[tuple[str, str], ...]:
    """The headers that give a site's platform away (the only evidence for platform B)."""
    if site.kind is SiteKind.HEADER_TENANT:
        sid = f"{zlib.crc32(site.host.encode()):08x}"
        return (
            ("Server", "Plinth/2.3"),
            ("X-Powered-By", "PlinthSites"),
            ("X-Plinth-Tenant", site.label),
            ("Set-Cookie", f"plinth_sid={sid}; Path=/; HttpOnly"),
        )
    if site.kind is SiteKind.CNAME_TENANT:
        return (("Server", "nginx"),)
    if site.kind is SiteKind.CDN:
        return (("Server", "SimCDN"),)
    if site.kind is SiteKind.IMGSVC:
        return (("Server", "SimResize"),)
    if site.kind is SiteKind.STORE:
        return (("Server", "SimStore"),)
    return (("Server", _STANDALONE_SERVERS[zlib.crc32(site.host.encode()) % 4]),)


@dataclass(frozen=True)
class _Answer:
    page: Page
    headers: list[tuple[str, str]] = field(default_factory=list)
    cache: str | None = None  # X-Cache, from a caching service
    bucket: str | None = None  # the bucket the store served
    retry_until: float | None = None  # end of the Retry-After window of a refusal


class SimHttp:
    """The request handler shared by every listening socket of one simulated web."""

    def __init__(
        self,
        world: World,
        network: Network,
        log: RequestLog | None,
        clock: Clock = time.time,
        loop_watch: LoopWatch | None = None,
    ) -> None:
        self.world = world
        self.network = network
        self.renderer = PageRenderer(world, network)
        self.log = log
        self.clock = clock
        self.started_at = clock()
        self.loop_watch = loop_watch
        self._traffic: dict[str, SiteTraffic] = {}
        self._first_fetch: dict[str, float] = {}  # cache object -> first fetch time
        self._headers = {host: platform_headers(site) for host, site in world.sites.items()}
        self._servers: list[asyncio.Server] = []
        self._handlers: list[web.Server] = []

    async def listen(self, slots: list[int], port: int) -> None:
        loop = asyncio.get_running_loop()
        for slot in slots:
            address = self.network.address_of(slot)
            handler = web.Server(partial(self.handle, slot, f"{address}:{port}"))
            self._handlers.append(handler)
            server = await loop.create_server(handler, address, port, backlog=1024)
            self._servers.append(server)

    async def close(self) -> None:
        for server in self._servers:
            server.close()
        # Keep-alive connections would outlive the listening sockets: end them too. Idle ones
        # are told to close first, or shutdown() waits its full timeout on each of them.
        for handler in self._handlers:
            for connection in handler.connections:
                connection.close()
        await asyncio.gather(*(h.shutdown(SHUTDOWN_SECONDS) for h in self._handlers))
        for server in self._servers:
            await server.wait_closed()
        self._servers.clear()
        self._handlers.clear()

    async def handle(self, slot: int, server: str, request: BaseRequest) -> StreamResponse:
        start = self.clock()
        arrived_after = None
        if self.loop_watch is not None:
            arrived_after = self.loop_watch.arrived_after(start)
            if arrived_after >= start:
                arrived_after = None
        host_header = request.headers.get("Host", "")
        answer = await self._answer(slot, host_header, request.raw_path, start)
        page = answer.page
        response = web.Response(status=page.status, body=page.body, content_type=None)
        response.headers["Content-Type"] = page.content_type
        for name, value in (*answer.headers, *page.headers):
            response.headers.add(name, value)
        try:
            await response.prepare(request)
            await response.write_eof()
        except ConnectionError:
            pass  # the client left early; the request still reached us and is logged
        if self.log is not None:
            self.log.write(
                RequestRecord(
                    start=start,
                    end=self.clock(),
                    server=server,
                    host=host_header,
                    method=request.method,
                    target=request.raw_path,
                    status=page.status,
                    bytes=0 if request.method == "HEAD" else len(page.body),
                    cache=answer.cache,
                    bucket=answer.bucket,
                    ua=request.headers.get("User-Agent", ""),
                    canary=slot == CANARY_SLOT,
                    retry_until=answer.retry_until,
                    arrived_after=arrived_after,
                )
            )
        return response

    async def _answer(self, slot: int, host_header: str, target: str, start: float) -> _Answer:
        if slot == CANARY_SLOT:
            return _Answer(Page(200, CANARY_BODY, TEXT))
        site = self.world.site_of_host(host_header)
        if site is None or slot not in site.slots:
            return _Answer(not_found(None))
        traffic = self._traffic.get(site.host)
        if traffic is None:
            traffic = self._traffic[site.host] = SiteTraffic()
        verdict = decide(site, self.world.params, traffic, start, self.started_at)
        traffic.record(start)
        if verdict.delay > 0:
            await asyncio.sleep(verdict.delay)
        headers = list(self._headers[site.host])
        path, _, query = target.partition("?")
        bucket = _bucket(site, path)
        if verdict.refusal is not None:
            refusal = verdict.refusal
            if not refusal.retry_after:  # overloaded: an error with no promise of when
                page = Page(refusal.status, b"Overloaded.\n", TEXT)
                return _Answer(page, headers, bucket=bucket)
            headers.append(("Retry-After", refusal.retry_after))
            page = Page(refusal.status, b"Slow down, please.\n", TEXT)
            return _Answer(page, headers, bucket=bucket, retry_until=refusal.retry_until)
        page = self.renderer.render(site, path, query)
        cache = None
        if page.status == 200 and site.kind in (SiteKind.CDN, SiteKind.IMGSVC):
            cache = self._cache_status(f"{site.host}{path}", start, headers)
        return _Answer(page, headers, cache=cache, bucket=bucket)

    def _cache_status(self, key: str, now: float, headers: list[tuple[str, str]]) -> str:
        first = self._first_fetch.get(key)
        if first is None:
            self._first_fetch[key] = now
            headers.append(("X-Cache", "MISS"))
            return "MISS"
        headers.append(("X-Cache", "HIT"))
        headers.append(("Age", str(int(now - first))))
        return "HIT"


def _bucket(site: Site, path: str) -> str | None:
    if site.kind is not SiteKind.STORE:
        return None
    if site.bucket is not None:
        return site.bucket
    if path == "/robots.txt":  # the endpoint's own robots.txt, not a bucket called robots.txt
        return None
    bucket = path.lstrip("/").partition("/")[0]
    return bucket or None
