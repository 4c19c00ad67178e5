"""Parsing off the fetch loop: a pool of worker processes (placeholder until ParsePool)."""

from __future__ import annotations

import asyncio
import multiprocessing
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

from courtier.config import CrawlSection
from courtier.pipeline.parse import parse_page

T = TypeVar("T")


class ParseRunner:
    def __init__(self, config: CrawlSection) -> None:
        # Spawned, not forked: this process has threads (the store thread, the terminal's
        # status line), and a forked worker could inherit a lock one of them held and hang.
        self._pool = ProcessPoolExecutor(
            config.parse_workers, mp_context=multiprocessing.get_context("spawn")
        )
        self._pool.submit(parse_page, b"<html></html>", "http://warm-up.invalid/")

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)

    async def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
