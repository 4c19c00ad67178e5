"""A request the SSRF guard refuses is never sent, and is still a row of the request log that
says why: the crawl's one guarded fetch reports it like any other request."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

from prometheus_client import CollectorRegistry

from courtier.net.fetch import FetchResult
from courtier.net.guard import Guard
from courtier.net.policy import AddressPolicy
from courtier.net.resolve import StaticResolver
from courtier.observe import Observation, ObserveSettings
from courtier.observe.query import run_query
from courtier.pipeline.answers.fetching import GuardedFetch
from courtier.pipeline.events import RequestContext
from courtier.pipeline.stats import CrawlStats

T0 = 1_800_000_000.0


class NeverFetch:
    """A fetcher that must not be reached: the guard refused every host it is given."""

    async def fetch(
        self,
        url: str,
        host: str,
        addresses: tuple[str, ...],
        *,
        headers: Mapping[str, str] | None = None,
        on_sent: Callable[[float], None] | None = None,
        spool: bool = False,
    ) -> FetchResult:
        raise AssertionError(f"{url} was fetched, though its host was refused")


async def test_a_request_the_guard_refuses_is_a_row_of_the_request_log_with_its_refusal(
    tmp_path: Path,
) -> None:
    guard = Guard(
        AddressPolicy(),
        StaticResolver({"inside.test": ["10.0.0.7"], "meta.test": ["169.254.169.254"]}),
    )
    stats = CrawlStats()
    settings = replace(ObserveSettings(), live=False)
    async with Observation(tmp_path, settings, registry=CollectorRegistry()) as observation:
        fetch = GuardedFetch(guard, NeverFetch(), stats, lambda: T0, observation)
        for url, host, kind in (
            ("http://inside.test/admin", "inside.test", "page"),
            ("http://meta.test/robots.txt", "meta.test", "robots"),
            ("http://gone.test/", "gone.test", "page"),
        ):
            answer = await fetch(url, host, RequestContext(host, kind, (f"site:{host}",), 2.0))
            assert answer.result is None and answer.refusal is not None
        await observation.flush()
    _columns, rows = run_query(
        tmp_path, "SELECT url, site, kind, status_class, refusal FROM requests ORDER BY url"
    )
    assert rows == [
        ("http://gone.test/", "gone.test", "page", "refused", "nxdomain"),
        ("http://inside.test/admin", "inside.test", "page", "refused", "private"),
        ("http://meta.test/robots.txt", "meta.test", "robots", "refused", "link-local"),
    ]
    assert dict(stats.refused) == {"private": 1, "link-local": 1, "nxdomain": 1}
