"""The headers of what stands around a generated world's backends: a platform's own brand, its
own front servers and caches, and a generated CDN's edge (`sites.Brand`, `Front`, `Edge`).

Rules:
- A brand is what a platform chose: `X-Powered-By: <Name>`, `X-<Name>-Tenant` (per tenant),
  `X-<Name>-Pod`, `X-<Name>-Request-Id` (per answer), its cookie, its own not-found page that
  never names the host. One brand, one signature, whichever tenant answers.
- A front's values are what Varnish, Squid, HAProxy and nginx's cache send (`web1`,
  `HIT from varnish1`, `X-Varnish: 123 456`, `Age`), never a CDN's shapes. Whether it answers
  from its cache is a pure function of the URL, so the same URL is a hit for every client.
- An edge's values are a CDN's shapes: `X-Served-By: cache-sim<N>-<code>` (N: which edge
  address), `<code>-Ray: <16 hex>-SIM`, `Via: 1.1 <product>`, `X-Cache` (`MISS`; an image it
  served before: `HIT` and `Age`, added by the server), and with `server` its own `Server` in
  place of the backend's. A Host it does not serve gets `edge_error`.
- Values that vary per answer are a pure function of the response counter, so runs replay.
"""

from __future__ import annotations

import zlib

from courtier.simweb.sites import Brand, Edge, Front

Headers = tuple[tuple[str, str], ...]

_MASK64 = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15


def _mixed(counter: int, salt: int = 0) -> int:
    return (counter + salt) * _GOLDEN & _MASK64


def brand_headers(brand: Brand, host: str, counter: int) -> Headers:
    """A platform's own headers on one answer for one tenant."""
    tenant = zlib.crc32(f"{brand.name}:{host}".encode()) % 9_000_000 + 1_000_000
    out: list[tuple[str, str]] = []
    for name in brand.headers:
        if name == "powered-by":
            out.append(("X-Powered-By", brand.name))
        elif name == "tenant":
            out.append((f"X-{brand.name}-Tenant", str(tenant)))
        elif name == "pod":
            out.append((f"X-{brand.name}-Pod", f"pod-{tenant % 7 + 1}"))
        elif name == "request-id":
            out.append((f"X-{brand.name}-Request-Id", f"{_mixed(counter, tenant):016x}"))
    if brand.cookie is not None:
        sid = f"{zlib.crc32(f'{brand.cookie}:{host}'.encode()):08x}"
        out.append(("Set-Cookie", f"{brand.cookie}={sid}{tenant:x}; Path=/; HttpOnly"))
    return tuple(out)


def brand_not_found(brand: Brand) -> bytes:
    """A platform's own not-found page: one for every tenant, naming none of them."""
    return (
        f"<!doctype html><html><head><title>Not found</title></head><body>"
        f'<div class="{brand.name.lower()}-404"><h1>This page does not exist</h1>'
        f'<p><a href="/">Back to the front page</a></p></div>'
        f"<footer>Made with {brand.name}</footer></body></html>"
    ).encode()


def front_headers(front: Front, host: str, path: str, counter: int) -> Headers:
    """What a platform's own front servers and caches add to one answer."""
    digest = zlib.crc32(f"{host}{path}".encode())
    hit = digest % 100 < front.hit_percent
    age = digest % 3_000 + 5 if hit else 0
    hits = digest % 40 + 1 if hit else 0
    verdict = "HIT" if hit else "MISS"
    xid = _mixed(counter) % 900_000_000 + 100_000_000
    out: list[tuple[str, str]] = []
    for name in front.headers:
        if name == "via":
            out.append(("Via", front.via))
        elif name == "x-cache":
            out.append(("X-Cache", verdict + front.cache_from))
        elif name == "x-served-by":
            out.append(("X-Served-By", front.servers[counter % len(front.servers)]))
        elif name == "age":
            out.append(("Age", str(age)))
        elif name == "x-varnish":
            # Varnish names the request, and on a hit the request that filled the cache too.
            first = (digest * 7919) % 900_000_000 + 100_000_000
            out.append(("X-Varnish", f"{xid} {first}" if hit else str(xid)))
        elif name == "x-cache-hits":
            out.append(("X-Cache-Hits", str(hits)))
        elif name == "x-cache-status":
            out.append(("X-Cache-Status", verdict))
    return tuple(out)


def edge_headers(edge: Edge, index: int, counter: int) -> Headers:
    """What a generated CDN's edge adds to every answer (X-Cache and Age are added apart)."""
    out: list[tuple[str, str]] = []
    for name in edge.headers:
        if name == "via":
            out.append(("Via", f"1.1 {edge.product}"))
        elif name == "served-by":
            out.append(("X-Served-By", f"cache-sim{index + 1}-{edge.code}"))
        elif name == "ray":
            out.append((f"{edge.code}-Ray", f"{_mixed(counter):016x}-SIM"))
        elif name == "server":
            out.append(("Server", edge.product))
    return tuple(out)


def edge_error(edge: Edge) -> bytes:
    """The edge's own page for a Host it does not serve."""
    return (
        f"<!doctype html><html><head><title>{edge.error_status} Unknown site</title></head>"
        f"<body><h1>Unknown site</h1><p>This {edge.product} edge does not serve the host you "
        f"asked for.</p><p>{edge.product} ray {edge.code}</p></body></html>"
    ).encode()
