"""The parse pool's reading of its workers' answers: multiprocessing's frames, however the
socket cuts them into reads (a worker's socket, fed by hand)."""

from __future__ import annotations

import asyncio
import struct
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from courtier.pipeline.workers.channel import WorkerChannel


class _Pool:
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.messages: list[bytes] = []

    def _message(self, worker: WorkerChannel, message: memoryview) -> None:
        self.messages.append(bytes(message))


class _Transport:
    aborted = False

    def abort(self) -> None:
        self.aborted = True


def _worker() -> tuple[WorkerChannel, _Pool, _Transport]:
    loop = asyncio.new_event_loop()
    pool = _Pool(loop)
    worker = WorkerChannel(pool, 0, None)  # type: ignore[arg-type]
    transport = _Transport()
    worker.connection_made(transport)  # type: ignore[arg-type]
    loop.close()
    return worker, pool, transport


def _short(payload: bytes) -> bytes:
    return struct.pack("!i", len(payload)) + payload


def _long(payload: bytes) -> bytes:
    return struct.pack("!i", -1) + struct.pack("!Q", len(payload)) + payload


@given(
    st.lists(st.tuples(st.binary(max_size=300), st.booleans()), max_size=8),
    st.lists(st.integers(min_value=1, max_value=64), min_size=1, max_size=20),
)
def test_frames_come_out_whole_however_the_reads_cut_them(
    frames: list[tuple[bytes, bool]], cuts: list[int]
) -> None:
    worker, pool, transport = _worker()
    stream = b"".join(_long(p) if long else _short(p) for p, long in frames)
    at, turn = 0, 0
    while at < len(stream):
        size = cuts[turn % len(cuts)]
        worker.data_received(stream[at : at + size])
        at, turn = at + size, turn + 1
    assert pool.messages == [payload for payload, _ in frames]
    assert not transport.aborted


def test_an_answer_in_one_read_is_taken_as_it_is() -> None:
    worker, pool, _ = _worker()
    worker.data_received(_short(b"answer"))
    worker.data_received(_short(b"") + _short(b"two") + _short(b"three")[:5])
    worker.data_received(_short(b"three")[5:])
    assert pool.messages == [b"answer", b"", b"two", b"three"]


def test_a_length_no_frame_has_loses_the_worker() -> None:
    worker, pool, transport = _worker()
    garbage: Any = struct.pack("!i", -7) + b"xyz"
    worker.data_received(garbage)
    assert transport.aborted and pool.messages == []
