"""The media crawl's lanes, keys and feedback, with a scripted fetcher (no sockets)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import Any

from courtier.config import Config, load
from courtier.net.fetch import FetchResult
from courtier.net.guard import Resolution
from courtier.pipeline.media import MediaCrawl
from courtier.pipeline.stats import CrawlStats
from courtier.politeness.backoff import BackoffParams
from courtier.politeness.gcra import Limit
from courtier.politeness.keys import KeyType

Answer = Callable[[str], tuple[int, list[tuple[str, str]], bytes]]


def _allow_all(url: str) -> tuple[int, list[tuple[str, str]], bytes]:
    if url.endswith("/robots.txt"):
        return 404, [], b""
    return 200, [], b"\xff\xd8image"


class ScriptedFetcher:
    def __init__(self, answer: Answer = _allow_all) -> None:
        self.answer = answer
        self.fetched: list[tuple[float, str]] = []

    async def fetch(self, url: str, host: str, addresses: tuple[str, ...]) -> FetchResult:
        now = asyncio.get_running_loop().time()
        self.fetched.append((now, url))
        status, headers, body = self.answer(url)
        retry_after = dict((k.lower(), v) for k, v in headers).get("retry-after")
        return FetchResult(
            url=url,
            status=status,
            content_type="image/jpeg" if status == 200 else "text/plain",
            body=body,
            retry_after=retry_after,
            sent_at=now,
            latency=0.001,
            headers=tuple(headers),
        )


class OpenGuard:
    async def resolve(self, host: str) -> Resolution:
        return Resolution(host, ("127.0.0.1",), True, "ok", "")


class Harness:
    def __init__(self, config: Config, fetcher: ScriptedFetcher, origins: dict[str, str]) -> None:
        self.tats: dict[str, float] = {}
        self.documents: list[dict[str, Any]] = []
        self.written = asyncio.Event()
        self.stats = CrawlStats()
        self.tasks: set[asyncio.Task[None]] = set()
        self.fetcher = fetcher
        params = config.limits.policy().types

        def origin_limit(origin: str) -> Limit:
            return Limit(f"origin:{origin}", params[KeyType.ORIGIN].key_params())

        self.media = MediaCrawl(
            config,
            loop=asyncio.get_running_loop(),
            tats=self.tats,
            fetcher=fetcher,  # type: ignore[arg-type]
            guard=OpenGuard(),  # type: ignore[arg-type]
            stats=self.stats,
            tasks=self.tasks,
            origin_of=origins.get,
            origin_limit=origin_limit,
            write_document=self._write,
            backoff_params=BackoffParams(1.0, 60.0, 3600.0, 20),
        )

    async def fetched(self, n: int) -> None:
        """Wait until ``n`` media documents are written (answers recorded), not a fixed time."""
        async with asyncio.timeout(5.0):
            while len(self.documents) < n:
                self.written.clear()
                await self.written.wait()

    def _write(self, record: dict[str, Any]) -> None:
        self.documents.append(record)
        self.written.set()

    async def settle(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
        if self.tasks:
            await asyncio.gather(*self.tasks)

    def media_fetches(self) -> list[tuple[float, str]]:
        return [(t, u) for t, u in self.fetcher.fetched if not u.endswith("/robots.txt")]


FAST = ["limits.origin.rate=1000", "limits.cdn.rate=1000", "limits.cdn-miss.rate=1000"]


async def test_buckets_behind_one_path_style_endpoint_are_separate_lanes() -> None:
    harness = Harness(load(None, FAST), ScriptedFetcher(), {})
    for bucket in ("media-a", "media-b", "media-c"):
        assert harness.media.offer(f"http://s3.simstore.test/{bucket}/img/1.jpg", "a.test")
    assert not harness.media.offer("http://a.test/img/1.jpg", "a.test")  # not a media host
    await harness.settle(0.3)
    fetched = harness.media_fetches()
    assert len(fetched) == 3
    # One robots.txt for the endpoint, then all three buckets at once (no 1 s host spacing).
    assert next(u for _t, u in harness.fetcher.fetched).endswith("/robots.txt")
    assert max(t for t, _ in fetched) - min(t for t, _ in fetched) < 0.2
    assert sorted(harness.media.lanes) == [f"bucket:simstore/media-{x}" for x in "abc"]
    for document in harness.documents:
        bucket = document["url"].split("/")[3]
        assert document["keys"] == [f"bucket:simstore/{bucket}"]


async def test_a_bucket_takes_a_burst_then_its_rate() -> None:
    config = load(None, ["limits.bucket.rate=2", "limits.bucket.burst=1", *FAST])
    harness = Harness(config, ScriptedFetcher(), {})
    for n in range(6):
        harness.media.offer(f"http://media-a.s3.simstore.test/img/{n}.jpg", "a.test")
    await harness.settle(1.7)
    starts = sorted(t for t, _ in harness.media_fetches())
    # tau = 1 s at 2/s: three start at once (the burst), the rest 0.5 s apart.
    assert len(starts) >= 5
    assert starts[2] - starts[0] < 0.1
    assert 0.4 < starts[3] - starts[0] < 0.65
    assert 0.4 < starts[4] - starts[3] < 0.65


async def test_an_expected_cdn_miss_is_booked_on_the_embedding_sites_origin() -> None:
    fetcher = ScriptedFetcher(
        lambda url: (
            (404, [], b"") if url.endswith("robots.txt") else (200, [("X-Cache", "MISS")], b"x")
        )
    )
    harness = Harness(load(None, FAST), fetcher, {"shop.test": "platform-a"})
    harness.media.offer("http://cdn.simcdn.test/shop.test/img/1.jpg", "shop.test")
    await harness.settle(0.2)
    (document,) = harness.documents
    assert document["keys"] == [
        "cdn:cdn.simcdn.test",
        "cdn-miss:cdn.simcdn.test/shop.test",
        "origin:platform-a",
    ]
    assert document["cache"] == "miss"
    assert "origin:platform-a" in harness.tats


async def test_an_unexpected_miss_is_charged_to_the_origin_afterwards() -> None:
    verdicts = iter(["HIT"] * 8 + ["MISS"])

    def answer(url: str) -> tuple[int, list[tuple[str, str]], bytes]:
        if url.endswith("robots.txt"):
            return 404, [], b""
        return 200, [("X-Cache", next(verdicts))], b"x"

    harness = Harness(load(None, FAST), ScriptedFetcher(answer), {"shop.test": "o1"})
    for n in range(8):  # eight hits: misses are no longer expected
        harness.media.offer(f"http://cdn.simcdn.test/shop.test/img/{n}.jpg", "shop.test")
        await harness.fetched(n + 1)
    charged_before = harness.tats.get("origin:o1")
    harness.media.offer("http://cdn.simcdn.test/shop.test/img/9.jpg", "shop.test")
    await harness.fetched(9)
    last = harness.documents[-1]
    assert last["keys"] == ["cdn:cdn.simcdn.test"]  # booked as a hit ...
    assert last["cache"] == "miss"  # ... it was a miss: the origin pays afterwards
    assert harness.stats.miss_charges == 1
    assert harness.tats["origin:o1"] > (charged_before or 0.0)


async def test_an_image_service_without_cache_headers_becomes_store_like() -> None:
    harness = Harness(load(None, FAST), ScriptedFetcher(), {"acme.test": "o1"})
    for n in range(7):
        harness.media.offer(f"http://img.simresize.test/acme/w_320/img/{n}.jpg", "acme.test")
        await harness.fetched(n + 1)
    keys = [d["keys"] for d in harness.documents]
    assert keys[0] == ["imgsvc:img.simresize.test/acme", "origin:o1"]  # unknown: as a cache
    assert keys[-1] == ["imgsvc:img.simresize.test/acme"]  # five silent answers: a store
    assert harness.media.hosts["img.simresize.test"].service.behaviour.value == "store-like"


async def test_robots_txt_of_a_media_host_is_obeyed() -> None:
    def answer(url: str) -> tuple[int, list[tuple[str, str]], bytes]:
        if url.endswith("robots.txt"):
            return 200, [], b"User-agent: *\nDisallow: /private/\n"
        return 200, [], b"x"

    harness = Harness(load(None, FAST), ScriptedFetcher(answer), {})
    harness.media.offer("http://media-a.s3.simstore.test/private/1.jpg", "a.test")
    harness.media.offer("http://media-a.s3.simstore.test/img/1.jpg", "a.test")
    await harness.settle(0.2)
    assert [u for _t, u in harness.media_fetches()] == ["http://media-a.s3.simstore.test/img/1.jpg"]
    assert harness.stats.refused["robots"] == 1


async def test_a_429_backs_the_lane_off_until_retry_after() -> None:
    answers = iter([(429, [("Retry-After", "1")], b""), (200, [], b"x")])

    def answer(url: str) -> tuple[int, list[tuple[str, str]], bytes]:
        return (404, [], b"") if url.endswith("robots.txt") else next(answers)

    harness = Harness(load(None, FAST), ScriptedFetcher(answer), {})
    harness.media.offer("http://media-a.s3.simstore.test/img/1.jpg", "a.test")
    await harness.settle(1.7)
    (first, _), (second, _) = harness.media_fetches()
    assert second - first >= 1.0  # Retry-After is a hard floor
    assert [d["status"] for d in harness.documents] == [429, 200]


async def test_a_media_url_is_fetched_once_per_run() -> None:
    harness = Harness(load(None, FAST), ScriptedFetcher(), {})
    for _ in range(3):
        harness.media.offer("http://media-a.s3.simstore.test/img/1.jpg", "a.test")
        harness.media.offer("HTTP://MEDIA-A.s3.simstore.test:80/img/1.jpg", "b.test")
    await harness.settle(0.2)
    assert len(harness.media_fetches()) == 1


async def test_a_crawl_delay_on_a_media_host_spaces_every_lane_there() -> None:
    def answer(url: str) -> tuple[int, list[tuple[str, str]], bytes]:
        if url.endswith("robots.txt"):
            return 200, [], b"User-agent: *\nCrawl-delay: 0.5\n"
        return 200, [], b"x"

    harness = Harness(load(None, FAST), ScriptedFetcher(answer), {})
    for bucket in ("media-a", "media-b", "media-c"):
        harness.media.offer(f"http://s3.simstore.test/{bucket}/img/1.jpg", "a.test")
    # The robots.txt request itself was booked on the host's site key (1 s) first.
    await harness.settle(2.7)
    starts = sorted(t for t, _ in harness.media_fetches())
    assert len(starts) == 3
    assert all(b - a >= 0.45 for a, b in itertools.pairwise(starts))
