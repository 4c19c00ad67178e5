"""The parse pool: results, parallelism, the time budget, replacement of killed workers, prompt
close, exceptions. Worker functions are builtins (``time.sleep``, ``math.factorial``...),
``parse_page`` and the jobs of ``pool_jobs``: a spawned worker can import those, and none of
them imports pytest inside a job's time budget."""

from __future__ import annotations

import asyncio
import math
import multiprocessing
import os
import pickle
import signal
import socket
import time
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from pool_jobs import out_of_memory, sleep_on

from courtier.content.parse import ParsedPage, parse_page
from courtier.pipeline.workers.jobs import LARGE_BYTES
from courtier.pipeline.workers.pool import (
    PIPELINE,
    ParsePool,
    ParseTimeout,
    PoolClosed,
    RemoteTraceback,
    WorkerLost,
)

BUDGET = 0.5

# A pool belongs to the event loop it was made in: the shared one and its tests share one.
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def pool() -> AsyncIterator[ParsePool]:
    """Two warm workers shared by the tests that leave the pool usable."""
    async with ParsePool(2, timeout=BUDGET, max_memory_bytes=512 * 1024 * 1024) as shared:
        yield shared


async def test_results_come_back(pool: ParsePool) -> None:
    await pool.ready()
    assert await pool.run(math.factorial, 10) == 3628800
    page = await pool.run(
        parse_page, b"<title>Hi</title><a href='/x'>x</a>" + b"<div>" * 100_000, "http://a.test/"
    )
    assert isinstance(page, ParsedPage)
    assert page.title == "Hi" and page.truncated == "depth"
    assert [link.canonical for link in page.links] == ["http://a.test/x"]


async def test_jobs_run_in_parallel_on_two_workers(pool: ParsePool) -> None:
    await pool.ready()
    started = time.monotonic()
    await asyncio.gather(pool.run(time.sleep, 0.4), pool.run(time.sleep, 0.4))
    assert time.monotonic() - started < 0.75  # one after the other: 0.8 s


async def test_jobs_start_in_submission_order() -> None:
    async with ParsePool(1, timeout=5, warm_up=None) as single:
        await single.ready()
        # The worker busy, then clock reads queued: they run in the order submitted
        # (CLOCK_MONOTONIC is one clock for every process; one worker, so no two overlap).
        busy = asyncio.ensure_future(single.run(time.sleep, 0.2))
        await asyncio.sleep(0.05)
        reads = [asyncio.ensure_future(single.run(time.monotonic)) for _ in range(6)]
        times = await asyncio.gather(*reads)
        await busy
        assert times == sorted(times)


async def _serving_pids(pool: ParsePool, *, within: float = 15.0) -> set[int]:
    """The process ids of the workers taking jobs, once all of them do (or ``within`` seconds
    have passed: a worker is replaced by a new process, whose start takes a moment). Jobs
    given at once go one to each idle worker before any is sent ahead to a busy one."""
    deadline = time.monotonic() + within
    while True:
        pids = set(await asyncio.gather(*(pool.run(os.getpid) for _ in range(pool.workers))))
        if len(pids) == pool.workers or time.monotonic() > deadline:
            return pids
        await asyncio.sleep(0.05)


async def test_a_job_over_budget_is_killed_and_the_pool_carries_on(pool: ParsePool) -> None:
    await pool.ready()
    before = await _serving_pids(pool)
    assert len(before) == 2
    timeouts, replaced = pool.timeouts, pool.replaced
    started = time.monotonic()
    stuck = asyncio.ensure_future(pool.run(time.sleep, 30))
    await asyncio.sleep(0.05)
    # Submitted after the stuck job, answered by the other worker at once.
    assert await pool.run(math.factorial, 5) == 120
    assert time.monotonic() - started < BUDGET
    with pytest.raises(ParseTimeout):
        await stuck
    assert BUDGET <= time.monotonic() - started < BUDGET + 1.0
    assert (pool.timeouts, pool.replaced) == (timeouts + 1, replaced + 1)
    # The killed worker is replaced by a new process: two workers take jobs again, the one
    # that was not stuck and a fresh one.
    after = await _serving_pids(pool)
    assert len(after) == 2 and len(after & before) == 1, (before, after)
    results = await asyncio.gather(*(pool.run(math.factorial, n) for n in range(8)))
    assert results == [math.factorial(n) for n in range(8)]
    await asyncio.gather(pool.run(time.sleep, 0.3), pool.run(time.sleep, 0.3))


