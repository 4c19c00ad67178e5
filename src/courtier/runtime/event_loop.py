"""Running a crawl's coroutine on the event loop the configuration names.

uvloop (libuv) does the socket, DNS-datagram and timer work of every request in C. In a
crawl what that buys is a loop that keeps its timers, not CPU: at 2,000 sites, in 15
interleaved pairs, the loop's lag p99 was 29 (19-59) ms on uvloop against 42 (20-91) ms on
the standard library's loop, higher there in 12 of the 15 pairs, while CPU-seconds per 1,000
requests stayed within the noise, 1.16 (1.08-1.21) against 1.13 (1.03-1.27)
(`python bench/bench_runtime.py --sites 2000 --duration 40 --variants shipped,event_loop`).
Where uvloop is not installed (it is a Linux/macOS wheel) the standard loop runs the same
code: nothing in Courtier depends on which one it is.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

log = logging.getLogger("courtier.runtime.event_loop")

T = TypeVar("T")


def loop_factory(name: str) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The factory for loop ``name`` ("uvloop" or "asyncio"); None means the standard one."""
    if name == "asyncio":
        return None
    if name != "uvloop":
        raise ValueError(f'event loop must be "uvloop" or "asyncio", got {name!r}')
    try:
        import uvloop
    except ImportError:
        log.info("uvloop is not installed: running on the standard asyncio loop")
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def run(coro: Coroutine[Any, Any, T], event_loop: str = "uvloop") -> T:
    """``asyncio.run(coro)`` on the loop named by ``event_loop``."""
    with asyncio.Runner(loop_factory=loop_factory(event_loop)) as runner:
        return runner.run(coro)
