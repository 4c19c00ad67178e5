"""Python's garbage collector, paced for a crawl: short pauses, and a full one rarely.

CPython's cyclic collector stops the whole process while it scans. Left to itself in a crawl
of 2,000 sites it ran a full (oldest-generation) collection 13 times in 40 s, each 20-420 ms
long as the heap grew (400,000 tracked objects: lanes, clocks, leased URLs, observation
state), and those pauses were most of the event loop's p99 lag: every timer due during one
fires late, so slots are missed
(`python bench/bench_rebook.py --sites 2000 --page-bytes 6000 --duration 40`, loop lag p99).
Against CPython's collector left as it starts, at 2,000 sites in four interleaved rounds: loop
lag p99 39 (19-59) ms paced against 162 (147-199), CPU-s per 1,000 requests 1.13 (1.08-1.21)
against 1.25 (1.16-1.28), utilisation 0.869 against 0.844
(`python bench/bench_runtime.py --sites 2000 --duration 40 --rounds 4 --variants
shipped,gc_pacing`).

Rules:
- At the start of a crawl, before any request or DNS question is in flight, everything
  alive (modules, configuration, the seed) is collected once and then frozen
  (``gc.freeze``): automatic collections never scan it again.
- The youngest generation is collected after ``YOUNG_THRESHOLD`` allocations (the default
  is 700): most of a request's objects die by reference counting before then, so far fewer
  survivors are promoted and later rescanned.
- What survives an automatic collection is frozen too (a ``gc.callbacks`` hook), so no
  object is scanned twice: older generations stay empty, and their collections, which
  scanned every survivor of the last ten young ones (up to 160 ms at 2,000 sites, in the
  middle of the crawl), take nothing. What this keeps alive is cyclic garbage made of
  objects that were still in use at a young collection: measured at 2,000 sites, 31
  objects in 30 s (`python bench/bench_rebook.py --sites 2000 --page-bytes 6000 --duration 40` with
  gc.DEBUG_SAVEALL), freed at the next full collection.
- Young collections are left to the allocation count, though it counts deaths of frozen
  objects against births: while frozen objects die (a batch written, a page's links handed
  on) young ones pile up, and at 2,000 sites a young collection came every ~10 s and took
  40-76 ms (at a threshold of 20,000; ``YOUNG_THRESHOLD`` says why it is higher now).
  Collecting the youngest generation on a 0.1 s timer bounded them at 17 ms but
  took four times the collector's CPU (objects scanned alive that would have died unscanned:
  28 against 5-8 ms a second), and the loop's p99 lag stayed as it was
  (`python bench/bench_rebook.py --sites 2000 --page-bytes 6000 --duration 40`).
- Every ``full_every`` seconds the frozen objects are thawed, the whole heap is collected
  (cycles that formed among frozen objects are reclaimed here, so nothing leaks for longer
  than that) and what survives is frozen again: one long pause per period, not dozens.
- The collector is process-wide: the first pacing started saves its thresholds and the last
  one stopped restores them and thaws the heap, so engines run one after another (tests) or
  side by side (a cluster in one process) leave it as they found it.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import time
from dataclasses import dataclass, field

log = logging.getLogger("courtier.runtime.gc_pacing")

YOUNG_THRESHOLD = 60_000
"""Allocations (less deallocations) of tracked objects between young collections. At 2,000
sites, 22 s of a crawl's steady state: 20,000 gave 6-8 young collections of up to 61-80 ms,
296-444 ms in all; 60,000 gave two of up to 83-118 ms, 157-212 ms in all. A collection
scans the young objects still alive, which are many whenever it comes: fewer collections
cost less, and fewer turns of the loop run late (lag p99 49, 44, 47, 40, 72 ms against 48,
58, 70, 51, 54 in five interleaved pairs), for a longer longest pause
(`python bench/bench_rebook.py --sites 2000 --page-bytes 6000 --duration 40 --runs 5`)."""
FULL_EVERY = 300.0
"""Seconds between full collections of the thawed heap."""

_active = 0
_saved_thresholds: tuple[int, int, int] | None = None


@dataclass
class GcPacing:
    """The crawl's collector schedule (see the module docs); ``pauses`` are the full ones."""

    full_every: float = FULL_EVERY
    young_threshold: int = YOUNG_THRESHOLD
    pauses: list[float] = field(default_factory=list)
    """Seconds each full collection (``full``) stopped the process."""
    _started: bool = False

    def start(self) -> None:
        global _active, _saved_thresholds
        if self._started:
            return
        self._started = True
        if _active == 0:
            _saved_thresholds = gc.get_threshold()
        _active += 1
        _, older, oldest = gc.get_threshold()
        gc.set_threshold(self.young_threshold, older, oldest)
        if _freeze_survivors not in gc.callbacks:
            gc.callbacks.append(_freeze_survivors)
        self.full()

    def full(self) -> float:
        """Thaw, collect everything, freeze what survives; the pause, in seconds."""
        began = time.perf_counter()
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        pause = time.perf_counter() - began
        self.pauses.append(pause)
        return pause

    async def run(self) -> None:
        """A full collection every ``full_every`` seconds, for ever (cancel it to stop)."""
        while True:
            await asyncio.sleep(self.full_every)
            pause = self.full()
            frozen = gc.get_freeze_count()
            log.debug("full collection: %.0f ms, %d objects frozen", pause * 1000, frozen)

    def stop(self) -> None:
        """Give the collector back as it was (when no other pacing is running)."""
        global _active, _saved_thresholds
        if not self._started:
            return
        self._started = False
        _active -= 1
        if _active == 0:
            with contextlib.suppress(ValueError):
                gc.callbacks.remove(_freeze_survivors)
            gc.unfreeze()
            if _saved_thresholds is not None:
                gc.set_threshold(*_saved_thresholds)
            _saved_thresholds = None


def _freeze_survivors(phase: str, info: dict[str, int]) -> None:
    """``gc.callbacks``: after a collection, freeze what it left (see the module rules)."""
    if phase == "stop":
        gc.freeze()
