"""The parse pool's jobs and the queue they wait in (``courtier.pipeline.workers.pool``).

Small jobs go first; large ones (``LARGE_BYTES``) run on all workers but one at most. Each
kind keeps its submission order. Only the pool's event loop touches the queue: no lock.
``parse_guarded`` runs a reader on a fetched body and turns the pool's failures into a
reason (the page is kept unparsed).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from courtier.net.fetch import FetchResult
from courtier.net.spool import SpooledBody
from courtier.pipeline.stats import CrawlStats

log = logging.getLogger(__name__)
T = TypeVar("T")

LARGE_BYTES = 256 * 1024
"""A job with more bytes than this is large (a big page takes a worker for a second or
more). Large jobs run on all workers but one at most: one worker is always left to the
small ones, so hosts of ordinary pages keep their pace beside hosts of 8 MiB pages. A job is
sent ahead only behind a small one, and only while no worker is idle."""


def is_large(args: Iterable[object]) -> bool:
    """Whether a job's bytes, text and spooled-body arguments pass ``LARGE_BYTES``."""
    size = 0
    for arg in args:
        if isinstance(arg, bytes | str):
            size += len(arg)
        elif isinstance(arg, SpooledBody):
            size += arg.size
    return size > LARGE_BYTES


@dataclass(eq=False, slots=True)
class Job:
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    future: asyncio.Future[Any]
    large: bool = False
    """A big page: slow to parse (``is_large``)."""
    counted: bool = False
    """Taken as a large job: it holds one of the places large jobs may take."""

    def resolve(self, result: Any = None, error: BaseException | None = None) -> None:
        """Settle the future (a no-op if it was cancelled meanwhile)."""
        if self.future.done():
            return
        if error is not None:
            self.future.set_exception(error)
        else:
            self.future.set_result(result)


class JobQueue:
    """Jobs waiting for a worker: small ones first; each kind in submission order."""

    def __init__(self, workers: int) -> None:
        self._small: deque[Job] = deque()
        self._large: deque[Job] = deque()
        self._large_places = max(1, workers - 1)
        self._large_running = 0

    def __len__(self) -> int:
        return len(self._small) + len(self._large)

    def put(self, job: Job) -> None:
        (self._large if job.large else self._small).append(job)

    def take(self) -> Job | None:
        """The next job a worker may take, or None (none waits, or every place large jobs
        may take is taken)."""
        if self._small:
            return self._small.popleft()
        if self._large and self._large_running < self._large_places:
            job = self._large.popleft()
            job.counted = True
            self._large_running += 1
            return job
        return None

    def release(self, job: Job) -> None:
        """A job taken as large is settled (or back in line): its place is free again."""
        if job.counted:
            job.counted = False
            self._large_running -= 1

    def requeue(self, jobs: Iterable[Job]) -> None:
        """Jobs a worker was sent but never started (it went first): back at the head of
        the line, in their order."""
        for job in reversed(list(jobs)):
            self.release(job)
            (self._large if job.large else self._small).appendleft(job)

    def close(self) -> list[Job]:
        """Empty the queue: the jobs no worker took."""
        left = [*self._small, *self._large]
        self._small.clear()
        self._large.clear()
        return left


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


async def parse_guarded(
    parse: Callable[..., Awaitable[Any]],
    stats: CrawlStats,
    fn: Callable[..., T],
    result: FetchResult,
    *more: Any,
) -> tuple[T | None, str | None]:
    """``fn`` on the body in a parse worker; (None, why) when the parse overran its
    budget, killed its worker or raised: the page is kept as fetched, unparsed."""
    try:
        return await parse(fn, result.content, result.url, *more), None
    except (ParseTimeout, WorkerLost, MemoryError) as exc:
        reason = {ParseTimeout: "parse-timeout", WorkerLost: "parse-crash"}.get(
            type(exc), "parse-memory"
        )
        stats.parse_failures[reason] += 1
        log.warning("%s: %s", reason, result.url)
        return None, reason
    except PoolClosed:
        raise
    except Exception:  # the reader's bug or an input it cannot take: not the crawl's end
        stats.parse_failures["parse-error"] += 1
        log.exception("parse-error: %s", result.url)
        return None, "parse-error"
