"""Staggered connection attempts: Happy Eyeballs (RFC 8305) over the addresses the guard checked.

Rules:
- Order (``interleave``, RFC 8305 §4): the families alternate, IPv6 first, each family's
  addresses in the order DNS gave them: ``(v4a, v4b, v6a)`` is tried as ``v6a, v4a, v4b``.
- Start (``first_to_connect``, RFC 8305 §5): the first attempt at once; the next one when
  the last started has not succeeded within ``delay`` seconds (the Connection Attempt Delay,
  ``[fetch] happy_eyeballs_delay``), or at once when an attempt fails. Attempts already
  started go on: the first to succeed wins, every other is cancelled, and one that succeeded
  too late is handed to ``discard`` (its socket closed). When all have failed, the failure of
  the first attempt is raised (the preferred address's reason), unless an attempt's failure
  says another address cannot help (``stop``): then that one, at once.
- Only the given addresses are tried: the caller passes exactly the ones the guard approved
  and the policy still allows, so staggering never widens what may be connected to.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TypeVar

__all__ = ["first_to_connect", "interleave"]

T = TypeVar("T")


def interleave(addresses: Iterable[str]) -> list[str]:
    """``addresses`` in the order they are tried: families alternating, IPv6 first."""
    v6: list[str] = []
    v4: list[str] = []
    for address in addresses:
        (v6 if ":" in address else v4).append(address)
    ordered = []
    for pair in itertools.zip_longest(v6, v4):
        ordered += [address for address in pair if address is not None]
    return ordered


async def first_to_connect(
    attempts: Sequence[Callable[[], Awaitable[T]]],
    delay: float,
    discard: Callable[[T], None],
    stop: Callable[[BaseException], bool] = lambda failure: False,
) -> T:
    """The result of the first of ``attempts`` to succeed, started as the module rules say;
    raises when every one has failed (``ValueError`` when there are none)."""
    if not attempts:
        raise ValueError("no address to connect to")
    if len(attempts) == 1:
        return await attempts[0]()  # nothing to race: no task, no timer
    loop = asyncio.get_running_loop()
    started: list[asyncio.Future[T]] = []
    failures: dict[int, BaseException] = {}
    winner: asyncio.Future[T] | None = None
    try:
        while True:
            if len(started) < len(attempts):
                started.append(asyncio.ensure_future(attempts[len(started)]()))
                last_start = loop.time()
            running = [task for task in started if not task.done()]
            if not running:
                break  # each turn starts one: none left to start, none running
            more = len(started) < len(attempts)
            timeout = max(0.0, last_start + delay - loop.time()) if more else None
            done, _ = await asyncio.wait(
                running, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
            for task in sorted(done, key=started.index):
                failure = task.exception()
                if failure is None:
                    winner = task
                    return task.result()
                failures[started.index(task)] = failure
                if stop(failure):
                    raise failure
        raise failures[min(failures)]
    finally:
        for task in started:
            task.cancel()
        pending = [task for task in started if not task.done()]
        if pending:
            await asyncio.wait(pending)  # cancelled: each closes its own socket
        for task in started:  # a success other than the winner's: closed
            if task is not winner and not task.cancelled() and task.exception() is None:
                discard(task.result())
