"""The PostgreSQL limiter while its server is away, on a fake server and a fake clock: one
caller at a time finds out whether the server is back, ever less often, and every other
caller is told at once that nothing can be booked (thousands of lanes book; none of them may
turn an outage into a storm of connection attempts)."""

from __future__ import annotations

import asyncio
import itertools
from types import SimpleNamespace
from typing import Any

import psycopg
import pytest

from courtier.politeness.gcra import KeyParams, Limit, Slot
from courtier.politeness.limiter import postgres
from courtier.politeness.limiter.base import LimiterUnavailable
from courtier.politeness.limiter.postgres import PostgresLimiter

T0 = 1_800_000_000.0
SITE = Limit("site:a.test", KeyParams(1.0, 0.0, 0.25, weighted=False))


class FakeServer:
    """Answers every statement while up (a booking's row: a slot at once); while down, a
    session's next statement finds it lost and every new session is refused."""

    def __init__(self) -> None:
        self.up = True
        self.attempts: list[float] = []
        """When (fake monotonic time) a caller reached for the server: a statement sent or
        a session dialled."""
        self.monotonic = 0.0

    def reached(self) -> None:
        self.attempts.append(self.monotonic)


class FakeCursor:
    def __init__(self, conn: FakeConnection) -> None:
        self.conn = conn
        self.rows: list[tuple[Any, ...]] = []

    async def execute(self, query: str, params: Any, *, prepare: bool = False) -> None:
        server = self.conn.server
        server.reached()
        await asyncio.sleep(0)  # a round trip: other callers run meanwhile
        if not server.up:
            self.conn.closed = True
            raise psycopg.OperationalError("server closed the connection unexpectedly")
        self.rows = [(params["now"], 1, [], True)]

    async def fetchall(self) -> list[tuple[Any, ...]]:
        return self.rows


class FakeConnection:
    def __init__(self, server: FakeServer) -> None:
        self.server = server
        self.closed = False

    def cursor(self) -> FakeCursor:
        return FakeCursor(self)

    async def close(self) -> None:
        self.closed = True


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> FakeServer:
    server = FakeServer()

    async def dial(conninfo: str, synchronous_commit: bool) -> FakeConnection:
        server.reached()
        await asyncio.sleep(0)
        if not server.up:
            raise psycopg.OperationalError("connection refused")
        return FakeConnection(server)

    monkeypatch.setattr(postgres, "_open", dial)
    monkeypatch.setattr(postgres, "time", SimpleNamespace(monotonic=lambda: server.monotonic))
    return server


def _limiter(server: FakeServer, connections: int = 2) -> PostgresLimiter:
    sessions: list[Any] = [FakeConnection(server) for _ in range(connections)]
    return PostgresLimiter(sessions, lambda: T0, "host=db.test", False)


async def _book_all(limiter: PostgresLimiter, callers: int) -> list[object]:
    return await asyncio.gather(
        *(limiter.book([SITE], 1.0) for _ in range(callers)), return_exceptions=True
    )


async def test_while_the_server_is_away_one_caller_at_a_time_asks_for_it(
    server: FakeServer,
) -> None:
    limiter = _limiter(server, connections=2)
    assert isinstance(await limiter.book([SITE], 1.0), Slot)
    server.up, server.attempts = False, []
    # The outage begins under a crowd: the two sessions in use find it; nobody else dials.
    answers = await _book_all(limiter, 50)
    assert all(isinstance(a, LimiterUnavailable) for a in answers), answers
    assert len(server.attempts) <= 2, server.attempts
    # Within the backoff nobody reaches for the server.
    server.attempts = []
    server.monotonic += 0.1
    answers = await _book_all(limiter, 50)
    assert all(isinstance(a, LimiterUnavailable) for a in answers)
    assert server.attempts == []
    # Each time the backoff is over, one of the crowd asks, whatever the crowd's size.
    for _ in range(400):
        server.monotonic += 0.05
        before = len(server.attempts)
        answers = await _book_all(limiter, 20)
        assert all(isinstance(a, LimiterUnavailable) for a in answers)
        assert len(server.attempts) - before <= 1, server.attempts[before:]
    assert server.attempts, "nobody asked whether the server was back"
    # The server is back: one caller past the backoff finds it, then everybody books.
    server.up = True
    server.monotonic += 5.0
    before = len(server.attempts)
    answers = await _book_all(limiter, 50)
    assert [type(a) for a in answers] == [Slot] + [LimiterUnavailable] * 49
    assert len(server.attempts) - before == 2  # its session dialled, its booking sent
    answers = await _book_all(limiter, 50)
    assert all(isinstance(a, Slot) for a in answers), answers
    await limiter.close()


async def test_the_server_is_asked_again_ever_less_often_up_to_five_seconds(
    server: FakeServer,
) -> None:
    limiter = _limiter(server, connections=1)
    server.up = False
    step = 0.01
    while server.monotonic < 60.0:  # a caller every 10 ms for a minute
        with pytest.raises(LimiterUnavailable):
            await limiter.book([SITE], 1.0)
        server.monotonic += step
    gaps = [b - a for a, b in itertools.pairwise(server.attempts)]
    # 0.25 s after the first failure, then twice as long each time up to 5 s, each wait
    # drawn from its upper half (a crowd of workers does not ask in step).
    nominal = [min(0.25 * 2**n, 5.0) for n in range(len(gaps))]
    for gap, delay in zip(gaps, nominal, strict=True):
        assert delay / 2 - step <= gap <= delay + step, (gaps, nominal)
    assert 14 <= len(server.attempts) <= 30, server.attempts
    # Back: the next caller past the backoff books, and the outage is over for everyone.
    server.up = True
    server.monotonic += 5.0
    assert isinstance(await limiter.book([SITE], 1.0), Slot)
    attempts = len(server.attempts)
    assert isinstance(await limiter.book([SITE], 1.0), Slot)
    assert len(server.attempts) == attempts + 1  # no backoff left: straight to the server
    await limiter.close()
