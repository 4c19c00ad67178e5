"""CPU per booking and per launch on the engine's hot path (memory limiter, one process).

Two measurements over a crawl-shaped key set (2,000 sites over 600 origins):

- ``booking``: what one page booking costs the event loop: the site ``Limit`` as
  ``pages.SiteLanes.booking`` builds it, the origin's ``Limit`` from
  ``FeedbackWriter.origin_limit``, then ``KeyClocks.book`` on a ``MemoryLimiter``; also the
  observer's ``budget_of(key)`` (``LimitKey.parse`` + ``LimitPolicy.params``).
- ``launch``: the real ``Scheduler`` on a real event loop (``LoopTimer``), 2,000 lanes whose
  work is a no-op coroutine, run for ``--seconds``: process CPU seconds per launch (arm, book,
  timers, the task per launch, finish), with the missed-slot rate and how late launches were.
  ``--noise-tasks N --noise-ms M`` loads the loop (N tasks burning ~M ms of CPU per turn)
  to see how the scheduler turns loop lag into missed slots (CPU per launch then includes
  the noise: read it from an unloaded run).

    PYTHONPATH=src python bench/bench_booking_hot.py
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import time
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from courtier.config import load
from courtier.observe.observation import budget_from
from courtier.pipeline.answers.feedback_writer import FeedbackWriter
from courtier.pipeline.scheduling.clocks import KeyClocks
from courtier.pipeline.scheduling.lanes import LaneState, Launch, Wait
from courtier.pipeline.scheduling.scheduler import Scheduler
from courtier.pipeline.scheduling.timer import LoopTimer
from courtier.pipeline.stats import CrawlStats
from courtier.politeness.gcra import KeyParams, Limit
from courtier.politeness.limiter import MemoryLimiter

SITES = 2000
ORIGINS = 600


def site_name(n: int) -> str:
    return f"site-{n}.example.test"


def origin_name(n: int) -> str:
    # The shape of a fallback origin id: an address set.
    return f"addr=10.0.{n // 250}.{n % 250},10.1.{n // 250}.{n % 250}"


async def bench_booking(count: int) -> dict[str, float]:
    config = load(None, [])
    policy = config.limits.policy()
    limiter = MemoryLimiter()
    clocks = KeyClocks(limiter, policy)
    feedback = FeedbackWriter(config, clocks, policy, CrawlStats())
    site_limits = config.limits.site
    sites = [site_name(n) for n in range(SITES)]
    origins = [origin_name(n % ORIGINS) for n in range(SITES)]

    def page_limits(n: int) -> tuple[Limit, ...]:
        # As pages.SiteLanes.booking builds them.
        return (
            Limit(
                f"site:{sites[n]}",
                KeyParams(1.0, site_limits.burst, site_limits.slot_width, weighted=False),
            ),
            feedback.origin_limit(origins[n]),
        )

    started = time.process_time()
    for i in range(count):
        n = i % SITES
        await clocks.book(page_limits(n), 2.0, max_lead=10.0)
    full = (time.process_time() - started) / count

    prebuilt = [page_limits(n) for n in range(SITES)]
    started = time.process_time()
    for i in range(count):
        await clocks.book(prebuilt[i % SITES], 2.0, max_lead=10.0)
    book_only = (time.process_time() - started) / count

    budget_of = budget_from(policy)
    keys = [f"origin:{origin}" for origin in origins] + [f"site:{site}" for site in sites]
    started = time.process_time()
    for i in range(count):
        budget_of(keys[i % len(keys)])
    budget = (time.process_time() - started) / count
    return {
        "booking_us": round(full * 1e6, 2),
        "book_prebuilt_limits_us": round(book_only * 1e6, 2),
        "observer_budget_of_us": round(budget * 1e6, 2),
    }


@dataclass(eq=False)
class BenchLane:
    name: str
    origin: str
    sched: LaneState[Any] = field(default_factory=LaneState)
    next_start: float = 0.0
    fence: None = None


class BenchKind:
    """Pages' shape: one in flight, a site interval, site + origin keys; no-op work."""

    lead = 10.0

    def __init__(self) -> None:
        self.site = KeyParams(1.0, 0.0, 0.25, weighted=False)
        self.origin = KeyParams(0.5, 0.0, 0.25)
        self.late: list[float] = []
        self.rng = random.Random(11)
        self.answer_time = False

    def max_lead(self, lane: BenchLane) -> float:
        return self.lead

    def max_in_flight(self, lane: BenchLane) -> int:
        return 1

    def choose(self, lane: BenchLane, now: float) -> object | Wait | None:
        return lane.name

    def not_before(self, lane: BenchLane, work: object, now: float) -> float:
        return lane.next_start

    def booking(self, lane: BenchLane, work: object) -> tuple[tuple[Limit, ...], float]:
        return (
            Limit(f"site:{lane.name}", self.site),
            Limit(f"origin:{lane.origin}", self.origin),
        ), 2.0

    def started(self, lane: BenchLane, work: object, now: float) -> None:
        lane.next_start = max(lane.next_start, now + 1.0)

    def run(self, lane: BenchLane, work: object, launch: Launch) -> Coroutine[Any, Any, None]:
        self.late.append(launch.late)
        return _answer(self.rng.uniform(0.02, 0.4) if self.answer_time else 0.0)


