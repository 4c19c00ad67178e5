"""The pool of kept-alive connections, on a fake clock."""

from __future__ import annotations

from dataclasses import dataclass

from courtier.net.pool import ConnectionPool

KEY = ("http", "a.test", 80)


@dataclass
class Fake:
    address: str = "127.0.0.1"
    idle_since: float = 0.0
    lost: bool = False
    closed: bool = False

    def close(self) -> None:
        self.closed = True


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def pool(clock: Clock, **kwargs: float) -> ConnectionPool[Fake]:
    return ConnectionPool(clock=clock, **kwargs)  # type: ignore[arg-type]


def test_the_newest_idle_connection_is_taken_first():
    clock = Clock()
    connections = pool(clock)
    old, new = Fake(), Fake()
    connections.give(KEY, old)
    clock.now += 1
    connections.give(KEY, new)
    assert connections.take(KEY, ("127.0.0.1",)) is new
    assert connections.take(KEY, ("127.0.0.1",)) is old
    assert connections.take(KEY, ("127.0.0.1",)) is None and len(connections) == 0


def test_a_connection_serves_only_its_own_key():
    connections = pool(Clock())
    connections.give(KEY, Fake())
    assert connections.take(("https", "a.test", 80), ("127.0.0.1",)) is None
    assert connections.take(("http", "b.test", 80), ("127.0.0.1",)) is None
    assert connections.take(("http", "a.test", 8080), ("127.0.0.1",)) is None
    assert connections.take(KEY, ("127.0.0.1",)) is not None


def test_a_connection_to_an_address_no_longer_approved_is_closed_not_used():
    connections = pool(Clock())
    stale = Fake(address="127.0.0.9")
    connections.give(KEY, stale)
    assert connections.take(KEY, ("127.0.0.1",)) is None
    assert stale.closed and len(connections) == 0


def test_a_lost_or_expired_connection_is_closed_on_the_way():
    clock = Clock()
    connections = pool(clock, idle_timeout=15.0)
    expired, lost, fresh = Fake(), Fake(), Fake()
    connections.give(KEY, expired)
    clock.now += 10
    connections.give(KEY, fresh)
    connections.give(KEY, lost)
    lost.lost = True
    clock.now += 6  # expired has waited 16 s, fresh 6 s
    assert connections.take(KEY, ("127.0.0.1",)) is fresh
    assert lost.closed and not fresh.closed
    assert connections.take(KEY, ("127.0.0.1",)) is None and expired.closed


def test_the_sweep_closes_what_waited_too_long_and_keeps_the_rest():
    clock = Clock()
    connections = pool(clock, idle_timeout=15.0)
    first, second, other = Fake(), Fake(), Fake()
    connections.give(KEY, first)
    clock.now += 10
    connections.give(KEY, second)
    connections.give(("http", "b.test", 80), other)
    clock.now += 6
    assert connections.sweep() == 1
    assert first.closed and not second.closed and not other.closed and len(connections) == 2
    clock.now += 10
    assert connections.sweep() == 2 and len(connections) == 0


def test_a_key_keeps_at_most_its_share_the_oldest_goes():
    connections = pool(Clock(), per_key=2)
    a, b, c = Fake(), Fake(), Fake()
    for connection in (a, b, c):
        connections.give(KEY, connection)
    assert a.closed and not b.closed and not c.closed and len(connections) == 2


def test_closing_the_pool_closes_every_connection():
    connections = pool(Clock())
    held = [Fake(), Fake()]
    connections.give(KEY, held[0])
    connections.give(("http", "b.test", 80), held[1])
    connections.close()
    assert all(c.closed for c in held) and len(connections) == 0


def test_idle_connections_are_capped_in_all_the_least_recently_used_host_first():
    clock = Clock()
    connections = pool(clock, max_idle=3)
    hosts = [("http", f"h{n}.test", 80) for n in range(3)]
    kept = {key: Fake() for key in hosts}
    for key in hosts:
        connections.give(key, kept[key])
    connections.give(hosts[0], extra := Fake())  # h0 used again: h1 is now the oldest
    assert len(connections) == 3
    assert kept[hosts[1]].closed and not kept[hosts[0]].closed and not extra.closed
    assert connections.take(hosts[1], ("127.0.0.1",)) is None
    assert connections.take(hosts[0], ("127.0.0.1",)) is extra
    assert len(connections) == 2
    clock.now += 1000
    assert connections.sweep() == 2 and len(connections) == 0
