"""The simulated web's HTTP servers: one listening socket per server slot, routing by Host.

Rules:
- A request is answered only by a server the site lives on (its DNS answer); a Host the
  server does not host gets a 404, like a real virtual-hosting server.
- The canary answers anything and every request it receives is logged with `canary: true`.
- Behaviours (429, 503, latency) are decided before the page is rendered; traffic is recorded
  for every request, refused or not.
- The CDN and the image service are caches: the first fetch of an object is `X-Cache: MISS`,
  later ones `HIT` with an `Age`. The image service answers some customers (or some of a
  customer's images) store-like instead, with no cache header (`World.imgsvc_mode`). The store
  reports the bucket it served in the log.
- The CDN edge (`World.edge_slots`) adds its headers to every answer it gives (`stacks`):
  `Via`, `X-Served-By`, a `QS-Ray` new on every answer, and `X-Cache` (`MISS`; an image of an
  edge site fetched before: `HIT` and `Age`). A Host it does not serve gets its 421 page.
- Generated worlds (`fuzz`) put layers around a backend (`layers`): a site's stack and brand
  headers, then its platform's front servers' and caches', then a generated CDN edge's when
  the request came in on one of the edge's addresses (`World.cdn_edges`; with `server` in its
  headers the edge's `Server` replaces the backend's). A Host a generated edge does not serve
  gets the edge's own error page.
- Static files that carry an `ETag` (the single-page apps', `spa`) answer 304 to a request
  that already holds them (`If-None-Match`, `If-Modified-Since`); nothing else is conditional.
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

from courtier.simweb import news
from courtier.simweb.behaviours import SiteTraffic, decide
from courtier.simweb.catalogue import HTML, TEXT, Page
from courtier.simweb.latency import AnswerTimes
from courtier.simweb.layers import brand_headers, edge_error, front_headers
from courtier.simweb.layers import edge_headers as cdn_edge_headers
from courtier.simweb.log import RequestLog, RequestRecord
from courtier.simweb.network import Network
from courtier.simweb.pages import PageRenderer, not_found
from courtier.simweb.spa import revalidated
from courtier.simweb.stacks import (
    EDGE_ERROR,
    EDGE_ERROR_STATUS,
    app_makes_not_found,
    edge_headers,
    platform_c_headers,
    stack_headers,
    stack_response_headers,
)
from courtier.simweb.stalls import LoopWatch
from courtier.simweb.world import (
    CANARY_SLOT,
    FUZZ_KINDS,
    IMGSVC_STORE,
    Edge,
    Site,
    SiteKind,
    World,
    normalise_host_header,
)

Clock = Callable[[], float]
MAX_CONNECTIONS_KEPT = 100_000
"""Client addresses remembered to tell a connection's first request (then forgotten)."""
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
    if site.kind in (SiteKind.CNAME_TENANT, SiteKind.PLATFORM_MEDIA):
        return (("Server", "nginx"),)  # platform A's servers
    if site.kind is SiteKind.EDGE_SITE and site.stack is not None:
        server, app = stack_headers(site.stack, site.host)  # what its home page sends
        return server + app
    if site.kind is SiteKind.EDGE_TENANT:
        return platform_c_headers(site.host)
    if site.kind in FUZZ_KINDS and site.stack is not None:
        server, app = stack_headers(site.stack, site.host)
        brand = () if site.brand is None else brand_headers(site.brand, site.host, 0)
        return server + app + brand
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
    edge_error: bool = False  # an edge's own answer to a Host it does not serve


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
        self._stacks = {
            host: stack_headers(site.stack, host)
            for host, site in world.sites.items()
            if site.stack is not None
        }
        self._edge_index = {slot: i for i, slot in enumerate(world.edge_slots)}
        self._cdn_edges: dict[int, tuple[Edge, int]] = {
            slot: (edge, i) for edge in world.cdn_edges for i, slot in enumerate(edge.slots)
        }
        self._responses = 0  # answers given: the counter per-answer header values come from
        self._answer_times = AnswerTimes(world.params)
        self._connections: set[object] = set()
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
        first = self._first_on_connection(request)
        answer = await self._answer(slot, host_header, request.raw_path, start, first)
        page = revalidated(
            answer.page,
            request.headers.get("If-None-Match"),
            request.headers.get("If-Modified-Since"),
        )
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

    def _first_on_connection(self, request: BaseRequest) -> bool:
        """Whether ``request`` is the first of its connection (told by the client's address
        and port: a port used again after its connection closed reads as the same one)."""
        if not self._answer_times.on:
            return False
        transport = request.transport
        peer = None if transport is None else transport.get_extra_info("peername")
        if peer is None or peer in self._connections:
            return False
        if len(self._connections) > MAX_CONNECTIONS_KEPT:
            self._connections.clear()
        self._connections.add(peer)
        return True

    async def _answer(
        self, slot: int, host_header: str, target: str, start: float, first: bool = False
    ) -> _Answer:
        self._responses += 1
        answer = await self._origin_answer(slot, host_header, target, start, first)
        edge = self._edge_index.get(slot)
        if edge is not None:
            headers = answer.headers
            headers.extend(edge_headers(edge, self._responses))
            path = target.partition("?")[0]
            if answer.edge_error:
                headers.append(("Server", "quickserve"))
            elif answer.page.status == 200 and path.startswith("/img/"):
                self._cache_status(f"{normalise_host_header(host_header)}{path}", start, headers)
            else:
                headers.append(("X-Cache", "MISS"))
        cdn = self._cdn_edges.get(slot)
        if cdn is not None:
            self._through_cdn_edge(*cdn, answer, host_header, target, start)
        return answer

    def _through_cdn_edge(
        self, edge: Edge, index: int, answer: _Answer, host_header: str, target: str, now: float
    ) -> None:
        """A generated CDN edge's headers on an answer (`layers.edge_headers`)."""
        headers = answer.headers
        if "server" in edge.headers:
            headers[:] = [(k, v) for k, v in headers if k.lower() != "server"]
        headers.extend(cdn_edge_headers(edge, index, self._responses))
        if "x-cache" not in edge.headers or answer.edge_error:
            return
        path = target.partition("?")[0]
        if answer.page.status == 200 and path.startswith("/img/"):
            self._cache_status(f"{normalise_host_header(host_header)}{path}", now, headers)
        else:
            headers.append(("X-Cache", "MISS"))

    async def _origin_answer(
        self, slot: int, host_header: str, target: str, start: float, first: bool
    ) -> _Answer:
        if slot == CANARY_SLOT:
            return _Answer(Page(200, CANARY_BODY, TEXT))
        site = self.world.site_of_host(host_header)
        if site is None or slot not in site.slots:
            if slot in self._edge_index:  # the edge knows no such site
                return _Answer(Page(EDGE_ERROR_STATUS, EDGE_ERROR, HTML), edge_error=True)
            cdn = self._cdn_edges.get(slot)
            if cdn is not None:
                page = Page(cdn[0].error_status, edge_error(cdn[0]), HTML)
                return _Answer(page, [("Server", cdn[0].product)], edge_error=True)
            return _Answer(not_found(None))
        answer = await self._site_answer(site, host_header, target, start, first)
        if site.front is not None:  # the platform's own front servers and caches
            path = target.partition("?")[0]
            answer.headers.extend(front_headers(site.front, site.host, path, self._responses))
        return answer

    async def _site_answer(
        self, site: Site, host_header: str, target: str, start: float, first: bool
    ) -> _Answer:
        traffic = self._traffic.get(site.host)
        if traffic is None:
            traffic = self._traffic[site.host] = SiteTraffic()
        verdict = decide(site, self.world.params, traffic, start, self.started_at)
        traffic.record(start)
        delay = self._answer_times.delay(site, verdict.delay, first)
        if delay > 0:
            await asyncio.sleep(delay)
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
        if site.kind is SiteKind.NEWS:  # made per request: it changes with time
            page = news.render(
                self.world.params, site, path, start - self.started_at, self.started_at
            )
        else:
            page = self.renderer.render(site, path, query)
        if site.stack is not None:
            headers = self._stack_answer_headers(site, page)
        cache = None
        if page.status == 200 and (
            site.kind is SiteKind.CDN
            or (
                site.kind is SiteKind.IMGSVC
                and self.world.imgsvc_mode(host_header, target) != IMGSVC_STORE
            )
        ):
            cache = self._cache_status(self._cache_key(site, path), start, headers)
        return _Answer(page, headers, cache=cache, bucket=bucket)

    def _stack_answer_headers(self, site: Site, page: Page) -> list[tuple[str, str]]:
        """The web server's headers, and the application's on the pages it makes; a brand's
        on those pages, or on every answer when it is everywhere."""
        assert site.stack is not None
        server, app = self._stacks[site.host]
        brand = site.brand
        own_404 = app_makes_not_found(site.stack) or (brand is not None and brand.not_found)
        made_by_app = page.content_type == HTML and (page.status != 404 or own_404)
        headers = list(server)
        if made_by_app:
            headers += [*app, *stack_response_headers(site.stack, self._responses)]
        if brand is not None and (made_by_app or brand.everywhere):
            headers += brand_headers(brand, site.host, self._responses)
        return headers

    @staticmethod
    def _cache_key(site: Site, path: str) -> str:
        """A vanity host and its distribution name are one distribution: one cache."""
        if site.customer is not None:
            return f"distribution:{site.customer}{path}"
        return f"{site.host}{path}"

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
