"""Kept-alive connections waiting for their next request.

Rules:
- A connection is kept under (scheme, host, port): the name its TLS was verified for and its
  ``Host`` header, so one host's connection never carries another's request.
- It is taken again only for an address the guard approved for this request: when a host's
  addresses change (a new DNS answer), connections to the old ones are not used.
- The newest idle connection is taken first (the one least likely to have been closed by its
  server); one idle longer than ``idle_timeout`` is closed, by ``take`` or by ``sweep``
  (which the owner runs every few seconds); at most ``per_key`` wait per key, and at most
  ``max_idle`` in all (each is an open file: thousands of sites on a limit of 1,024 open
  files ran out): past it, the least recently used key gives up its oldest.
- A connection its server closed while it waited (``lost``) is dropped on the way.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

IDLE_TIMEOUT = 15.0
"""Seconds an idle connection is kept (aiohttp's default; servers commonly keep 5-75 s)."""
PER_KEY = 256
"""Idle connections kept per (scheme, host, port). Not what bounds them (each was in use less
than ``idle_timeout`` ago, and a key only opens one when none waits): a cap on a busy host
(a CDN edge with many requests in flight) that closes what it will need again."""

MAX_IDLE = 1024
"""Idle connections kept in all, by default (the crawl sets it from its open-file limit)."""

PoolKey = tuple[str, str, int]


class Pooled(Protocol):
    address: str
    idle_since: float

    @property
    def lost(self) -> bool: ...

    def close(self) -> None: ...


C = TypeVar("C", bound=Pooled)


class ConnectionPool(Generic[C]):
    def __init__(
        self,
        idle_timeout: float = IDLE_TIMEOUT,
        per_key: int = PER_KEY,
        clock: Callable[[], float] = time.monotonic,
        max_idle: int = MAX_IDLE,
    ) -> None:
        self.idle_timeout = idle_timeout
        self.per_key = per_key
        self.max_idle = max_idle
        self._clock = clock
        self._idle: OrderedDict[PoolKey, list[C]] = OrderedDict()
        self._count = 0

    def take(self, key: PoolKey, addresses: tuple[str, ...]) -> C | None:
        """An idle connection of ``key`` to one of ``addresses``, or None."""
        idle = self._idle.get(key)
        if not idle:
            return None
        oldest = self._clock() - self.idle_timeout
        while idle:
            connection = idle.pop()
            self._count -= 1
            if connection.lost or connection.idle_since < oldest:
                connection.close()
            elif connection.address in addresses:
                if not idle:
                    del self._idle[key]
                return connection
            else:
                connection.close()  # the host's addresses changed
        del self._idle[key]
        return None

    def give(self, key: PoolKey, connection: C) -> None:
        """Keep ``connection`` (its last response was read whole and kept alive)."""
        connection.idle_since = self._clock()
        self._count += 1
        idle = self._idle.get(key)
        if idle is None:
            self._idle[key] = [connection]
        else:
            self._idle.move_to_end(key)
            idle.append(connection)
            if len(idle) > self.per_key:
                idle.pop(0).close()
                self._count -= 1
        while self._count > self.max_idle:
            stale_key, stale = next(iter(self._idle.items()))
            stale.pop(0).close()
            self._count -= 1
            if not stale:
                del self._idle[stale_key]

    def sweep(self) -> int:
        """Close every connection idle too long or lost; the number closed."""
        oldest = self._clock() - self.idle_timeout
        closed = 0
        for key, idle in list(self._idle.items()):
            kept = []
            for connection in idle:
                if connection.lost or connection.idle_since < oldest:
                    connection.close()
                    closed += 1
                    self._count -= 1
                else:
                    kept.append(connection)
            if kept:
                self._idle[key] = kept
            else:
                del self._idle[key]
        return closed

    def close(self) -> None:
        for idle in self._idle.values():
            for connection in idle:
                connection.close()
        self._idle.clear()
        self._count = 0

    def __len__(self) -> int:
        return self._count
