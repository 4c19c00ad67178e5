"""The scheduler's booker: lanes a limiter cannot book in this thread, booked in batches.

The scheduler's (``scheduler.py``) part for SQLite and PostgreSQL limiters. One task books
every lane queued since its last turn in one ``KeyClocks.book_many``, in queue order, as that
many bookings one after another: on PostgreSQL one round trip books them all. One round trip
per lane spent more of a worker's CPU than the rest of its request (psycopg, the event loop
and the socket, per booking), and lanes queued behind each other's round trips.

A lane takes its places in the start gates when it is queued (``Scheduler._book_now``), not
here: the ready line moves on only as far as the gates let it, so a crowd of ready lanes is
never queued whole to be held back again lane by lane each time the gate reopens.

A lane waiting for its own time (its spacing, a backoff) is queued ``BOOK_AHEAD`` before it
and booked as of then (``BookingRequest.start_after``: the slot starts no sooner, and the
keys' clocks run from there, as if it had been booked at that moment). The round trip goes
``BOOK_MARGIN`` before the earliest such time in the queue, at once when a lane may start
now: the answer is back before the lane may start, where a booking made at its time had
started it a round trip late, and the lanes due in between share the trip (most lanes of a
crawl wait for their own spacing between two requests: one round trip each had been ~1.3
lanes per trip on a two-worker fleet).

Each lane's answer is handled as a single booking's would be: a slot is timed, a refusal
joins its key's line, ``LeaseLost`` drops the lane (its shard is gone); a batch the limiter
could not take (``LimiterUnavailable``: nothing was booked) asks again a second later.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections import deque
from collections.abc import Callable, Iterable
from typing import Generic

from courtier.pipeline.scheduling.clocks import KeyClocks
from courtier.pipeline.scheduling.key_waits import KeyWaits
from courtier.pipeline.scheduling.lane_moves import LaneMoves
from courtier.pipeline.scheduling.lanes import L, LaneKind, Phase, W
from courtier.pipeline.scheduling.timer import Timer, wait_until
from courtier.pipeline.stats import CrawlStats
from courtier.politeness.gcra import Booking, Limit, Refusal
from courtier.politeness.limiter.base import (
    BookingRequest,
    BookingResult,
    LeaseLost,
    LimiterUnavailable,
)

log = logging.getLogger(__name__)

BOOKING_BATCH = 256
"""Most lanes booked in one ``book_many`` (one statement on PostgreSQL)."""
BOOK_AHEAD = 0.05
"""Seconds before its own time (its spacing, a backoff) a lane is booked, as of that time:
the round trip is made before the lane may start, not after, and lanes due within a few
hundredths of a second of each other share one."""
BOOK_MARGIN = 0.02
"""Seconds before the earliest time of the lanes queued that their round trip is sent (its
answer back before any of them may start)."""
BOOK_GATHER = 0.03
"""Seconds a booking whose slot lies ahead anyway (a lane woken in a saturated key's line,
its lead away) or that nothing hurries (media: ``LaneKind.book_wait``) waits for others."""


class BatchBooker(LaneMoves[L], Generic[L, W]):
    kind: LaneKind[L, W]
    clocks: KeyClocks
    key_waits: KeyWaits[L]
    timer: Timer
    stats: CrawlStats
    stopping: bool
    on_lease_lost: Callable[[L], None] | None
    _to_book: deque[L]
    _booker_wake: asyncio.Event
    booker_due: float
    """When the booker's next round trip goes (inf: nothing queued; -inf: one is out)."""

    def _join_line(self, lane: L, limits: tuple[Limit, ...], now: float) -> bool:
        raise NotImplementedError

    def _line(self, key: str, lead: float) -> str:
        raise NotImplementedError

    def _booked(self, lane: L, booking: Booking, booked_at: float, *, at_once: bool) -> None:
        raise NotImplementedError

    async def booker(self) -> None:
        """Book queued lanes, a batch at a time (run as one task for the whole crawl)."""
        wake = self._booker_wake
        while not self.stopping:
            send_at = self._send_at()
            if send_at > self.timer.now():
                # Nothing queued must go yet: lanes queued meanwhile join the trip, and only
                # one that must go sooner wakes the booker (``booker_due``).
                self.booker_due = send_at
                if send_at == math.inf:
                    await wake.wait()
                else:
                    await wait_until(self.timer, wake, send_at)
                wake.clear()
                continue
            self.booker_due = -math.inf  # a trip is out: lanes queued meanwhile go next
            batch = self._batch()
            if not batch:
                continue
            try:
                results = await self.clocks.book_many([request for _, _, request in batch])
            except LimiterUnavailable:  # said once by the limiter; nothing was booked
                self.stats.limiter_unavailable += len(batch)
                self._retry_later(lane for lane, _, _ in batch)
                continue
            except Exception:
                log.exception("booking %d lanes failed; they are tried again", len(batch))
                self.stats.internal_errors += 1
                self._retry_later(lane for lane, _, _ in batch)
                continue
            for (lane, booked_at, request), result in zip(batch, results, strict=True):
                self._answered(lane, booked_at, request.limits, result)
                self.key_waits.answered(lane)  # after a refusal kept its place in line

    def _send_at(self) -> float:
        """When the queued lanes' round trip goes: the earliest any of them must go by."""
        return min((lane.sched.send_by for lane in self._to_book), default=math.inf)

    def _batch(self) -> list[tuple[L, float, BookingRequest]]:
        """The queued lanes that still ask to book, with what each books (oldest first).

        One lane per key that has a line: a line's lanes ask in turn, each after the answer
        to the one before (``key_waits``), so the next waits for the next batch, where it
        joins the line unasked if the first was refused."""
        batch: list[tuple[L, float, BookingRequest]] = []
        asking: set[str] = set()
        later: list[L] = []
        while self._to_book and len(batch) < BOOKING_BATCH:
            lane = self._to_book.popleft()
            work = lane.sched.work
            if lane.sched.phase is not Phase.BOOKING or work is None:
                self.key_waits.answered(lane)  # dropped meanwhile
                continue
            try:
                limits, cost = self.kind.booking(lane, work)
                booked_at = self.timer.now()
                if self._join_line(lane, limits, booked_at):
                    self.key_waits.answered(lane)
                    continue
                lead = self.kind.max_lead(lane)
                lines = {self._line(limit.key, lead) for limit in limits}
                lines = {line for line in lines if self.key_waits.lined(line)}
            except Exception:
                log.exception("booking for %s failed; it is tried again", lane.name)
                self.stats.internal_errors += 1
                self._wait(lane, self.timer.now() + 1.0)
                self.key_waits.answered(lane)
                continue
            if lines & asking:
                later.append(lane)
                continue
            asking |= lines
            request = BookingRequest(
                limits, cost, lead, fence=lane.fence, start_after=lane.sched.start_after
            )
            batch.append((lane, booked_at, request))
        self._to_book.extendleft(reversed(later))
        return batch

    def _retry_later(self, lanes: Iterable[L]) -> None:
        for lane in lanes:
            if lane.sched.phase is Phase.BOOKING:
                self._wait(lane, self.timer.now() + 1.0)
            self.key_waits.answered(lane)

    def _answered(
        self, lane: L, booked_at: float, limits: tuple[Limit, ...], result: BookingResult
    ) -> None:
        """One lane's answer from its batch."""
        state = lane.sched
        if isinstance(result, LeaseLost):
            if state.phase is Phase.DROPPED:
                return  # dropped with its shard, for an earlier lane of the batch
            log.warning("%s: its shard lease is lost; it stops here", lane.name)
            self.drop(lane)
            if self.on_lease_lost is not None:
                self.on_lease_lost(lane)
            return
        if self.stopping or state.phase is not Phase.BOOKING:
            return
        if isinstance(result, Refusal) and self.moved(lane, limits):
            # Its site moved to another origin while the booking was out (``rebook`` passes
            # over a lane booking): it asks again on its new keys, not in the old key's line
            # (a CDN edge's, minutes long, that its tenants had just left).
            state.moved_keys = ()
            state.phase = Phase.IDLE
            self._arm(lane, at_once=False)
            return
        state.limits = limits
        self._booked(lane, result, booked_at, at_once=False)
        if not isinstance(result, Refusal):
            self.moved(lane, limits)  # a slot on keys its site left is kept, as ``rebook``'s
