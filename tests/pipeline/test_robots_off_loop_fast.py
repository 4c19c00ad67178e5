"""A large robots.txt is parsed off the event loop: in the parse pool when there is one."""

import asyncio

from courtier.config import Config
from courtier.net.fetch import FetchResult
from courtier.pipeline.answers.fetching import Answer
from courtier.pipeline.lanes.services import ROBOTS_INLINE_BYTES, LaneKindBase
from courtier.pipeline.stats import CrawlStats
from courtier.pipeline.workers.jobs import ParseTimeout
from courtier.politeness.robots import RobotsStatus

BIG = b"User-agent: *\nDisallow: /private\n" + b"# padding\n" * ROBOTS_INLINE_BYTES


def _kind(parse):
    kind = object.__new__(LaneKindBase)
    kind.config, kind.stats, kind.parse_robots = Config(), CrawlStats(), parse
    return kind


def _answer(body: bytes, status: int = 200) -> Answer:
    url = "http://a.test/robots.txt"
    return Answer(url, FetchResult(url, status, "text/plain", body))


def test_a_large_robots_txt_goes_to_the_pool_and_a_small_one_does_not():
    calls = []

    async def parse(fn, *args, **kwargs):
        calls.append(len(args[1]))
        return fn(*args, **kwargs)

    kind = _kind(parse)
    big = asyncio.run(kind._rules_of(_answer(BIG), 0.0))
    small = asyncio.run(kind._rules_of(_answer(b"User-agent: *\nDisallow: /x\n"), 0.0))
    assert calls == [len(BIG)]
    assert not big.allows("http://a.test/private/1", "courtier")
    assert not small.allows("http://a.test/x", "courtier")


def test_a_robots_txt_the_pool_cannot_parse_in_time_disallows_everything():
    async def parse(fn, *args, **kwargs):
        raise ParseTimeout("too slow")

    kind = _kind(parse)
    rules = asyncio.run(kind._rules_of(_answer(BIG), 100.0))
    assert rules.status is RobotsStatus.DISALLOW_ALL
    assert rules.expires_at == 100.0 + kind.config.robots.retry_unreachable
    assert kind.stats.parse_failures["robots-timeout"] == 1


def test_without_a_pool_a_large_robots_txt_is_parsed_in_a_thread():
    rules = asyncio.run(_kind(None)._rules_of(_answer(BIG), 0.0))
    assert rules.status is RobotsStatus.PARSED
    assert rules.allows("http://a.test/public", "courtier")