async def test_waiting_in_the_queue_does_not_count_against_the_budget() -> None:
    async with ParsePool(1, timeout=BUDGET, warm_up=None) as single:
        await single.ready()
        worker = await single.run(os.getpid)
        started = time.monotonic()
        first = asyncio.ensure_future(single.run(time.sleep, 0.35))
        second = asyncio.ensure_future(single.run(time.sleep, 0.35))
        assert await first is None
        assert await second is None  # no ParseTimeout
        # It waited 0.35 s behind the first, then ran 0.35 s: over the budget in all (so
        # the case is the one the name says), not in its own run.
        assert time.monotonic() - started >= 2 * 0.35 > BUDGET
        assert (single.timeouts, single.replaced) == (0, 0)
        assert await single.run(os.getpid) == worker  # the same worker: none was killed


async def test_jobs_sent_behind_one_that_ends_its_worker_run_on_the_next_worker() -> None:
    """A worker gets the next job before it answers the last (``PIPELINE``): a job sent
    behind one that overran, crashed or ran out of memory never started, and still runs."""
    async with ParsePool(
        1, timeout=BUDGET, warm_up=None, max_memory_bytes=512 * 1024 * 1024
    ) as single:
        await single.ready()
        for killer, error in (
            ((time.sleep, 30), ParseTimeout),
            ((os._exit, 3), WorkerLost),
            ((bytearray, 4 * 1024 * 1024 * 1024), MemoryError),
        ):
            bad = asyncio.ensure_future(single.run(*killer))  # type: ignore[arg-type]
            behind = [asyncio.ensure_future(single.run(math.factorial, n)) for n in (5, 6)]
            with pytest.raises(error):
                await bad
            assert await asyncio.gather(*behind) == [120, 720]
        assert single.replaced == 3


async def test_a_worker_out_of_memory_keeps_its_socket_open_until_the_pool_closes_it() -> None:
    """The pool may have sent jobs ahead of a MemoryError's answer: a worker that exited at
    once would meet them with a broken pipe, and the pool (its write failing first) would
    lose the answer and report the job as a lost worker."""
    from multiprocessing.connection import Connection

    from courtier.pipeline.workers.worker import worker_main

    ours, theirs = socket.socketpair()
    child = Connection(theirs.detach())
    process = multiprocessing.get_context("spawn").Process(
        target=worker_main, args=(child, None, None), daemon=True
    )
    process.start()
    child.close()
    pool_end = Connection(ours.detach())
    try:
        assert pool_end.recv()[0] == "ready"
        job = pickle.dumps((out_of_memory, (), {}))
        pool_end.send_bytes(job)
        status, error, _remote = pool_end.recv()
        assert (status, type(error)) == ("error", MemoryError)
        process.join(0.5)
        assert process.is_alive()  # still there for the jobs sent ahead
        pool_end.send_bytes(pickle.dumps((math.factorial, (5,), {})))  # never run
        assert not pool_end.poll(0.2)
    finally:
        pool_end.close()
    process.join(5)
    assert process.exitcode == 0  # the closed socket ended it


