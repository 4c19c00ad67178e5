"""Processes that open one new limiter file at the same instant all get a limiter (SQLite
answers "locked" at once to all but one switch to WAL; ``courtier.runtime.sqlite_wal``)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from courtier.frontier.sqlite_store import SqliteFrontier
from courtier.politeness.limiter.sqlite import SqliteLimiter


def _open_together(
    opener: Callable[[Path], Any],
    close: Callable[[Any], None],
    paths: list[Path],
    at_once: int = 6,
) -> list[Exception]:
    errors: list[Exception] = []
    for path in paths:
        barrier = threading.Barrier(at_once)
        opened: list[Any] = []

        def open_it(
            path: Path = path, barrier: threading.Barrier = barrier, opened: list[Any] = opened
        ) -> None:
            barrier.wait()
            try:
                opened.append(opener(path))
            except Exception as exc:  # what the test is about
                errors.append(exc)

        threads = [threading.Thread(target=open_it) for _ in range(at_once)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for handle in opened:
            close(handle)
    return errors


def test_six_openers_of_one_new_limiter_file_all_get_one(tmp_path: Path) -> None:
    # Without the retry 12 of 100 such rounds failed here: 40 rounds fail ~99% of the time.
    paths = [tmp_path / f"limiter-{n}.sqlite" for n in range(40)]
    assert _open_together(SqliteLimiter, lambda lim: asyncio.run(lim.close()), paths) == []


def test_six_openers_of_one_new_frontier_file_all_get_one(tmp_path: Path) -> None:
    paths = [tmp_path / f"frontier-{n}.sqlite" for n in range(20)]
    assert _open_together(SqliteFrontier, lambda frontier: frontier.close(), paths) == []
