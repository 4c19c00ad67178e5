"""Helpers shared by the simulated-web tests: the small world and a loopback-only client."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import aiohttp

from courtier.simweb import SimWeb, WorldParams
from courtier.simweb.log import RequestRecord, read_log

# Buckets accept 5 requests/s with 1 s of burst (at most 11 in any second, 31 in any 5 s), so a
# test overruns one with a dozen requests instead of the hundreds the default limit needs.
SMALL = WorldParams(
    seed=7, unavailable_seconds=1.0, slow_latency=0.05, bucket_rate=5.0, bucket_burst=1.0
)
# SMALL with the real web's shapes: edge sites (one of each stack and a few more), platform C
# tenants, platform A's media host, vanity media hosts and the image service's modes.
REALWEB = dataclasses.replace(
    SMALL,
    n_edge_sites=12,
    n_edge_tenants=4,
    platform_media=1,
    vanity_media=0.5,
    imgsvc_store_share=0.3,
    imgsvc_mixed_share=0.2,
)

# SMALL with single-page apps: three (the last one hangs its renderer) and the first one's twin.
SPA = dataclasses.replace(SMALL, n_spa=3, spa_twin=1, spa_hang=1)


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes
    raw_headers: list[tuple[str, str]] = field(default_factory=list)  # repeats kept, in order

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


class Client:
    """Sends requests to one simulated server address with a chosen Host: loopback only."""

    def __init__(self, web: SimWeb, session: aiohttp.ClientSession) -> None:
        self.web = web
        self.session = session

    async def get(
        self,
        host: str,
        target: str = "/",
        *,
        address: str | None = None,
        host_header: str | None = None,
        ua: str = "test-client",
        headers: dict[str, str] | None = None,
    ) -> Answer:
        address = address or self.web.address_of(host)
        assert address.startswith("127."), "tests talk to loopback only"
        url = f"http://{address}:{self.web.port}{target}"
        headers = {"Host": host_header or host, "User-Agent": ua, **(headers or {})}
        async with self.session.get(url, headers=headers, allow_redirects=False) as response:
            body = await response.read()
            return Answer(
                response.status, dict(response.headers), body, list(response.headers.items())
            )


async def logged(web: SimWeb) -> list[RequestRecord]:
    """Stops the simulated web (flushing its log) and reads the log back."""
    await web.stop()
    assert web.log_path is not None
    return list(read_log(web.log_path))


def request_record(
    host: str, target: str, start: float, status: int = 200, **kw: object
) -> RequestRecord:
    """A request as the log would hold it (a 200 from a plain server unless told)."""
    fields: dict[str, object] = dict(
        start=start,
        end=start + 0.01,
        server="127.1.0.1:80",
        host=host,
        method="GET",
        target=target,
        status=status,
        bytes=100,
        cache=None,
        bucket=None,
        ua="t",
        canary=False,
        retry_until=None,
    )
    fields.update(kw)
    return RequestRecord(**fields)  # type: ignore[arg-type]