async def test_large_jobs_never_take_the_last_worker_from_small_ones() -> None:
    """Big pages queued first still leave one worker to the small pages behind them."""
    async with ParsePool(2, timeout=5.0, warm_up=None) as two:
        await two.ready()
        # Each worker imports pool_jobs for its first job (up to a second on a loaded
        # machine): one job each, before the clock starts (an idle worker takes the next).
        await asyncio.gather(*(two.run(sleep_on, b"", 0.2) for _ in range(2)))
        big = b"x" * (LARGE_BYTES + 1)
        started = time.monotonic()
        large = [asyncio.ensure_future(two.run(sleep_on, big, 1.0)) for _ in range(3)]
        await asyncio.sleep(0.05)
        small = await asyncio.gather(*(two.run(sleep_on, b"page", 0.01) for _ in range(5)))
        small_done = time.monotonic() - started
        assert small == [4] * 5
        assert await asyncio.gather(*large) == [len(big)] * 3
        large_done = time.monotonic() - started
    assert small_done < 0.9  # not behind the large ones (1 s each)
    assert large_done >= 3.0  # one at a time: the other worker was kept for the small ones


async def test_exceptions_in_the_worker_are_raised_with_its_traceback(pool: ParsePool) -> None:
    await pool.ready()
    with pytest.raises(ValueError, match="negative") as raised:
        await pool.run(math.factorial, -1)
    assert isinstance(raised.value.__cause__, RemoteTraceback)
    assert "factorial" in str(raised.value.__cause__)
    assert await pool.run(math.factorial, 3) == 6


async def test_a_job_that_cannot_be_pickled_fails_in_the_caller(pool: ParsePool) -> None:
    await pool.ready()
    with pytest.raises(Exception, match=r"pickle|lambda"):
        await pool.run(len, lambda: 0)  # type: ignore[arg-type]
    assert await pool.run(math.factorial, 4) == 24


async def test_a_worker_that_dies_is_reported_and_replaced(pool: ParsePool) -> None:
    await pool.ready()
    with pytest.raises(WorkerLost):
        await pool.run(os._exit, 3)
    assert await pool.run(math.factorial, 4) == 24


async def test_the_memory_budget_turns_a_runaway_job_into_memory_error(pool: ParsePool) -> None:
    await pool.ready()
    replaced = pool.replaced
    with pytest.raises(MemoryError):
        await pool.run(bytearray, 4 * 1024 * 1024 * 1024)
    assert pool.replaced == replaced + 1
    assert len(await pool.run(bytearray, 1024 * 1024)) == 1024 * 1024


async def test_a_cancelled_job_that_has_not_started_is_skipped() -> None:
    async with ParsePool(1, timeout=5, warm_up=None) as single:
        await single.ready()
        busy = asyncio.ensure_future(single.run(time.sleep, 0.3))
        await asyncio.sleep(0.05)
        queued = asyncio.ensure_future(single.run(time.sleep, 3))
        await asyncio.sleep(0.05)
        queued.cancel()
        started = time.monotonic()
        await busy
        assert await single.run(math.factorial, 3) == 6
        assert time.monotonic() - started < 1.0  # the cancelled 3 s job never ran


async def test_close_returns_promptly_with_a_stuck_job() -> None:
    closing = ParsePool(2, timeout=60, warm_up=None)
    await closing.ready()
    stuck = asyncio.ensure_future(closing.run(time.sleep, 60))
    queued = [asyncio.ensure_future(closing.run(time.sleep, 60)) for _ in range(3)]
    await asyncio.sleep(0.1)
    started = time.monotonic()
    await closing.close()
    assert time.monotonic() - started < 1.0
    for job in (stuck, *queued):
        with pytest.raises(PoolClosed):
            await job
    with pytest.raises(PoolClosed):
        await closing.run(math.factorial, 3)
    await closing.close()  # twice is fine


async def test_close_during_warm_up_does_not_hang() -> None:
    starting = ParsePool(2, timeout=1)  # the default warm-up imports the parser
    started = time.monotonic()
    await starting.close()
    await starting.ready()  # returns: the pool is closed
    assert time.monotonic() - started < 2.0


