"""A page whose reading raises in the worker is kept unparsed; the crawl goes on."""

import asyncio

import pytest

from courtier.net.fetch import FetchResult
from courtier.pipeline.stats import CrawlStats
from courtier.pipeline.workers.jobs import ParseTimeout, PoolClosed, parse_guarded


def _raising(error: BaseException):
    async def parse(fn, *args, **kwargs):
        raise error

    return parse


def _result() -> FetchResult:
    return FetchResult("http://a.test/", 200, "text/html", b"<p>x</p>")


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (ParseTimeout("slow"), "parse-timeout"),
        (UnicodeEncodeError("ascii", "é", 0, 1, "no"), "parse-error"),
        (RuntimeError("a bug in the reader"), "parse-error"),
    ],
)
def test_a_failed_parse_is_counted_and_the_page_kept_unparsed(error, reason):
    stats = CrawlStats()
    assert asyncio.run(parse_guarded(_raising(error), stats, print, _result())) == (None, reason)
    assert stats.parse_failures == {reason: 1}


def test_a_closed_pool_is_no_parse_failure():
    with pytest.raises(PoolClosed):
        asyncio.run(parse_guarded(_raising(PoolClosed("closed")), CrawlStats(), print, _result()))
