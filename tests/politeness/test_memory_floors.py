"""The memory limiter's floors: raising a key to a floor never lowers its TAT, a key never
booked takes the floor, and pruning forgets only keys idle longer than the margin."""

from __future__ import annotations

import asyncio

from courtier.politeness.limiter.memory import MemoryLimiter


def test_a_floor_raises_a_key_and_never_lowers_it() -> None:
    limiter = MemoryLimiter(lambda: 0.0)
    limiter.raise_key_now("site:a.test", 5.0)
    assert limiter.tat_now("site:a.test") == 5.0
    limiter.raise_key_now("site:a.test", 3.0)
    assert limiter.tat_now("site:a.test") == 5.0
    limiter.raise_key_now("site:a.test", 7.0)
    assert limiter.tat_now("site:a.test") == 7.0
    assert limiter.tat_now("site:b.test") is None


def test_pruning_keeps_a_key_exactly_at_the_margin() -> None:
    limiter = MemoryLimiter(lambda: 100.0)
    limiter.raise_key_now("site:edge.test", 90.0)
    limiter.raise_key_now("site:old.test", 89.0)
    assert asyncio.run(limiter.prune(10.0)) == 1
    assert limiter.tat_now("site:edge.test") == 90.0
    assert limiter.tat_now("site:old.test") is None
