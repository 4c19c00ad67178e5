"""The parse pool of a crawl, as its configuration asks (``[crawl]`` parse settings, and the
parse hook each worker imports in its warm-up: ``[parse] hook``)."""

from __future__ import annotations

from functools import partial

from courtier.config import Config
from courtier.pipeline.workers.pool import ParsePool
from courtier.pipeline.workers.worker import warm_up_parse


def crawl_parse_pool(config: Config) -> ParsePool:
    crawl = config.crawl
    return ParsePool(
        crawl.parse_workers or None,
        timeout=crawl.parse_timeout,
        nice=crawl.parse_nice,
        warm_up=partial(warm_up_parse, config.parse.hook),
    )
