"""The parse pool's end of one worker (``courtier.pipeline.workers.pool``): its process, its
socket with multiprocessing's frames in and out (the worker, ``parse_worker``, reads and
writes them with ``multiprocessing.connection``), the jobs sent to it and the timer of the
oldest one's budget. An asyncio protocol: the pool's event loop reads the answers as they
come; what they mean is the pool's (``ChannelOwner``).

The event loop drives the workers' sockets itself (a protocol per worker, one timer per busy
worker for its budget): no thread of the pool's own. A job costs the crawl's process about a
third of the CPU it cost when a thread per worker moved it (a condition, a selector per wait,
a wake-up of the loop per answer; py-spy over python bench/bench_rebook.py --sites 2000
--page-bytes 6000 --duration 40), and the loop never waits
for the GIL behind those threads. Jobs are pickled as they are sent; up to ``PIPELINE`` are
sent to a worker ahead. Jobs sent behind one that ended its worker never started: they go
back to the head of the line.
"""

from __future__ import annotations

import asyncio
import contextlib
import pickle
import struct
from collections import deque
from multiprocessing.process import BaseProcess
from typing import Protocol, cast

from courtier.pipeline.workers.jobs import Job

_SHORT = struct.Struct("!i")
_LONG = struct.Struct("!Q")
"""``multiprocessing.connection``'s framing, which the worker reads and writes: a signed
32-bit length, or -1 and a 64-bit one."""
_JOINED_HEADER = 64 * 1024
"""Below this a payload is sent in one write with its header (the copy is cheaper than a
second system call)."""


class ChannelOwner(Protocol):
    """What a channel needs of its pool."""

    loop: asyncio.AbstractEventLoop
    timeout: float

    def _message(self, worker: WorkerChannel, message: memoryview) -> None: ...

    def _lost(self, worker: WorkerChannel) -> None: ...

    def _check_budget(self, worker: WorkerChannel) -> None: ...


def _frame(payload: bytes) -> tuple[bytes, ...]:
    size = len(payload)
    if size > 0x7FFFFFFF:
        return _SHORT.pack(-1) + _LONG.pack(size), payload
    if size < _JOINED_HEADER:
        return (_SHORT.pack(size) + payload,)
    return _SHORT.pack(size), payload


class WorkerChannel(asyncio.Protocol):
    """One worker process and the pool's end of its socket: frames in, jobs out."""

    def __init__(self, pool: ChannelOwner, index: int, process: BaseProcess) -> None:
        self.pool = pool
        self.index = index
        self.process = process
        self.transport: asyncio.Transport | None = None
        self.started: asyncio.Future[str | None] = pool.loop.create_future()
        """Its first message: None (warmed up), or why it failed."""
        self.ready = False
        self.retired = False
        self.sent: deque[Job] = deque()
        """Jobs sent, oldest first: the oldest is the one the worker runs."""
        self.head_since = 0.0
        """When the worker could take up the oldest job sent (the loop's clock)."""
        self.timer: asyncio.TimerHandle | None = None
        self.open = False
        """Jobs may be sent ahead to it in this dispatch (``ParsePool._fill``)."""
        self._buffer = bytearray()

    # -- the protocol -------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        if self.retired:
            return
        buffer = self._buffer
        if not buffer and len(data) >= 4:  # most answers come whole, in one read
            (size,) = _SHORT.unpack_from(data)
            if size >= 0 and len(data) == 4 + size:
                self.pool._message(self, memoryview(data)[4:])
                return
        buffer += data
        while not self.retired and len(buffer) >= 4:
            (size,) = _SHORT.unpack_from(buffer)
            start = 4
            if size == -1:
                if len(buffer) < 12:
                    return
                (size,) = _LONG.unpack_from(buffer, 4)
                start = 12
            elif size < 0:  # not a frame: the stream is lost, and the worker with it
                buffer.clear()
                if self.transport is not None:
                    self.transport.abort()
                return
            if len(buffer) < start + size:
                return
            message = bytes(buffer[start : start + size])
            del buffer[: start + size]
            self.pool._message(self, memoryview(message))

    def eof_received(self) -> bool:
        return False  # close our end too: connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.retired:
            self.pool._lost(self)

    # -- the pool's side ----------------------------------------------------------------

    def hello(self, message: memoryview) -> None:
        """The worker's first message: warmed up (``started`` resolves to None), or why not."""
        try:
            status, detail = pickle.loads(message)
        except Exception as exc:
            status, detail = "failed", f"{type(exc).__name__}: {exc}"
        if not self.started.done():
            self.started.set_result(None if status == "ready" else str(detail))

    def send(self, job: Job, payload: bytes) -> None:
        assert self.transport is not None
        for part in _frame(payload):
            self.transport.write(part)
        if not self.sent:
            self.head_since = self.pool.loop.time()
            if self.timer is None:
                self.timer = self.pool.loop.call_at(
                    self.head_since + self.pool.timeout, self.pool._check_budget, self
                )
        self.sent.append(job)

    def retire(self) -> list[Job]:
        """Kill the process, close the socket; the jobs sent and not answered."""
        self.retired = True
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        with contextlib.suppress(Exception):  # not started, or gone already
            self.process.kill()
        if self.transport is not None:
            self.transport.abort()
        left = list(self.sent)
        self.sent.clear()
        return left

    def reap(self) -> None:
        """Wait for the killed process (in a thread: it blocks) so no zombie is left."""
        with contextlib.suppress(Exception):
            self.process.join(5)
