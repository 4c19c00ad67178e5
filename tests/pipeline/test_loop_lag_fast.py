"""The loop's own lag is told apart from a server's latency (``RecentLag``)."""

from __future__ import annotations

import asyncio
import time

from courtier.pipeline.stats import CrawlStats, RecentLag, sample_loop_lag


def test_the_worst_lag_since_a_request_was_sent_counts_and_older_lag_does_not() -> None:
    recent = RecentLag(window=5.0)
    recent.add(100.0, 0.30)  # before the request
    recent.add(101.0, 0.02)
    recent.add(101.5, 0.12)
    recent.due = 102.0
    assert recent.since(100.5, 101.9) == 0.12
    assert recent.since(101.2, 101.9) == 0.12
    assert recent.since(101.6, 101.9) == 0.0
    assert recent.since(99.0, 101.9) == 0.30
    # The sample under way is overdue: the loop is late right now.
    assert recent.since(101.6, 102.25) == 0.25


def test_samples_older_than_the_window_are_dropped() -> None:
    recent = RecentLag(window=1.0)
    for second in range(10):
        recent.add(float(second), 0.5)
    assert [ended for ended, _lag in recent.samples] == [8.0, 9.0]


async def test_a_blocked_loop_shows_as_lag_since_the_send() -> None:
    stats = CrawlStats()
    sampler = asyncio.create_task(sample_loop_lag(stats, period=0.01))
    await asyncio.sleep(0.03)
    sent = time.time()
    time.sleep(0.15)  # noqa: ASYNC251 - the crawler's own work holding the loop, on purpose
    await asyncio.sleep(0.03)
    sampler.cancel()
    assert stats.recent_lag.since(sent, time.time()) >= 0.1
