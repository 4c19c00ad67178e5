"""A PDF is an allowed type, fetched within the body limit: one past ``max_body_bytes`` is cut
there (spooled to a file, not held in memory) and its document says so, and reading the cut
file in a parse worker gives an error or what pypdf recovers, never a raise or a dead pool."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest
from aiohttp import web

from courtier.config import FetchSection
from courtier.content.reading import ReadContext, read_page
from courtier.net.fetch import Fetcher
from courtier.net.spool import Spool
from courtier.pipeline.answers.verdict import document
from courtier.pipeline.workers.pool import ParsePool
from courtier.simweb.documents import pdf_bytes
from loopback import serving

LIMIT = 256 * 1024
THRESHOLD = 64 * 1024
LINES = [f"Line {n} of a long manual, padded to make the file large enough." for n in range(9000)]
BIG = pdf_bytes("Big manual", LINES, ["/item/1"], per_page=60)
SMALL = pdf_bytes("Small manual", ["Only line."], [])


@pytest.fixture
async def server() -> AsyncIterator[int]:
    async def handler(request: web.Request) -> web.StreamResponse:
        body = BIG if request.path == "/big.pdf" else SMALL
        return web.Response(body=body, content_type="application/pdf")

    async with serving(handler) as port:
        yield port


async def test_a_pdf_past_the_body_limit_is_cut_cleanly_and_read_without_harm(
    tmp_path: Path, server: int
) -> None:
    assert len(BIG) > 2 * LIMIT
    settings = replace(FetchSection(), max_body_bytes=LIMIT, total_timeout=10.0)
    assert "application/pdf" in settings.allowed_types
    spool = Spool(tmp_path, THRESHOLD)
    pool = ParsePool(1, timeout=30.0)
    try:
        async with Fetcher(settings, lambda address: True, spool) as fetcher:
            results = [
                await fetcher.fetch(
                    f"http://s.test:{server}{path}", "s.test", ("127.0.0.1",), spool=True
                )
                for path in ("/big.pdf", "/small.pdf")
            ]
        big, small = results
        assert big.status == 200 and big.truncated and big.size == LIMIT
        assert big.spooled is not None and big.body == b""  # in a file, not in memory
        context = ReadContext(big.content_type)
        page = await pool.run(read_page, big.content, big.url, context)
        record = document(big, url=big.url, site="s.test", page=page)
        assert record["truncated"] is True and record["format"] == "pdf"
        assert "pdf_error" in record or "Line 0 of a long manual" in record["text"]
        # The pool is alive and reads the next PDF whole.
        page = await pool.run(read_page, small.content, small.url, ReadContext("application/pdf"))
        assert page.title == "Small manual" and "Only line." in page.fields["text"]
    finally:
        await pool.close()
