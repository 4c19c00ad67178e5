"""map_bounded: every item once, results in item order, never more than ``limit`` tasks."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given
from hypothesis import strategies as st

from courtier.runtime.bounded import map_bounded, map_bounded_but_stragglers


class _Meter:
    """How many calls are running at once, at most."""

    def __init__(self) -> None:
        self.now = 0
        self.most = 0
        self.seen: list[int] = []

    async def double(self, item: int) -> int:
        self.now += 1
        self.most = max(self.most, self.now)
        self.seen.append(item)
        for _ in range(1 + item % 3):  # finishing out of order
            await asyncio.sleep(0)
        self.now -= 1
        return 2 * item


@given(st.lists(st.integers(0, 1000), max_size=60), st.integers(1, 12))
def test_results_in_order_each_item_once_and_the_bound_held(items: list[int], limit: int) -> None:
    meter = _Meter()
    results = asyncio.run(map_bounded(meter.double, items, limit))
    assert results == [2 * i for i in items]
    assert sorted(meter.seen) == sorted(items)
    assert meter.most <= limit
    assert meter.most == min(limit, len(items))


async def test_no_more_tasks_than_the_limit_exist_at_once() -> None:
    # What gather would do: 2,000 tasks in one turn. Counted from the loop's own tasks.
    most = 0

    async def look(_item: int) -> None:
        nonlocal most
        most = max(most, len(asyncio.all_tasks()))
        await asyncio.sleep(0)

    await map_bounded(look, range(2000), 64)
    assert most <= 64 + 1  # the workers, and the test's own task


async def test_the_first_error_is_raised_and_the_other_calls_are_cancelled() -> None:
    cancelled = 0

    async def call(item: int) -> int:
        nonlocal cancelled
        if item == 2:
            raise KeyError(item)
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled += 1
            raise
        return item

    with pytest.raises(KeyError):
        await map_bounded(call, range(20), 4)
    assert cancelled == 3  # the other three workers' calls, none left running


async def test_a_limit_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="limit"):
        await map_bounded(lambda item: asyncio.sleep(0), [1], 0)


async def test_stragglers_are_cancelled_after_the_grace_and_the_rest_answered() -> None:
    """One call that never ends must not hold the others' results: once every item has been
    taken up, it gets the grace, then it is cancelled and left out."""
    meter, stuck = _Meter(), asyncio.Event()
    cancelled: list[int] = []

    async def call(item: int) -> int:
        if item == 3:
            try:
                await stuck.wait()
            except asyncio.CancelledError:
                cancelled.append(item)
                raise
        return await meter.double(item)

    results = await map_bounded_but_stragglers(call, list(range(20)), 4, 0.05)
    assert results == {i: 2 * i for i in range(20) if i != 3}
    assert cancelled == [3]
    assert meter.most <= 4


async def test_without_stragglers_every_result_comes_back_and_errors_are_raised() -> None:
    meter = _Meter()
    assert await map_bounded_but_stragglers(meter.double, list(range(30)), 7, 10.0) == {
        i: 2 * i for i in range(30)
    }
    assert meter.most <= 7
    assert await map_bounded_but_stragglers(meter.double, [], 3, 1.0) == {}

    async def failing(item: int) -> int:
        await asyncio.sleep(0)
        if item == 5:
            raise RuntimeError("five")
        return item

    with pytest.raises(RuntimeError, match="five"):
        await map_bounded_but_stragglers(failing, list(range(10)), 3, 1.0)
    with pytest.raises(ValueError):
        await map_bounded_but_stragglers(failing, [1], 0, 1.0)
