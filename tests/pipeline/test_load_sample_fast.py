"""What bounds the crawl, sampled once a second: the parse queue and the places in flight."""

from __future__ import annotations

import asyncio
import contextlib

from courtier.pipeline.stats import CrawlStats, sample_load


def test_the_summary_reports_the_parse_queue_and_how_often_every_place_was_taken() -> None:
    stats = CrawlStats()
    assert stats.as_dict()["parse_queue_mean"] == 0.0  # no samples yet
    for waiting, in_flight in ((520, 512), (500, 512), (0, 100), (2, 511)):
        stats.record_load(waiting, in_flight, 512)
    summary = stats.as_dict()
    assert summary["parse_queue_mean"] == 255.5
    assert summary["parse_queue_max"] == 520
    assert summary["places_full_share"] == 0.5


async def test_the_sampler_asks_the_engine_each_period() -> None:
    stats = CrawlStats()
    answers = [(3, 10, 10), (1, 4, 10)]
    asked = asyncio.Event()

    def load() -> tuple[int, int, int]:
        if not answers:
            asked.set()
            return (0, 0, 10)  # idle from then on
        return answers.pop(0)

    task = asyncio.create_task(sample_load(stats, load, period=0.001))
    await asyncio.wait_for(asked.wait(), 5)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert stats.load_samples >= 2 and stats.parse_queue_max == 3
    assert (stats.parse_queue_total, stats.places_full) == (4, 1)