async def _answer(seconds: float) -> None:
    if seconds:
        await asyncio.sleep(seconds)  # the server's answer time, on the loop like a fetch


def _burn(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


async def _noise(mean: float, rng: random.Random) -> None:
    """CPU work in chunks between event-loop turns: what parsing results, WARC and request
    set-up do to the loop of a loaded crawl."""
    while True:
        _burn(rng.expovariate(1.0 / mean))
        await asyncio.sleep(0)


async def _sample_lag(samples: list[float], period: float = 0.05) -> None:
    loop = asyncio.get_running_loop()  # as courtier.pipeline.stats.sample_loop_lag
    while True:
        before = loop.time()
        await asyncio.sleep(period)
        samples.append(loop.time() - before - period)


async def bench_launch(
    seconds: float, *, noise_tasks: int = 0, noise_ms: float = 0.0, lockstep: bool = False
) -> dict[str, float]:
    """``lockstep``: every lane armed at once, so launches come in waves of one per origin
    (hundreds per loop turn: the scheduler's own CPU, with the loop's wake-ups amortised)."""
    loop = asyncio.get_running_loop()
    limiter = MemoryLimiter()
    clocks = KeyClocks(limiter, load(None, []).limits.policy())
    stats = CrawlStats()
    kind = BenchKind()
    kind.answer_time = noise_tasks > 0
    tasks: set[asyncio.Task[None]] = set()
    scheduler: Scheduler[Any, Any] = Scheduler(
        kind,  # type: ignore[arg-type]
        clocks=clocks,
        timer=LoopTimer(loop),
        stats=stats,
        max_in_flight=10_000,
        tasks=tasks,
    )
    booker = asyncio.create_task(scheduler.booker())
    lanes = [BenchLane(site_name(n), origin_name(n % ORIGINS)) for n in range(SITES)]
    await asyncio.sleep(0)
    cpu, wall = time.process_time(), time.monotonic()
    stagger = random.Random(3)
    for lane in lanes:
        if lockstep:
            scheduler.arm(lane)
        else:
            # Sites come in over a second (robots.txt answers, refills): no lockstep waves.
            loop.call_later(stagger.uniform(0.0, 1.0), scheduler.arm, lane)
    rng = random.Random(7)
    lags: list[float] = []
    helpers = [asyncio.create_task(_noise(noise_ms / 1000, rng)) for _ in range(noise_tasks)]
    helpers.append(asyncio.create_task(_sample_lag(lags)))
    await asyncio.sleep(seconds)
    cpu, wall = time.process_time() - cpu, time.monotonic() - wall
    scheduler.stop(lanes)
    for task in [booker, *helpers]:
        task.cancel()
    await asyncio.gather(booker, *helpers, *tasks, return_exceptions=True)
    launches = len(kind.late)
    late = sorted(kind.late)
    lags.sort()
    return {
        "loop_lag_p99_ms": round(lags[int(0.99 * (len(lags) - 1))] * 1000, 1) if lags else 0.0,
        "rebook_rate": round(stats.missed_slots / max(1, stats.slots), 4),
        "launches": launches,
        "launches_per_s": round(launches / wall, 1),
        "cpu_us_per_launch": round(cpu / max(1, launches) * 1e6, 2),
        "slots": stats.slots,
        "missed_slots": stats.missed_slots,
        "lead_refusals": stats.lead_refusals,
        "late_p50_ms": round(statistics.median(late) * 1000, 3) if late else 0.0,
        "late_p99_ms": round(late[int(0.99 * (len(late) - 1))] * 1000, 3) if late else 0.0,
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--bookings", type=int, default=200_000)
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument(
        "--noise-tasks", type=int, default=0, help="tasks burning CPU between loop turns"
    )
    parser.add_argument("--noise-ms", type=float, default=20.0, help="mean CPU chunk, ms")
    parser.add_argument("--launch-only", action="store_true")
    parser.add_argument(
        "--lockstep", action="store_true", help="arm every lane at once (waves of launches)"
    )
    args = parser.parse_args()
    result: dict[str, float] = {}
    if not args.launch_only:
        result |= await bench_booking(args.bookings)
    result |= await bench_launch(
        args.seconds, noise_tasks=args.noise_tasks, noise_ms=args.noise_ms, lockstep=args.lockstep
    )
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
