"""What the crawl keeps of a robots.txt answer: the store gets the body redacted, as
everything written is, or nothing when it could not be redacted (never the raw body)."""

import asyncio

from courtier.config import Config
from courtier.content.reading import redact_body
from courtier.net.fetch import FetchResult
from courtier.pipeline.answers.fetching import Answer
from courtier.pipeline.events import RequestContext
from courtier.pipeline.keeping.keeper import Keeper
from courtier.pipeline.lanes.services import LaneKindBase
from courtier.pipeline.stats import CrawlStats
from courtier.pipeline.workers.jobs import ParseTimeout, PoolClosed

URL = "http://a.test/robots.txt"
BODY = b"# Questions: jane.doe@example.com\nUser-agent: *\nDisallow: /private\n"


def _kind(parse):
    kind = object.__new__(LaneKindBase)
    kind.config, kind.stats = Config(), CrawlStats()
    kind.robots_keeper = Keeper(kind.config, kind.stats, None, parse)
    return kind


def _stored(kind, result: FetchResult) -> bytes | None:
    async def get(url, host, context):
        return Answer(url, result)

    async def run():
        kept = {}
        context = RequestContext("a.test", "robots", (), 1.0)
        answer = await kind._keep(await get(URL, "a.test", context), "a.test", kept)
        return kind._stored_body(answer.result, kept)

    return asyncio.run(run())


def test_the_store_gets_the_redacted_body():
    async def parse(fn, *args):
        assert fn is redact_body  # in the pool, as other text bodies
        return fn(*args)

    kind = _kind(parse)
    stored = _stored(kind, FetchResult(URL, 200, "text/plain", BODY))
    assert stored is not None and b"jane.doe" not in stored
    assert stored == b"# Questions: [REDACTED:email]\nUser-agent: *\nDisallow: /private\n"
    assert kind.stats.redactions["email"] == 1


def test_a_body_that_could_not_be_redacted_is_not_stored():
    async def overran(fn, *args):
        raise ParseTimeout("too slow")

    async def closed(fn, *args):
        raise PoolClosed()

    for parse in (overran, closed):
        assert _stored(_kind(parse), FetchResult(URL, 200, "text/plain", BODY)) is None


def test_no_answer_stores_an_empty_body():
    async def parse(fn, *args):
        raise AssertionError("nothing to redact")

    assert _stored(_kind(parse), FetchResult(URL, None, error="ConnectTimeout")) == b""
