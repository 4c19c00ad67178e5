"""A pool of parse worker processes with a time budget per job.

``ProcessPoolExecutor`` cannot stop a job: one hostile page that takes a minute holds its worker
for that minute, and every other site's pages queue behind it. ``ParsePool`` runs each job in
a worker process of its own and gives it ``timeout`` seconds, counted from the moment a worker
takes the job (waiting in the queue does not count). A job that overruns gets its worker
killed (SIGKILL) and replaced, and resolves to ``ParseTimeout``; the caller records the page
as a parse timeout and the crawl goes on.

- The pool belongs to the event loop it is created in (create it inside a running loop).
  Workers are started at construction (spawned, not forked: the crawler has threads), and
  each runs ``warm_up`` (by default a parse of a tiny page: every import done) before it
  takes a job. ``await pool.ready()`` waits for that.
- Jobs start in submission order (FIFO) as workers free up, small jobs before large ones,
  and large ones (``LARGE_BYTES``) on all workers but one at most. ``fn`` must be picklable (a
  top-level function or a builtin), so must its arguments and its result (a job that cannot
  be pickled raises the pickling error from ``run``).
- An exception raised by ``fn`` is raised by ``run`` (with the worker's traceback as its
  ``__cause__``). A worker that dies during a job (a crash, the kernel's out-of-memory killer)
  resolves the job to ``WorkerLost`` and is replaced.
- ``nice``: added to each worker's niceness (Linux and other POSIX systems), so that on
  busy cores the parent's event loop runs first and parsing takes what is left.
- ``max_memory_bytes``: how much a job may grow its worker's address space (``RLIMIT_AS``,
  set after the warm-up; Linux and other POSIX systems). A job that needs more gets
  ``MemoryError`` (raised by ``run``) and its worker is replaced, not left fragmented.
- ``close()`` returns promptly: busy workers are killed, jobs still queued or running
  resolve to ``PoolClosed``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import pickle
import socket
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any, ParamSpec, TypeVar

from courtier.pipeline.workers.channel import WorkerChannel
from courtier.pipeline.workers.jobs import (
    Job,
    JobQueue,
    ParseTimeout,
    PoolClosed,
    RemoteTraceback,
    WorkerLost,
    is_large,
)
from courtier.pipeline.workers.worker import warm_up_parse, worker_main

P = ParamSpec("P")
T = TypeVar("T")

log = logging.getLogger(__name__)

PIPELINE = 8
"""Jobs a worker may hold: the next is sent before it answers the last, so it takes one up
at once. At 2,000 sites (`python bench/bench_rebook.py --sites 2000 --page-bytes 6000
--duration 40`) workers holding 2 waited for a job 28% of the time with ~500 queued; holding
8, 11%, for 508-523 requests/s against 424-501. The price: jobs sent behind one that overruns
its budget wait for it (then go to another worker), so a hostile page delays up to
``PIPELINE - 1`` pages by at most the budget; none is lost."""
_STARTUP_TIMEOUT = 120.0
"""Seconds a new worker may take to start and warm up (imports on a loaded machine)."""
_RETRY_LONGEST = 5.0
"""The longest wait between two attempts to start a worker that keeps failing."""


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
        try:
            self.loop = asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError("a ParsePool is created inside a running event loop") from None
        self.timeout = timeout
        self.max_memory_bytes = max_memory_bytes
        self.nice = nice
        self._warm_up = warm_up
        self._context = multiprocessing.get_context("spawn")
        self._count = count
        self._jobs = JobQueue(count)
        self._closed = False
        self._workers: dict[int, WorkerChannel] = {}
        """Each position's current worker, started or starting."""
        self._serving: list[WorkerChannel] = []
        """The workers warmed up and taking jobs."""
        self._warmed: set[int] = set()
        self._all_warm = asyncio.Event()
        self._spawning: set[int] = set()
        self._all_spawning = asyncio.Event()
        self._closing = asyncio.Event()
        self._dispatch_due = False
        self._starts: set[asyncio.Task[None]] = set()
        self._reaping: set[asyncio.Future[None]] = set()
        self.timeouts = 0
        """Jobs that overran the budget (each killed and replaced a worker)."""
        self.replaced = 0
        """Workers replaced (after a timeout, a crash or a MemoryError)."""
        for index in range(count):
            self._start(index)

    @property
    def workers(self) -> int:
        return self._count

    @property
    def waiting(self) -> int:
        """Jobs queued for a worker, not sent to one yet (a crawl whose places in flight are
        mostly here is bound by parsing: ``parse_queue`` in its stats)."""
        return len(self._jobs)

    async def spawning(self) -> None:
        """Wait until every first worker's start is under way on a thread (a few turns of
        the loop): a pause of the loop from then on does not hold their start up."""
        await self._all_spawning.wait()

    async def ready(self) -> None:
        """Wait until every worker has started and warmed up once (or the pool closed)."""
        await self._all_warm.wait()

    async def run(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """``fn(*args, **kwargs)`` in a worker, within the time budget.

        Raises ``ParseTimeout``, ``WorkerLost``, ``PoolClosed``, or what ``fn`` raised."""
        if self._closed:
            raise PoolClosed("the parse pool is closed")
        future: asyncio.Future[T] = self.loop.create_future()
        self._jobs.put(Job(fn, args, kwargs, future, is_large(args)))
        self._dispatch_soon()
        return await future

    async def close(self) -> None:
        """Stop every worker now (busy ones are killed) and fail what is left."""
        if not self._closed:
            self._closed = True
            closed = PoolClosed("the parse pool was closed")
            left = self._jobs.close()
            for worker in list(self._workers.values()):
                left += worker.retire()
                if not worker.started.done():
                    worker.started.set_result("the pool closed")
            self._serving.clear()
            self._closing.set()
            for job in left:
                job.resolve(error=closed)
            self._all_warm.set()
            self._all_spawning.set()
        # A start in progress ends at once now (it kills what it started); then every
        # process is reaped.
        await asyncio.gather(*self._starts, *self._reaping, return_exceptions=True)
        workers = list(self._workers.values())
        self._workers.clear()
        for worker in workers:
            await asyncio.to_thread(worker.reap)

    async def __aenter__(self) -> ParsePool:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- sending jobs -------------------------------------------------------------------

    def _dispatch_soon(self) -> None:
        """Dispatch once this turn of the loop is over: the jobs and answers of one turn are
        sent out together."""
        if not self._dispatch_due:
            self._dispatch_due = True
            self.loop.call_soon(self._dispatch)

    def _dispatch(self) -> None:
        self._dispatch_due = False
        try:
            self._fill()
        finally:
            for worker in self._serving:
                worker.open = False

    def _fill(self) -> None:
        """Give idle workers a job each; then, while none is idle, send jobs ahead to the
        least loaded open worker (never behind a large job, never more than ``PIPELINE``).

        A worker is open to jobs sent ahead only when it was idle or has answered since the
        last dispatch: a job queued while every worker is busy waits in the queue (where a
        caller may still cancel it) until a worker answers."""
        jobs = self._jobs
        serving = self._serving
        for worker in serving:
            if jobs and not worker.sent:
                taken = self._take()
                if taken is None:
                    return  # only large jobs wait, and no place is free for them
                worker.send(*taken)
                worker.open = True
        while jobs:
            target: WorkerChannel | None = None
            for worker in serving:
                load = len(worker.sent)
                if (
                    worker.open
                    and load < PIPELINE
                    and not worker.sent[-1].large
                    and (target is None or load < len(target.sent))
                ):
                    target = worker
            if target is None:
                return
            taken = self._take()
            if taken is None:
                return
            target.send(*taken)

    def _take(self) -> tuple[Job, bytes] | None:
        """The next job whose caller still waits (a cancelled one is skipped), pickled. A
        job is pickled as it is sent, not while it waits: a queued page holds its body, not
        a copy of it too. One that cannot be pickled fails in its caller."""
        while (job := self._jobs.take()) is not None:
            if job.future.done():
                self._jobs.release(job)
                continue
            try:
                payload = pickle.dumps((job.fn, job.args, job.kwargs), pickle.HIGHEST_PROTOCOL)
            except Exception as exc:
                self._settle(job, None, exc)
                continue
            return job, payload
        return None

    # -- what the workers say -----------------------------------------------------------

    def _message(self, worker: WorkerChannel, message: memoryview) -> None:
        if not worker.ready:
            worker.hello(message)
            return
        job = worker.sent.popleft()
        worker.head_since = self.loop.time()
        result: Any = None
        error: BaseException | None = None
        try:
            status, value, remote = pickle.loads(message)
        except Exception as exc:  # the result cannot be unpickled here
            error = exc
        else:
            if status == "ok":
                result = value
            else:
                value.__cause__ = RemoteTraceback(remote)
                error = value
                if isinstance(value, MemoryError):  # the worker exits: replace it
                    self._replace(worker, timed_out=False)
        # Settled last, so whoever awaits it sees the pool's counters already updated.
        self._settle(job, result, error)
        worker.open = True
        self._dispatch_soon()

    def _lost(self, worker: WorkerChannel) -> None:
        """The worker's socket closed: it died (or never started)."""
        if not worker.started.done():
            worker.started.set_result("it exited")
            return
        head = worker.sent[0] if worker.sent else None
        if head is not None:
            worker.sent.popleft()
        self._replace(worker, timed_out=False)
        if head is not None:
            error = self._closed_error() or WorkerLost("the parse worker died during the job")
            self._settle(head, None, error)
        self._dispatch_soon()

    def _check_budget(self, worker: WorkerChannel) -> None:
        """The oldest job's budget may be spent (the timer is set once a budget ahead and
        moved on when earlier jobs were answered)."""
        worker.timer = None
        if worker.retired or not worker.sent:
            return
        deadline = worker.head_since + self.timeout
        if self.loop.time() < deadline:
            worker.timer = self.loop.call_at(deadline, self._check_budget, worker)
            return
        job = worker.sent.popleft()
        self._replace(worker, timed_out=True)
        self._settle(job, None, ParseTimeout(f"parse job overran its {self.timeout:g} s budget"))
        self._dispatch_soon()

    def _settle(self, job: Job, result: Any, error: BaseException | None) -> None:
        self._jobs.release(job)
        job.resolve(result, error)

    # -- workers coming and going -------------------------------------------------------

    def _replace(self, worker: WorkerChannel, *, timed_out: bool) -> None:
        """Retire ``worker`` (its unstarted jobs back in line) and start its successor."""
        self._jobs.requeue(worker.retire())
        if worker in self._serving:
            self._serving.remove(worker)
        self._reap_later(worker)
        if self._closed:
            return
        self.replaced += 1
        self.timeouts += timed_out
        self._start(worker.index)

    def _reap_later(self, worker: WorkerChannel) -> None:
        if self._workers.get(worker.index) is worker:
            del self._workers[worker.index]
        reaping = asyncio.ensure_future(asyncio.to_thread(worker.reap))
        self._reaping.add(reaping)
        reaping.add_done_callback(self._reaping.discard)

    def _start(self, index: int) -> None:
        task = self.loop.create_task(self._start_worker(index))
        self._starts.add(task)
        task.add_done_callback(self._starts.discard)

    async def _start_worker(self, index: int) -> None:
        """A new, warmed-up worker at ``index`` (retrying after failures), unless closed."""
        delay = 0.1
        while not self._closed:
            why = await self._try_start(index)
            if why is None or self._closed:
                return
            log.error("parse worker %d failed to start: %s", index, why)
            with contextlib.suppress(TimeoutError):  # closing ends the wait
                await asyncio.wait_for(self._closing.wait(), delay)
            delay = min(delay * 2, _RETRY_LONGEST)

    def _spawned(self, index: int) -> None:
        self._spawning.add(index)
        if len(self._spawning) == self._count:
            self._all_spawning.set()

    async def _try_start(self, index: int) -> str | None:
        """Start a worker at ``index`` and wait for its warm-up: None, or why it failed."""
        ours, theirs = socket.socketpair()
        child = Connection(theirs.detach())
        process = self._context.Process(
            target=worker_main,
            args=(child, self._warm_up, self.max_memory_bytes, self.nice),
            name=f"courtier-parse-{index}",
            daemon=True,
        )
        worker = WorkerChannel(self, index, process)
        self._workers[index] = worker
        why: str | None = None
        try:
            await self.loop.connect_accepted_socket(lambda: worker, ours)
            # Spawning writes the child's preparation data and may wait on it: a thread.
            spawn = self.loop.run_in_executor(None, process.start)
            self._spawned(index)
            await spawn
        except Exception as exc:  # e.g. spawning from a module being imported
            why = f"{type(exc).__name__}: {exc}"
            ours.close()
        finally:
            child.close()
            self._spawned(index)  # or failed to: nobody waits for it in ``spawning``
        if why is None and not self._closed:
            try:
                why = await asyncio.wait_for(worker.started, _STARTUP_TIMEOUT)
            except TimeoutError:
                why = f"no answer in {_STARTUP_TIMEOUT:g} s"
        if worker.retired:  # closed, or died after its warm-up: _lost started another
            return None
        if why is None and not self._closed:
            worker.ready = True
            self._serving.append(worker)
            self._warmed.add(index)
            if len(self._warmed) == self._count:
                self._all_warm.set()
            self._dispatch_soon()
            return None
        worker.retire()
        self._reap_later(worker)
        return why or "the pool closed"

    def _closed_error(self) -> PoolClosed | None:
        return PoolClosed("the parse pool was closed") if self._closed else None
