"""Synthetic requests for the observer's tests: events as the engine emits them."""

from __future__ import annotations

from courtier.net.fetch import FetchResult, Phases
from courtier.pipeline.events import RequestContext, RequestEvent

T0 = 1_800_000_000.0
"""A fixed wall-clock start (2027-01-15)."""


def event(
    site: str = "a.test",
    at: float = T0,
    *,
    status: int | None = 200,
    latency: float = 0.01,
    kind: str = "page",
    path: str = "/item/1",
    origin: str | None = "o1",
    keys: tuple[str, ...] | None = None,
    cost: float = 2.0,
    wait: float = 0.0,
    late: float = 0.0,
    retry_after: str | None = None,
    refusal: str | None = None,
    body: bytes = b"<html>x</html>",
    content_type: str = "text/html",
    headers: tuple[tuple[str, str], ...] = (),
    error: str | None = None,
    lane: str = "discovery",
    attempt: int = 0,
    redirects: int = 0,
) -> RequestEvent:
    if keys is None:
        keys = (f"site:{site}",) + ((f"origin:{origin}",) if origin else ())
    context = RequestContext(
        site, kind, keys, cost, wait, late, attempt, redirects, origin=origin, lane=lane
    )
    url = f"http://{site}{path}"
    if refusal is not None:
        return RequestEvent(context, url, at, None, refusal)
    phases = Phases(dns=0.001, connect=0.002, tls=None, first_byte=latency, total=latency + 0.004)
    result = FetchResult(
        url=url,
        status=status,
        content_type=content_type if status is not None else "",
        body=body if status is not None else b"",
        retry_after=retry_after,
        started_at=at,
        sent_at=at + 0.003,
        latency=latency if status is not None else None,
        elapsed=latency + 0.003,
        error=error if error is not None or status is not None else "ClientConnectorError: x",
        headers=headers,
        phases=phases if status is not None else Phases(dns=0.001, total=0.5),
    )
    return RequestEvent(context, url, at, result, None)


Samples = dict[str, list[tuple[dict[str, str], float]]]


async def scrape(port: int) -> Samples:
    """``/metrics`` of a loopback metrics server, as {sample name: [(labels, value)]}."""
    import aiohttp
    from prometheus_client.parser import text_string_to_metric_families

    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{port}/metrics") as response,
    ):
        assert response.status == 200
        text = await response.text()
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return samples


def total(samples: Samples, name: str, **labels: str) -> float:
    return sum(
        value
        for found, value in samples.get(name, [])
        if all(found.get(k) == v for k, v in labels.items())
    )
