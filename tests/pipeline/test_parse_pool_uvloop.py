"""The parse pool on uvloop, the loop a crawl runs on by default: the pool drives its workers'
sockets through the loop's own transports, and uvloop's are its own code (libuv's). One pool
through every way a job can end, and a close with a job stuck."""

from __future__ import annotations

import asyncio
import math
import os
import time

import pytest
import uvloop

from courtier.pipeline.workers.jobs import ParseTimeout, PoolClosed, WorkerLost
from courtier.pipeline.workers.pool import ParsePool

BUDGET = 0.5


async def _every_ending() -> None:
    async with ParsePool(2, timeout=BUDGET, max_memory_bytes=512 * 1024 * 1024) as pool:
        await pool.ready()
        assert await pool.run(math.factorial, 10) == 3628800
        big = os.urandom(6 * 1024 * 1024)
        assert await pool.run(bytes, big) == big  # megabytes out and back, over many reads
        stuck = asyncio.ensure_future(pool.run(time.sleep, 30))
        behind = [asyncio.ensure_future(pool.run(math.factorial, n)) for n in range(10)]
        with pytest.raises(ParseTimeout):
            await stuck
        assert await asyncio.gather(*behind) == [math.factorial(n) for n in range(10)]
        with pytest.raises(WorkerLost):
            await pool.run(os._exit, 3)
        with pytest.raises(MemoryError):
            await pool.run(bytearray, 4 * 1024 * 1024 * 1024)
        with pytest.raises(ValueError, match="negative"):
            await pool.run(math.factorial, -1)
        assert (pool.timeouts, pool.replaced) == (1, 3)
        assert await asyncio.gather(*(pool.run(math.factorial, n) for n in range(4))) == [
            1,
            1,
            2,
            6,
        ]


async def _close_with_a_stuck_job() -> float:
    pool = ParsePool(2, timeout=60, warm_up=None)
    await pool.ready()
    stuck = [asyncio.ensure_future(pool.run(time.sleep, 60)) for _ in range(4)]
    await asyncio.sleep(0.1)
    started = time.monotonic()
    await pool.close()
    took = time.monotonic() - started
    for job in stuck:
        with pytest.raises(PoolClosed):
            await job
    return took


def test_every_way_a_job_ends_on_uvloop() -> None:
    uvloop.run(_every_ending())


def test_close_is_prompt_on_uvloop() -> None:
    assert uvloop.run(_close_with_a_stuck_job()) < 1.0
