"""A restart keeps the pauses of the run before it: a floor written through the store as it
was raised (a Retry-After, an origin held) holds over the next run's first requests, after a
crash too, where the clocks are otherwise rebuilt from the restart's moment. Fake clock, the
store the engine uses, no sockets."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from pathlib import Path

from courtier.config import Config
from courtier.frontier.sqlite_store import SqliteFrontier
from courtier.pipeline.lanes.seeding import new_lane
from courtier.pipeline.recovery import after_crash, load_inherited, restore_floors
from courtier.pipeline.scheduling.clocks import KeyClocks
from courtier.politeness.gcra import Slot
from courtier.politeness.keys import LimitKey
from courtier.politeness.limiter import MemoryLimiter

CONFIG = Config()
POLICY = CONFIG.limits.policy()


async def _first_start(clocks: KeyClocks, key: str) -> float:
    slot = await clocks.book(POLICY.limits([LimitKey.parse(key)]), 2.0, max_lead=math.inf)
    assert isinstance(slot, Slot)
    return slot.start


async def test_floors_raised_before_a_kill_hold_over_the_first_requests_after_restart(
    tmp_path: Path,
) -> None:
    now = time.time()  # the store forgets floors already past by the wall clock
    path = tmp_path / "frontier.sqlite3"
    killed = SqliteFrontier(path)

    async def persist(floors: Mapping[str, float]) -> None:
        killed.save_clock_floors(floors, now)

    before = KeyClocks(MemoryLimiter(clock=lambda: now), POLICY, persist=persist)
    # a.test answered 503 with Retry-After: 30, and its origin was held for 20 s ...
    await before.raise_floors({"site:a.test": now + 30.0, "origin:o1": now + 20.0})
    killed.close()  # ... and the crawl was killed: no clean stop saved anything more

    store = SqliteFrontier(path)
    inherited = load_inherited(store, now)
    store.close()
    clocks = KeyClocks(MemoryLimiter(clock=lambda: now), POLICY)
    sites = {"a.test": new_lane("a.test", CONFIG, start=now)}
    assert await restore_floors(inherited, clocks, sites) == 2
    await after_crash(inherited, CONFIG, clocks, sites, None, now)

    # The crash rebuild alone would let a.test start one interval (1 s) after the restart.
    assert sites["a.test"].next_start >= now + 30.0
    assert await _first_start(clocks, "site:a.test") >= now + 30.0
    assert await _first_start(clocks, "origin:o1") >= now + 20.0
    assert await _first_start(clocks, "origin:o2") < now + 1.0  # an untouched key is free
