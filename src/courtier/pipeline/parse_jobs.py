"""The parse pool's jobs and the queue they wait in (``courtier.pipeline.parse_pool``).

Small jobs go first; large ones (``LARGE_BYTES``) run on all workers but one at most. Each
kind keeps its submission order. The queue is shared by the pool's threads (one per
worker), so it is guarded by one condition.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from courtier.net.spool import SpooledBody

T = TypeVar("T")

LARGE_BYTES = 256 * 1024
"""A job with more bytes than this is large (a big page takes a worker for a second or
more). Large jobs run on all workers but one at most: one worker is always left to the
small ones, so hosts of ordinary pages keep their pace beside hosts of 8 MiB pages. A job is
sent ahead only behind a small one, and only while no worker is idle."""


@dataclass(eq=False)
class Job(Generic[T]):
    fn: Callable[..., T]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    future: asyncio.Future[T]
    loop: asyncio.AbstractEventLoop

    large: bool = False
    """Its bytes and text arguments pass ``LARGE_BYTES`` (a big page: slow to parse)."""
    counted: bool = False
    """Taken as a large job: it holds one of the places large jobs may take."""

    def __post_init__(self) -> None:
        size = sum(
            len(a) if isinstance(a, bytes | str) else a.size
            for a in self.args
            if isinstance(a, bytes | str | SpooledBody)
        )
        self.large = size > LARGE_BYTES

    def resolve(self, result: Any = None, error: BaseException | None = None) -> None:
        """Settle the future from any thread (a no-op if it was cancelled meanwhile)."""

        def settle() -> None:
            if self.future.done():
                return
            if error is not None:
                self.future.set_exception(error)
            else:
                self.future.set_result(result)

        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting
            self.loop.call_soon_threadsafe(settle)


class JobQueue:
    """Jobs waiting for a worker: small ones first; each kind in submission order."""

    def __init__(self, workers: int) -> None:
        self._cond = threading.Condition()
        self._small: deque[Job[Any]] = deque()
        self._large: deque[Job[Any]] = deque()
        self._large_places = max(1, workers - 1)
        self._large_running = 0
        self.idle = 0
        """Slot threads waiting for a job (their worker has none)."""
        self.closed = False

    def __len__(self) -> int:
        """Jobs waiting for a worker (a snapshot: other threads take them as it is read)."""
        return len(self._small) + len(self._large)

    def put(self, job: Job[Any]) -> None:
        with self._cond:
            (self._large if job.large else self._small).append(job)
            self._cond.notify()

    def take(self, *, block: bool) -> Job[Any] | None:
        """The next job a worker may take (blocking while there is none if ``block``); None
        when there is none or the pool is closing (``closed``)."""
        with self._cond:
            while not self.closed:
                if self._small:
                    return self._small.popleft()
                if self._large and self._large_running < self._large_places:
                    job = self._large.popleft()
                    job.counted = True
                    self._large_running += 1
                    return job
                if not block:
                    return None
                self.idle += 1
                try:
                    self._cond.wait()
                finally:
                    self.idle -= 1
            return None

    def release(self, job: Job[Any]) -> None:
        """A job taken as large is settled: its place goes to the next large one."""
        if job.counted:
            job.counted = False
            with self._cond:
                self._large_running -= 1
                self._cond.notify_all()

    def close(self) -> list[Job[Any]]:
        """Wake every waiting thread; the jobs no worker took."""
        with self._cond:
            self.closed = True
            left = [*self._small, *self._large]
            self._small.clear()
            self._large.clear()
            self._cond.notify_all()
        return left
