"""The crawl's collector pacing: the heap frozen at the start, full collections reclaim
cycles among frozen objects, and the collector given back as it was found."""

from __future__ import annotations

import asyncio
import gc
import weakref

import pytest

from courtier.runtime.gc_pacing import GcPacing


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def _cycle() -> weakref.ref[_Node]:
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    return weakref.ref(a)


@pytest.fixture(autouse=True)
def _collector_restored():
    before = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*before)


def test_start_freezes_the_heap_and_stop_gives_the_collector_back() -> None:
    before = gc.get_threshold()
    pacing = GcPacing(young_threshold=12_345)
    pacing.start()
    assert gc.get_freeze_count() > 0
    assert gc.get_threshold()[0] == 12_345
    assert gc.get_threshold()[1:] == before[1:]
    assert len(pacing.pauses) == 1
    pacing.stop()
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == before


def test_a_cycle_that_dies_among_frozen_objects_goes_at_the_next_full_collection() -> None:
    holder = [_cycle()]
    node = holder[0]()
    assert node is not None
    pacing = GcPacing()
    pacing.start()
    try:
        ref = weakref.ref(node)
        del node, holder
        gc.collect()  # an ordinary collection never scans the frozen cycle
        assert ref() is not None
        pacing.full()
        assert ref() is None
    finally:
        pacing.stop()


def test_what_survives_a_young_collection_is_frozen_and_never_scanned_again() -> None:
    pacing = GcPacing(young_threshold=50)
    pacing.start()
    try:
        kept = [[n] for n in range(500)]  # tracked lists: young collections run meanwhile
        frozen = gc.get_freeze_count()
        assert frozen > 0
        assert sum(gc.get_count()[1:]) == 0  # the older generations stay empty
        assert gc.get_objects(generation=1) == [] and gc.get_objects(generation=2) == []
        assert all(gc.is_tracked(item) for item in kept[:3])
    finally:
        pacing.stop()
    assert gc.callbacks.count(pacing_hook()) == 0


def test_a_cycle_that_dies_after_it_was_frozen_goes_at_the_next_full_collection() -> None:
    pacing = GcPacing(young_threshold=50)
    pacing.start()
    try:
        node = _cycle()()
        kept = [[n] for n in range(500)]  # young collections run: the live cycle is frozen
        assert not any(node is o for o in gc.get_objects(generation=0)) and kept
        ref = weakref.ref(node)
        del node
        gc.collect(0)
        assert ref() is not None
        pacing.full()
        assert ref() is None
    finally:
        pacing.stop()


def pacing_hook():
    from courtier.runtime.gc_pacing import _freeze_survivors

    return _freeze_survivors


def test_the_last_pacing_stopped_restores_the_thresholds() -> None:
    before = gc.get_threshold()
    first, second = GcPacing(young_threshold=5_000), GcPacing(young_threshold=6_000)
    first.start()
    second.start()
    first.stop()
    assert gc.get_threshold()[0] == 6_000
    assert gc.get_freeze_count() > 0
    second.stop()
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
    second.stop()  # twice is harmless
    assert gc.get_threshold() == before


async def test_run_collects_every_period() -> None:
    pacing = GcPacing(full_every=0.01)
    pacing.start()
    task = asyncio.create_task(pacing.run())
    try:
        for _ in range(200):
            await asyncio.sleep(0.01)
            if len(pacing.pauses) >= 3:
                break
        assert len(pacing.pauses) >= 3
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        pacing.stop()
