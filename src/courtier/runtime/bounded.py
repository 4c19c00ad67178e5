"""One coroutine per item, with a bound on how many tasks exist at once.

``asyncio.gather`` over thousands of coroutines makes each a task at once, and the loop runs
all their first steps in one turn: the DNS lookups of 2,000 seed hosts made one turn of
~100 ms at the start of a crawl (`python bench/bench_stalls.py`), and every timer due in it
fired late. Here at most ``limit`` tasks exist; each takes the next item when it is done
with one, so a turn holds at most ``limit`` first steps.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


async def map_bounded(fn: Callable[[T], Awaitable[R]], items: Sequence[T], limit: int) -> list[R]:
    """``[await fn(item) for item in items]``, ``limit`` at a time, results in item order.
    The first exception is raised once the other tasks are cancelled."""
    results = await _run(fn, items, limit, None)
    return [results[index] for index in range(len(items))]


async def map_bounded_but_stragglers(
    fn: Callable[[T], Awaitable[R]], items: Sequence[T], limit: int, grace: float
) -> dict[int, R]:
    """``map_bounded``, except that calls still running ``grace`` seconds after the last
    item was taken up are cancelled: the results of the calls that finished, by item index.

    For work where one slow item must not hold up the rest (one unanswered DNS question
    among thousands waits out its resolver's timeout). The first error is raised, as in
    ``map_bounded``."""
    return await _run(fn, items, limit, grace)


async def _run(
    fn: Callable[[T], Awaitable[R]], items: Sequence[T], limit: int, grace: float | None
) -> dict[int, R]:
    """Both maps: workers taking items from one iterator; ``grace`` None waits for all."""
    if limit < 1:
        raise ValueError("limit must be >= 1")
    results: dict[int, R] = {}
    pending = iter(enumerate(items))

    async def worker() -> None:
        for index, item in pending:  # one iterator shared by the workers: each item once
            results[index] = await fn(item)

    workers = [asyncio.ensure_future(worker()) for _ in range(min(limit, len(items)))]
    if not workers:
        return results
    try:
        # A worker ends when nothing is left to take up (or on an error): from then on
        # every item has started, and the others get ``grace`` to finish theirs.
        done, _ = await asyncio.wait(workers, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            task.result()
        done, _ = await asyncio.wait(workers, timeout=grace, return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            task.result()
    finally:
        for task in workers:  # stragglers, or the others after an error
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
    return results
