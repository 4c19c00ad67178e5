"""A pool of parse worker processes with a time budget per job.

``ProcessPoolExecutor`` cannot stop a job: one hostile page that takes a minute holds its worker
for that minute, and every other site's pages queue behind it. ``ParsePool`` runs each job in
a worker process of its own and gives it ``timeout`` seconds, counted from the moment a worker
takes the job (waiting in the queue does not count). A job that overruns gets its worker
killed (SIGKILL) and replaced, and resolves to ``ParseTimeout``; the caller records the page
as a parse timeout and the crawl goes on.

- Workers are started at construction (spawned, not forked: the crawler has threads), and each
  runs ``warm_up`` (by default a parse of a tiny page: every import done) before it takes a
  job. ``await pool.ready()`` waits for that.
- Jobs start in submission order (FIFO) as workers free up, small jobs before large ones,
  and large ones (``LARGE_BYTES``) on all workers but one at most. ``fn`` must be picklable (a
  top-level function or a builtin), so must its arguments and its result.
- An exception raised by ``fn`` is raised by ``run`` (with the worker's traceback as its
  ``__cause__``). A worker that dies during a job (a crash, the kernel's out-of-memory killer)
  resolves the job to ``WorkerLost`` and is replaced.
- ``nice``: added to each worker's niceness (Linux and other POSIX systems), so that on
  busy cores the parent's event loop runs first and parsing takes what is left.
- ``max_memory_bytes``: how much a job may grow its worker's address space (``RLIMIT_AS``,
  set after the warm-up; Linux and other POSIX systems). A job that needs more gets
  ``MemoryError`` (raised by ``run``) and its worker is replaced, not left fragmented.
- ``close()`` (or ``shutdown()``, synchronous) returns promptly: busy workers are killed, jobs
  still queued or running resolve to ``PoolClosed``.

In the parent, one thread per worker keeps up to ``PIPELINE`` jobs sent ahead, waits for the
oldest one's answer with the budget as the timeout (counted from when the worker could take
it up), and replaces the worker when needed; jobs sent behind one that ended its worker go
to the next worker. The event loop only awaits futures.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any, ParamSpec, TypeVar

from courtier.pipeline.parse_jobs import Job, JobQueue
from courtier.pipeline.parse_worker import worker_main

P = ParamSpec("P")
T = TypeVar("T")

log = logging.getLogger("courtier.pipeline.parse_pool")

PIPELINE = 8
"""Jobs a worker may hold: the next ones are sent before it answers the last, so it takes
one up at once, not after the parent's thread got the GIL back to read the answer and send
more (under a busy event loop each of those waits can take the 5 ms switch interval, longer
than a small page's parse). Measured at 2,000 sites (docs/benchmarks.md, session 9): with 2
the workers waited for their next job 28% of the time while ~500 jobs were queued and 8-9%
of the machine's CPU was idle; with 8 they waited 11%, idle 2-3%, 508-523 requests/s
against 424-501 in interleaved pairs. The prices: with no CPU left idle the event loop
waits for a core more often (loop lag p99 and missed slots rose against the session's
start; ``crawl.parse_nice`` trades that back), and jobs sent behind one that overruns its
budget wait for it (then go to the next worker), so a hostile page delays up to
``PIPELINE - 1`` pages by at most the budget; none is lost."""
_STARTUP_TIMEOUT = 120.0
"""Seconds a new worker may take to start and warm up (imports on a loaded machine)."""


class ParseTimeout(Exception):
    """The job overran the pool's time budget; its worker was killed and replaced."""


class WorkerLost(Exception):
    """The worker process died during the job (a crash, or killed from outside)."""


class PoolClosed(RuntimeError):
    """The pool was closed before the job finished (or before it was submitted)."""


class RemoteTraceback(Exception):
    """The traceback of an exception raised in a worker, as text (the ``__cause__``)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def warm_up_parse() -> None:
    """The default warm-up: import the reader (decoding, redaction, parser), read a page."""
    from courtier.pipeline.reading import ReadContext, read_page

    read_page(b"<title>warm-up</title><a href='/'>x</a>", "http://w.invalid/", ReadContext())


@dataclass(eq=False)
class _Worker:
    process: BaseProcess
    conn: Connection

    def kill(self) -> None:
        """SIGKILL; the pipe's other end closes with the process, which wakes a thread that
        waits on it. (The pipe itself is closed by the thread that uses it, in ``reap``.)"""
        with contextlib.suppress(Exception):
            self.process.kill()

    def reap(self) -> None:
        self.kill()
        with contextlib.suppress(Exception):
            self.conn.close()
        with contextlib.suppress(Exception):
            self.process.join(5)


@dataclass(eq=False)
class _Slot:
    """One worker position: its thread, the worker it currently runs, the jobs sent to it
    (oldest first) and jobs to send again (their worker went before it took them up)."""

    index: int
    worker: _Worker | None = None
    thread: threading.Thread | None = None
    sent: deque[Job[Any]] = field(default_factory=deque)
    again: deque[Job[Any]] = field(default_factory=deque)
    head_since: float = 0.0
    """When the worker could take up the oldest job sent (``time.monotonic``)."""


class ParsePool:
    """Worker processes for parse jobs, each job with a time budget (see the module docs)."""

    def __init__(
        self,
        workers: int | None = None,
        *,
        timeout: float,
        max_memory_bytes: int | None = None,
        warm_up: Callable[[], object] | None = warm_up_parse,
        nice: int = 0,
    ) -> None:
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        count = workers if workers is not None else (os.cpu_count() or 1)
        if count < 1:
            raise ValueError("a pool needs at least one worker")
        self.timeout = timeout
        self.max_memory_bytes = max_memory_bytes
        self.nice = nice
        self._warm_up = warm_up
        self._context = multiprocessing.get_context("spawn")
        self._jobs = JobQueue(count)
        self._lock = threading.Lock()
        self._closed = False
        self._warm = 0
        self._all_warm = threading.Event()
        self.timeouts = 0
        """Jobs that overran the budget (each killed and replaced a worker)."""
        self.replaced = 0
        """Workers replaced (after a timeout, a crash or a MemoryError)."""
        self._slots = [_Slot(index) for index in range(count)]
        for slot in self._slots:
            slot.thread = threading.Thread(
                target=self._serve, args=(slot,), name=f"courtier-parse-{slot.index}", daemon=True
            )
            slot.thread.start()

    @property
    def workers(self) -> int:
        return len(self._slots)

    @property
    def waiting(self) -> int:
        """Jobs queued for a worker, not sent to one yet. A crawl whose places in flight
        are mostly here is bound by parsing (docs/benchmarks.md, session 8)."""
        return len(self._jobs)

    async def ready(self) -> None:
        """Wait until every worker has started and warmed up once (or the pool closed)."""
        await asyncio.to_thread(self._all_warm.wait)

    async def run(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """``fn(*args, **kwargs)`` in a worker, within the time budget.

        Raises ``ParseTimeout``, ``WorkerLost``, ``PoolClosed``, or what ``fn`` raised."""
        if self._closed:
            raise PoolClosed("the parse pool is closed")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        job = Job(fn, args, kwargs, future, loop)
        self._jobs.put(job)
        if self._closed:  # closed while we queued: the drain may have missed this job
            job.future.cancel()
            raise PoolClosed("the parse pool is closed")
        return await job.future

    async def close(self) -> None:
        """Stop every worker now (busy ones are killed) and fail what is left."""
        self.shutdown(wait=False)
        await asyncio.to_thread(self._join_threads)

    def shutdown(self, wait: bool = True) -> None:
        """``close`` for synchronous callers; ``wait`` joins the pool's threads."""
        with self._lock:
            already, self._closed = self._closed, True
            workers = [slot.worker for slot in self._slots if slot.worker is not None]
        if not already:
            for worker in workers:
                worker.kill()  # a blocked thread wakes up on the closed pipe
            for job in self._jobs.close():
                job.resolve(error=PoolClosed("the parse pool was closed"))
            self._all_warm.set()
        if wait:
            self._join_threads()

    async def __aenter__(self) -> ParsePool:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def _join_threads(self) -> None:
        for slot in self._slots:
            if slot.thread is not None and slot.thread is not threading.current_thread():
                slot.thread.join()
            if slot.worker is not None:
                slot.worker.reap()

    # -- the slot threads ---------------------------------------------------------------

    def _serve(self, slot: _Slot) -> None:
        first = True
        try:
            while not self._closed:
                if slot.worker is None:
                    if self._start_worker(slot) is None:  # closed while starting
                        return
                    if first:
                        first = False
                        with self._lock:
                            self._warm += 1
                            if self._warm == len(self._slots):
                                self._all_warm.set()
                if not self._fill(slot):
                    return
                if slot.sent:
                    self._settle_head(slot)
        finally:
            for job in (*slot.sent, *slot.again):
                self._settle(job, None, PoolClosed("the parse pool was closed"))
            slot.sent.clear()
            slot.again.clear()
            with self._lock:
                worker, slot.worker = slot.worker, None
            if worker is not None:
                worker.reap()

    def _fill(self, slot: _Slot) -> bool:
        """Send jobs until ``PIPELINE`` wait in the worker's pipe (blocking only while the
        worker has none). False: the pool is closing."""
        worker = slot.worker
        assert worker is not None
        while len(slot.sent) < PIPELINE:
            if slot.again:
                job: Job[Any] | None = slot.again.popleft()
            elif not slot.sent:
                job = self._jobs.take(block=True)
                if job is None:
                    return False
            else:
                if self._jobs.idle or slot.sent[-1].large:
                    return True
                job = self._jobs.take(block=False)
                if job is None:
                    return not self._jobs.closed
            assert job is not None
            if job.future.done():  # cancelled while queued
                self._jobs.release(job)
                continue
            try:
                worker.conn.send((job.fn, job.args, job.kwargs))
            except (OSError, ValueError):  # the worker is gone (or the pool closed under us)
                slot.again.appendleft(job)
                if not slot.sent:  # else the oldest job sent learns it (and settles) first
                    self._replace(slot, worker, timed_out=False)
                return not self._closed
            except Exception as exc:  # the job could not be pickled: nothing was sent
                self._settle(job, None, exc)
                continue
            if not slot.sent:
                slot.head_since = time.monotonic()
            slot.sent.append(job)
        return True

    def _settle_head(self, slot: _Slot) -> None:
        """Wait for the answer to the oldest job sent, within its budget (counted from when
        the worker could take it up); replace the worker if it has to go. Jobs sent behind
        a job that ended its worker never started: they go to the next worker. A job is
        settled last, so whoever awaits it sees the pool's counters already updated."""
        worker = slot.worker
        assert worker is not None
        job = slot.sent[0]
        result: Any = None
        error: BaseException | None = None
        replace = timed_out = False
        try:
            left = slot.head_since + self.timeout - time.monotonic()
            if not worker.conn.poll(max(0.0, left)):
                error = self._closed_error() or ParseTimeout(
                    f"parse job overran its {self.timeout:g} s budget"
                )
                replace = timed_out = True
            else:
                status, value, remote = worker.conn.recv()
                if status == "ok":
                    result = value
                else:
                    value.__cause__ = RemoteTraceback(remote)
                    error = value
                    replace = isinstance(value, MemoryError)  # the worker exits
        except (EOFError, OSError):
            error = self._lost_error("the parse worker died during the job")
            replace = True
        slot.sent.popleft()
        slot.head_since = time.monotonic()
        if replace:
            slot.again.extendleft(reversed(slot.sent))
            slot.sent.clear()
            self._replace(slot, worker, timed_out=timed_out)
        self._settle(job, result, error)

    def _settle(self, job: Job[Any], result: Any, error: BaseException | None) -> None:
        self._jobs.release(job)
        job.resolve(result, error)

    def _replace(self, slot: _Slot, worker: _Worker, *, timed_out: bool) -> None:
        with self._lock:
            slot.worker = None
            if not self._closed:
                self.replaced += 1
                self.timeouts += timed_out
        worker.reap()

    def _start_worker(self, slot: _Slot) -> _Worker | None:
        """A new, warmed-up worker in ``slot`` (retrying after failures), or None if closed."""
        delay = 0.1
        while True:
            parent, child = self._context.Pipe()
            process = self._context.Process(
                target=worker_main,
                args=(child, self._warm_up, self.max_memory_bytes, self.nice),
                name=f"courtier-parse-{slot.index}",
                daemon=True,
            )
            worker = _Worker(process, parent)
            why = f"no answer in {_STARTUP_TIMEOUT:g} s"
            with self._lock:
                if self._closed:
                    return None
                try:
                    process.start()
                except Exception as exc:  # e.g. spawning from a module being imported
                    why = f"{type(exc).__name__}: {exc}"
                else:
                    slot.worker = worker
            child.close()
            try:
                if process.pid is not None and parent.poll(_STARTUP_TIMEOUT):
                    status, detail = parent.recv()
                    if status == "ready":
                        return worker
                    why = detail
            except (EOFError, OSError):
                why = "it exited"
            with self._lock:
                slot.worker = None
                closed = self._closed
            worker.reap()
            if closed:
                return None
            log.error("parse worker %d failed to start: %s", slot.index, why)
            threading.Event().wait(delay)
            delay = min(delay * 2, 5.0)

    def _closed_error(self) -> PoolClosed | None:
        return PoolClosed("the parse pool was closed") if self._closed else None

    def _lost_error(self, message: str) -> Exception:
        return self._closed_error() or WorkerLost(message)
