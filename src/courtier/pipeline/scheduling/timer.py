"""The engine's clock and timers, injectable so scheduling is tested on fake time.

Rules:
- One time base for the whole engine: ``Timer.now()`` (wall-clock seconds in a real crawl).
  Limiter backends book on the same clock, the store records the same times and a saved
  clock floor needs no conversion, so one number means the same moment in every process and
  on every machine that shares a limiter.
- ``call_at(when, callback, *args)`` runs ``callback`` on the event loop at ``when`` (at
  once when ``when`` has passed) and returns a handle whose ``cancel()`` stops it.
- ``FakeTimer`` is the test double: time stands still until a test advances it; due
  callbacks then run in time order, with the event loop given turns in between so tasks they
  start (bookings, fetches on scripted fetchers) run too. No test waits on real time.
- Every time that orders requests, is stored or schedules the engine's own loops (flushes,
  refills, ranking, origin re-checks) is read through the ``Timer``. Read elsewhere: only
  measurements of the machine itself (the event loop's lag, a run's elapsed time, a parse
  job's budget, a shard lease's heartbeat, which other machines judge by their clocks).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol


class Handle(Protocol):
    def cancel(self) -> None: ...


class Timer(Protocol):
    def now(self) -> float:
        """Seconds on the engine's clock."""
        ...

    def call_at(self, when: float, callback: Callable[..., None], *args: Any) -> Handle:
        """Run ``callback(*args)`` at ``when`` on the engine's clock."""
        ...


class _Call:
    __slots__ = ("args", "callback", "cancelled")

    def __init__(self, callback: Callable[..., None], args: tuple[Any, ...]) -> None:
        self.callback = callback
        self.args = args
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class LoopTimer:
    """Wall-clock time; timers on the running asyncio loop (its monotonic clock waits).

    The engine keeps a timer per lane (thousands). They wait in this timer's own heap of
    ``(when, seq, call)`` tuples, and the loop holds one handle, for the earliest: the loop's
    heap stays small, tuples compare in C, and every call due when the handle fires runs in
    that one callback, in time order (ties in the order they were asked for). Nothing runs
    before its time on ``clock``; a call whose callback raises goes to the loop's exception
    handler, as an asyncio handle's would, and the others still run.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, clock: Callable[[], float] = time.time):
        self.loop = loop
        self.clock = clock
        self._heap: list[tuple[float, int, _Call]] = []
        self._seq = itertools.count()
        self._armed: asyncio.TimerHandle | None = None
        self._armed_for = math.inf

    def now(self) -> float:
        return self.clock()

    def call_at(self, when: float, callback: Callable[..., None], *args: Any) -> Handle:
        call = _Call(callback, args)
        heapq.heappush(self._heap, (when, next(self._seq), call))
        if when < self._armed_for:
            self._arm(when)
        return call

    def pending(self) -> int:
        return sum(1 for _when, _seq, call in self._heap if not call.cancelled)

    def _arm(self, when: float) -> None:
        if self._armed is not None:
            self._armed.cancel()
        self._armed_for = when
        self._armed = self.loop.call_later(max(0.0, when - self.clock()), self._fire)

    def _fire(self) -> None:
        heap = self._heap
        now = self.clock()
        due: list[_Call] = []
        while heap and heap[0][0] <= now:
            due.append(heapq.heappop(heap)[2])
        # Calls asked for while these run wait for the handle armed below (never this batch).
        self._armed, self._armed_for = None, -math.inf
        try:
            for call in due:
                if not call.cancelled:
                    self._run(call)
        finally:
            while heap and heap[0][2].cancelled:
                heapq.heappop(heap)
            self._armed_for = math.inf
            if heap:
                self._arm(heap[0][0])

    def _run(self, call: _Call) -> None:
        try:
            call.callback(*call.args)
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:
            self.loop.call_exception_handler(
                {"message": f"timer callback {call.callback!r} failed", "exception": exc}
            )


@dataclass(order=True)
class _Entry:
    when: float
    seq: int
    callback: Callable[..., None] = field(compare=False)
    args: tuple[Any, ...] = field(compare=False)
    cancelled: bool = field(default=False, compare=False)

    def cancel(self) -> None:
        self.cancelled = True


class FakeTimer:
    """Time that moves only when a test says so."""

    def __init__(self, start: float = 1_000_000.0) -> None:
        self._now = start
        self._heap: list[_Entry] = []
        self._seq = itertools.count()
        self._late = 0.0

    def now(self) -> float:
        return self._now

    def call_at(self, when: float, callback: Callable[..., None], *args: Any) -> Handle:
        entry = _Entry(when, next(self._seq), callback, args)
        heapq.heappush(self._heap, entry)
        return entry

    def late(self, seconds: float) -> None:
        """The next callback runs ``seconds`` after its time (a stalled event loop)."""
        self._late = seconds

    def pending(self) -> int:
        return sum(1 for entry in self._heap if not entry.cancelled)

    async def settle(self) -> None:
        """Give the event loop turns until tasks started so far have run as far as they can."""
        for _ in range(20):
            await asyncio.sleep(0)

    async def advance(self, seconds: float, *, step: float | None = None) -> None:
        """Move time forward by ``seconds``, running every callback that falls due on the way
        (each at its own time). ``step`` also stops time at regular points, so tasks that
        await real I/O-free work get turns at a realistic pace."""
        end = self._now + seconds
        await self.settle()
        while True:
            while self._heap and self._heap[0].cancelled:
                heapq.heappop(self._heap)
            next_stop = end if step is None else min(end, self._now + step)
            if self._heap and self._heap[0].when <= next_stop:
                entry = heapq.heappop(self._heap)
                self._now = max(self._now, entry.when + self._late)
                end = max(end, self._now)
                self._late = 0.0
                entry.callback(*entry.args)
                await self.settle()
                continue
            self._now = next_stop
            await self.settle()
            if self._now >= end:
                return


async def sleep_until(timer: Timer, when: float) -> None:
    """Wait on ``timer`` until ``when`` (at once when it has passed)."""
    if when <= timer.now():
        return
    future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def wake() -> None:
        if not future.done():
            future.set_result(None)

    handle = timer.call_at(when, wake)
    try:
        await future
    finally:
        handle.cancel()


async def wait_until(timer: Timer, event: asyncio.Event, when: float) -> bool:
    """Wait on ``timer`` until ``event`` is set or ``when`` comes; whether it was set."""
    if event.is_set():
        return True
    if when <= timer.now():
        return False
    waiter: asyncio.Future[object] = asyncio.ensure_future(event.wait())
    due: asyncio.Future[object] = asyncio.get_running_loop().create_future()

    def wake() -> None:
        if not due.done():
            due.set_result(None)

    handle = timer.call_at(when, wake)
    try:
        await asyncio.wait({waiter, due}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        handle.cancel()
        waiter.cancel()
        due.cancel()
    return event.is_set()
