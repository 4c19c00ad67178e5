"""Happy Eyeballs' scheduling (RFC 8305) on a fake clock: the order of the addresses, when
each attempt starts, who wins, what is cancelled and closed. No sockets."""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import pytest

from courtier.net.stagger import first_to_connect, interleave


class _JumpingSelector(selectors.DefaultSelector):  # type: ignore[misc,valid-type]
    """Never sleeps: with nothing ready, the clock jumps to the loop's next timer."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0

    def select(self, timeout: float | None = None) -> Any:
        ready = super().select(0)
        if not ready:
            if timeout is None:
                raise RuntimeError("nothing would ever happen: the test waits for itself")
            self.now += timeout
        return ready


class FakeClockLoop(asyncio.SelectorEventLoop):
    def __init__(self) -> None:
        self._jumping = _JumpingSelector()
        super().__init__(self._jumping)

    def time(self) -> float:
        return self._jumping.now


def on_fake_time(scenario: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
    loop = FakeClockLoop()
    try:
        return loop.run_until_complete(scenario())
    finally:
        loop.close()


class Attempts:
    """Attempts that connect after ``after`` seconds (or fail), noting what happens when."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, float]] = []
        self.discarded: list[str] = []

    def attempt(self, name: str, after: float, fails: bool = False) -> Callable[[], Awaitable[str]]:
        async def run() -> str:
            loop = asyncio.get_running_loop()
            self.events.append(("start", name, loop.time()))
            try:
                await asyncio.sleep(after)
            except asyncio.CancelledError:
                self.events.append(("cancelled", name, loop.time()))
                raise
            if fails:
                self.events.append(("failed", name, loop.time()))
                raise ConnectionRefusedError(f"{name} refused")
            self.events.append(("connected", name, loop.time()))
            return name

        return run

    def race(self, *attempts: Callable[[], Awaitable[str]], delay: float = 0.25, **kw: Any) -> Any:
        return first_to_connect(list(attempts), delay, self.discarded.append, **kw)


def test_families_alternate_ipv6_first_each_in_the_order_dns_gave() -> None:
    assert interleave(["1.1.1.1", "2.2.2.2", "3.3.3.3", "2001:db8::1", "2001:db8::2"]) == [
        "2001:db8::1",
        "1.1.1.1",
        "2001:db8::2",
        "2.2.2.2",
        "3.3.3.3",
    ]
    assert interleave(["1.1.1.1", "2.2.2.2"]) == ["1.1.1.1", "2.2.2.2"]
    assert interleave([]) == []


def test_the_next_attempt_starts_after_the_delay_and_the_first_to_connect_wins() -> None:
    attempts = Attempts()
    a, b, c = (attempts.attempt("a", 10.0), attempts.attempt("b", 0.1), attempts.attempt("c", 1))
    assert on_fake_time(lambda: attempts.race(a, b, c)) == "b"
    assert attempts.events == [
        ("start", "a", 0.0),
        ("start", "b", 0.25),
        ("connected", "b", pytest.approx(0.35)),
        ("cancelled", "a", pytest.approx(0.35)),  # c was never started
    ]


def test_an_attempt_that_fails_starts_the_next_at_once() -> None:
    attempts = Attempts()
    first, second = attempts.attempt("a", 0.01, fails=True), attempts.attempt("b", 0.05)
    assert on_fake_time(lambda: attempts.race(first, second)) == "b"
    assert attempts.events == [
        ("start", "a", 0.0),
        ("failed", "a", pytest.approx(0.01)),
        ("start", "b", pytest.approx(0.01)),  # not at 0.25
        ("connected", "b", pytest.approx(0.06)),
    ]


def test_attempts_started_go_on_and_the_earliest_to_connect_wins_whatever_its_rank() -> None:
    attempts = Attempts()
    a, b, c = (attempts.attempt("a", 0.6), attempts.attempt("b", 5.0), attempts.attempt("c", 5.0))
    assert on_fake_time(lambda: attempts.race(a, b, c)) == "a"
    starts = [(name, when) for kind, name, when in attempts.events if kind == "start"]
    assert starts == [("a", 0.0), ("b", 0.25), ("c", 0.5)]
    cancelled = sorted(name for kind, name, _ in attempts.events if kind == "cancelled")
    assert cancelled == ["b", "c"]


def test_when_every_attempt_fails_the_first_addresss_failure_is_raised() -> None:
    attempts = Attempts()
    a, b = attempts.attempt("a", 3.0, fails=True), attempts.attempt("b", 0.1, fails=True)
    with pytest.raises(ConnectionRefusedError, match="a refused"):
        on_fake_time(lambda: attempts.race(a, b))
    assert [e[:2] for e in attempts.events] == [
        ("start", "a"),
        ("start", "b"),
        ("failed", "b"),
        ("failed", "a"),
    ]


def test_a_failure_that_no_other_address_can_mend_ends_the_race_at_once() -> None:
    attempts = Attempts()
    a, b, c = (
        attempts.attempt("a", 5.0),
        attempts.attempt("b", 0.1, fails=True),
        attempts.attempt("c", 5.0),
    )
    with pytest.raises(ConnectionRefusedError, match="b refused"):
        on_fake_time(lambda: attempts.race(a, b, c, stop=lambda failure: "b" in str(failure)))
    assert [name for kind, name, _ in attempts.events if kind == "start"] == ["a", "b"]
    assert sorted(name for kind, name, _ in attempts.events if kind == "cancelled") == ["a"]


def test_a_second_success_in_the_same_turn_is_closed_not_leaked() -> None:
    discarded: list[str] = []

    async def scenario() -> str:
        loop = asyncio.get_running_loop()
        gates = [loop.create_future() for _ in range(2)]

        def attempt(i: int) -> Callable[[], Awaitable[str]]:
            async def run() -> str:
                await gates[i]
                return f"socket {i}"

            return run

        async def open_both() -> None:
            await asyncio.sleep(1.0)  # both started by now
            gates[1].set_result(None)
            gates[0].set_result(None)

        opener = asyncio.ensure_future(open_both())
        won = await first_to_connect([attempt(0), attempt(1)], 0.25, discarded.append)
        await opener
        return won

    won = on_fake_time(scenario)
    assert {won, *discarded} == {"socket 0", "socket 1"} and len(discarded) == 1


def test_a_cancelled_race_cancels_every_attempt() -> None:
    attempts = Attempts()

    async def scenario() -> None:
        race = asyncio.ensure_future(
            attempts.race(attempts.attempt("a", 9.0), attempts.attempt("b", 9.0))
        )
        await asyncio.sleep(0.3)
        race.cancel()
        with pytest.raises(asyncio.CancelledError):
            await race

    on_fake_time(scenario)
    assert sorted(name for kind, name, _ in attempts.events if kind == "cancelled") == ["a", "b"]


def test_no_address_is_an_error() -> None:
    with pytest.raises(ValueError):
        on_fake_time(lambda: first_to_connect([], 0.25, print))
