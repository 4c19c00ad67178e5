"""Which ``Limiter`` backend keeps a crawl's key clocks: a setting, not a code path.

- ``memory`` (the default): a dict in this process, the fastest; floors are saved through
  the store at a stop and restored at the next start.
- ``sqlite``: the ``limiter_tat`` table in the crawl's store file, written before every
  request it books (shared by every process on this machine that opens the same store).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from courtier.config import Config
from courtier.politeness.limiter import MemoryLimiter, SqliteLimiter
from courtier.politeness.limiter.base import Limiter

BACKENDS = ("memory", "sqlite")


def open_limiter(config: Config, store_path: Path, clock: Callable[[], float]) -> Limiter:
    backend = config.crawl.limiter
    if backend == "sqlite":
        return SqliteLimiter(store_path, clock=clock)
    if backend == "memory":
        return MemoryLimiter(clock=clock)
    raise ValueError(f"crawl.limiter must be one of {', '.join(BACKENDS)}, got {backend!r}")