async def test_arguments_are_checked() -> None:
    with pytest.raises(ValueError):
        ParsePool(0, timeout=1)
    with pytest.raises(ValueError):
        ParsePool(1, timeout=0)
    # The event loop drives the workers: a pool made where no loop runs would never start.
    with pytest.raises(RuntimeError, match="running event loop"):
        await asyncio.to_thread(ParsePool, 1, timeout=1)


async def test_workers_run_at_the_niceness_asked_above_the_crawl() -> None:
    """The event loop comes first on busy cores: workers yield the CPU by ``nice``."""
    ours = os.nice(0)
    async with ParsePool(1, timeout=5, warm_up=None, nice=7) as nice:
        assert await nice.run(os.nice, 0) == min(19, ours + 7)
    async with ParsePool(1, timeout=5, warm_up=None) as plain:
        assert await plain.run(os.nice, 0) == ours


async def test_waiting_counts_the_jobs_no_worker_has_taken_yet() -> None:
    async with ParsePool(1, timeout=2.0, warm_up=None) as single:
        await single.ready()
        assert single.waiting == 0
        # The first runs 0.4 s; the ones behind it need not (0.4 s each made this test 4 s).
        jobs = [asyncio.ensure_future(single.run(time.sleep, 0.4))]
        jobs += [asyncio.ensure_future(single.run(time.sleep, 0.01)) for _ in range(PIPELINE + 1)]
        # One running and PIPELINE - 1 sent behind it: two wait until the first is done.
        seen = []
        for _ in range(70):  # up to 0.35 s, inside the first job's 0.4 s
            seen.append(single.waiting)
            if seen[-1] == 2:
                break
            await asyncio.sleep(0.005)
        assert seen[-1] == 2, seen
        await asyncio.gather(*jobs)
        assert single.waiting == 0


async def test_big_arguments_and_answers_cross_whole(pool: ParsePool) -> None:
    """Megabytes each way: the parent writes without blocking the loop and reads an answer
    that arrives over many reads, jobs on both sides of it intact."""
    await pool.ready()
    big = os.urandom(6 * 1024 * 1024)
    small = [asyncio.ensure_future(pool.run(math.factorial, n)) for n in range(6)]
    echoed = asyncio.ensure_future(pool.run(bytes, big))
    grown = asyncio.ensure_future(pool.run(bytes, 5_000_000))
    assert await echoed == big
    assert await grown == bytes(5_000_000)
    assert await asyncio.gather(*small) == [math.factorial(n) for n in range(6)]


async def test_a_worker_killed_while_idle_is_replaced(pool: ParsePool) -> None:
    await pool.ready()
    # Builtin jobs only: a job of this module's own would import it in the worker, inside
    # its 0.5 s budget (over it, under load, in a worker replaced by an earlier test).
    pids = await _serving_pids(pool)
    assert len(pids) == 2
    replaced = pool.replaced
    victim = pids.pop()
    os.kill(victim, signal.SIGKILL)
    for _ in range(200):  # its end of the socket closes: noticed by the loop at once
        if pool.replaced > replaced:
            break
        await asyncio.sleep(0.01)
    assert pool.replaced == replaced + 1
    later = await _serving_pids(pool)  # once the successor has warmed up (a second or more)
    assert victim not in later and len(later) == 2


async def test_spawning_is_under_way_before_the_workers_are_warm_and_a_close_ends_the_wait() -> (
    None
):
    # The engine waits for this before the collector's start pause: the spawns then run on
    # their threads while the loop is held, not after it.
    async with ParsePool(2, timeout=5) as fresh:
        await asyncio.wait_for(fresh.spawning(), 10.0)
        assert len(fresh._spawning) == 2
        await fresh.ready()
    closed = ParsePool(1, timeout=5)
    await closed.close()  # before its start got anywhere
    await asyncio.wait_for(closed.spawning(), 1.0)
