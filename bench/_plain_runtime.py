"""`python -m courtier ...` with some runtime helpers swapped for their plain equivalents.

    COURTIER_PLAIN=ascii_regex,gc_pacing python bench/_plain_runtime.py crawl --seeds ...

``COURTIER_PLAIN`` names the helpers to swap (``PLAIN``; empty: none, the crawl as shipped).
The swaps are made here, at this file's top level, before any module of Courtier that uses a
helper is imported (they take the helper by name when they are imported). The parse workers
are spawned: multiprocessing prepares a spawned child by running its parent's main script's
top level (as ``__mp_main__``) before it unpickles anything, so they get the same swaps.

The event loop is not swapped here: the crawl has its own setting (``-s
crawl.event_loop=asyncio``), which ``bench_runtime.py`` passes. The helpers this bench showed
paying nothing at crawl level are gone; commit 4cd5786 has their swaps (``fast_init``,
``pickling``, ``compact_json``).
"""

from __future__ import annotations

import asyncio
import os
import sys


def _plain_regex() -> None:
    """RE2 looks for phone candidates only in ASCII text (``str.isascii``); ``re`` in any
    other, as it does where digits beyond ASCII occur."""
    import courtier.runtime.ascii_regex

    courtier.runtime.ascii_regex.digits_all_ascii = str.isascii  # type: ignore[assignment]


def _plain_gc() -> None:
    """The collector as CPython sets it: default thresholds, nothing frozen, no paced full
    collection."""
    from courtier.runtime.gc_pacing import GcPacing

    async def idle(self: GcPacing) -> None:
        await asyncio.Event().wait()  # until cancelled, as the paced loop is

    GcPacing.start = lambda self: None  # type: ignore[method-assign]
    GcPacing.stop = lambda self: None  # type: ignore[method-assign]
    GcPacing.run = idle  # type: ignore[method-assign]


PLAIN = {
    "ascii_regex": _plain_regex,
    "gc_pacing": _plain_gc,
}

for _name in filter(None, os.environ.get("COURTIER_PLAIN", "").split(",")):
    PLAIN[_name]()

if __name__ == "__main__":
    from courtier.cli import main

    sys.exit(main())
