"""One scheduler for every lane: arm -> book -> launch -> finish, the rebook and the gate.

Theory of operation:
- A *lane* is a queue of work that shares its most specific limit key: a seed site (one
  request in flight, its leased URLs, robots.txt first) or a media key (a bucket, a CDN
  customer's misses, an image-service customer; a few in flight). A ``LaneKind`` says how
  lanes of one kind choose their next work, when they themselves allow it to start, which
  keys it is booked on and how it runs. Everything else is here, once.
- ``arm``: a lane with room in flight and work asks its kind for the work (kept until it
  starts: a refusal or a missed slot never loses it), waits for its own time (spacing,
  backoff, an unreachable robots.txt) on a timer, then for capacity, then is booked.
- Capacity gates *booking*, and counts requests in flight (a fetch counts until its answer
  is handled): a slot once booked is always honoured, because a forfeited slot still spends
  its keys (an origin's budget among them). In flight may therefore exceed the cap by the
  slots booked when it was reached.
- The start gate (``gates.start``) caps bookings a second over the scheduler: a crowd of
  lanes due at one instant (every seed's robots.txt at the start) waits unbooked among the
  ready ones and books as it reopens, instead of starting together in one turn of the loop.
  A lane that has never started a request also passes the first-contact gate
  (``gates.first``: a new host's first request costs the loop most). The ready lanes are one
  line: while first contacts wait in it (the start's few seconds), a lane that has started
  and comes after them waits its turn too; once none waits, only the start gate applies.
  One line on purpose: with a second line for lanes that have started, their next
  requests went at the start gate's rate during the start, and the loop's stalls in the
  first 8 s at 2,000 sites doubled
  (`python bench/bench_rebook.py --sites 2000 --page-bytes 6000 --duration 40`,
  `python bench/bench_stalls.py`).
- Booking: a limiter that books in this thread (memory) is booked at once, in ``arm``; any
  other ``Limiter`` backend is booked by one task (``booker``, ``booker.py``) in batches,
  each lane ``BOOK_AHEAD`` before its own time, as of that time (``start_after``).
  A booking refused for maximum lead consumed nothing and is asked again at its
  ``not_before``; work for a saturated key waits unbooked, in that key's line
  (``key_waits``: the lanes it refused ask again one at a time, not all at once).
- A lane's place in flight (``max_in_flight(lane)``: one connection per site) is taken at
  the start and given back when the server has answered (``Launch.answered``), not when the
  work ends: under load, keeping, parsing and storing a page took seconds during which the
  site, with its budgets free, could not start its next request.
- ``_launch`` fires at the slot's start. A wake-up after the slot's deadline forfeits the
  slot (it stays consumed, so late starts never bunch) and books again: the rebook rate.
  This holds for every kind of work: pages, robots.txt, sitemaps and media.
- At its real start, work passes ``admit`` (the crawl's budgets, ``budget.py``): refused, it
  never starts and the lane chooses again.
- A lane the scheduler itself re-arms (its own timer woke it, work finished, capacity came
  back) whose slot is open the moment it is booked starts in that same callback: a timer
  that already fired late must not go round the event loop again for a slot that is open
  (under load that second trip alone can outlast the slot). ``arm`` from outside only
  books, so lanes armed together all book before any of them takes capacity.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections import deque
from collections.abc import Callable
from functools import partial
from typing import Generic

from courtier.pipeline.scheduling.booker import (
    BOOK_AHEAD,
    BOOK_GATHER,
    BOOK_MARGIN,
    BatchBooker,
)
from courtier.pipeline.scheduling.clocks import KeyClocks
from courtier.pipeline.scheduling.key_waits import KeyWaits
from courtier.pipeline.scheduling.lanes import L, LaneKind, Launch, Phase, W, Wait
from courtier.pipeline.scheduling.launch import Answered, Detach, Sent
from courtier.pipeline.scheduling.ready_line import ReadyLine
from courtier.pipeline.scheduling.send_spacing import SendSpacing
from courtier.pipeline.scheduling.start_gate import StartGates
from courtier.pipeline.scheduling.timer import Handle, Timer
from courtier.pipeline.stats import CrawlStats
from courtier.politeness.gcra import Limit, Refusal, Slot

log = logging.getLogger(__name__)


class Scheduler(BatchBooker[L, W], Generic[L, W]):
    def __init__(
        self,
        kind: LaneKind[L, W],
        *,
        clocks: KeyClocks,
        timer: Timer,
        stats: CrawlStats,
        max_in_flight: int,
        tasks: set[asyncio.Task[None]],
        on_lease_lost: Callable[[L], None] | None = None,
        spacing: SendSpacing | None = None,
        gates: StartGates | None = None,
    ) -> None:
        """``gates`` None: no start gate, no first-contact gate."""
        self.kind = kind
        self.clocks = clocks
        self.timer = timer
        self.stats = stats
        self.max_in_flight = max_in_flight
        self.tasks = tasks
        self.on_lease_lost = on_lease_lost
        self.spacing = spacing or SendSpacing(clocks)
        """Real sends per shared key: one for the crawl (pages, media and robots.txt hops
        book the same origins), else this scheduler's own."""
        self.in_flight = 0
        self.stopping = False
        self.admit: Callable[[L, W], bool] | None = None
        """Asked at each real start (the crawl's budgets): False, the work does not start,
        its slot stays consumed, and the lane chooses again (the gate saw to the work)."""
        self._to_book: deque[L] = deque()
        self._booker_wake = asyncio.Event()
        self.booker_due = math.inf
        self.key_waits: KeyWaits[L] = KeyWaits(timer, self._wake_in_line)
        """Lanes a saturated key refused, in that key's line (``key_waits``)."""
        self.ready: ReadyLine[L] = ReadyLine(timer, gates, self._release)
        """Lanes waiting for capacity or the start gates, unbooked (``ready_line``)."""

    # -- arming -------------------------------------------------------------------------

    def arm(self, lane: L) -> None:
        """Move the lane towards its next start, if it has work and room for it."""
        self._arm(lane, at_once=False)

    def _arm(self, lane: L, *, at_once: bool) -> None:
        """``arm``; ``at_once``: a slot open when it is booked starts in this call."""
        state = lane.sched
        if self.stopping or state.phase is not Phase.IDLE:
            return
        if state.in_flight >= self.kind.max_in_flight(lane):
            return
        now = self.timer.now()
        if state.held_until > now:
            self._hold(lane)
            return
        if state.work is None:
            choice = self.kind.choose(lane, now)
            if choice is None:
                return
            if isinstance(choice, Wait):
                if choice.until is not None:
                    self._wait(lane, choice.until)
                return
            state.work = choice
        earliest = self.kind.not_before(lane, state.work, now)
        ahead = 0.0 if self.clocks.books_now else BOOK_AHEAD
        if earliest - ahead > now:
            # Booked only when the lane itself may start (a round trip's booking a moment
            # before, as of then): a long site pause never holds a slot on a shared key.
            self._wait(lane, earliest - ahead)
            return
        if earliest > now:
            state.start_after, state.send_by = earliest, earliest - BOOK_MARGIN
        else:
            state.start_after, state.send_by = None, now + self.kind.book_wait
        if not self.has_capacity():
            state.phase = Phase.READY
            self.ready.lanes.append(lane)
            return
        state.phase = Phase.BOOKING
        if not self._book_now(lane, at_once=at_once):
            self._to_book.append(lane)
            if state.send_by < self.booker_due:
                self._booker_wake.set()

    def has_capacity(self) -> bool:
        return self.in_flight < self.max_in_flight

    def set_max_in_flight(self, limit: int) -> None:
        """A new bound on the requests in flight (``in_flight.bound_loop``): raised, the
        lanes waiting for a place go now; lowered, what is in flight finishes."""
        self.max_in_flight = max(1, limit)
        self._release()

    def _wait(self, lane: L, until: float) -> None:
        self._waiting(lane, self.timer.call_at(until, self._wake, lane))

    def _waiting(self, lane: L, wake: Handle) -> None:
        """The lane waits for ``wake`` (its own timer, or its place in a key's line)."""
        lane.sched.phase = Phase.WAITING
        lane.sched.timer = wake

    def _wake(self, lane: L) -> None:
        lane.sched.timer = None
        lane.sched.phase = Phase.IDLE
        self._arm(lane, at_once=True)

    def _wake_in_line(self, lane: L) -> bool:
        """``_wake`` for a key's line; True: its booking is queued (the booker answers)."""
        self._wake(lane)
        if lane.sched.phase is not Phase.BOOKING:
            return False
        # Its slot lands its lead ahead (why it waited): the round trip may wait for others.
        lane.sched.send_by = max(lane.sched.send_by, self.timer.now() + BOOK_GATHER)
        return True

    def _release(self) -> None:
        """Capacity freed (or the start gate reopened): ready lanes book, oldest first."""
        ready = self.ready
        while ready.lanes and self.has_capacity() and not self.stopping:
            if ready.shut or not ready.first_may_go(self.timer.now()):
                return  # the gates' own timer releases them
            lane = ready.lanes.popleft()
            if lane.sched.phase is Phase.READY:
                lane.sched.phase = Phase.IDLE
                self._arm(lane, at_once=True)

    # -- booking ------------------------------------------------------------------------

    def _book_now(self, lane: L, *, at_once: bool) -> bool:
        """Book in this call if the limiter allows it (memory); False: leave it to the
        booker. Failures are handled as the booker handles them."""
        state = lane.sched
        assert state.work is not None
        try:
            limits, cost = self.kind.booking(lane, state.work)
            booked_at = self.timer.now()
            if self._join_line(lane, limits, booked_at) or self._held(lane, booked_at):
                return True
            if not self.clocks.books_now:
                return False  # the booker books it, its place in the gates taken here
            booking = self.clocks.book_now(
                limits, cost, max_lead=self.kind.max_lead(lane), fence=lane.fence
            )
        except Exception:
            log.exception("booking for %s failed; it is tried again", lane.name)
            self.stats.internal_errors += 1
            self._wait(lane, self.timer.now() + 1.0)
            return True
        if booking is None:
            return False
        lane.sched.limits = limits
        self._booked(lane, booking, booked_at, at_once=at_once)
        return True

    def _join_line(self, lane: L, limits: tuple[Limit, ...], now: float) -> bool:
        """A key of ``limits`` has lanes waiting for a later time: this one would only be
        refused, so it joins that line unasked (True)."""
        lead = self.kind.max_lead(lane)
        key = self.key_waits.busy((self._line(limit.key, lead) for limit in limits), now)
        if key is None:
            return False
        self.stats.line_joins += 1
        self._waiting(lane, self.key_waits.join(lane, key))
        return True

    def _line(self, key: str, lead: float) -> str:
        """The line of lanes a key refused at one lead: a lane that may book further ahead
        never waits behind one that is refused again and again at a shorter lead (a
        same-origin media host behind its platform's CDN misses)."""
        return key if lead == self.kind.lead else f"{key} lead={lead:g}"

    def _held(self, lane: L, now: float) -> bool:
        """The start gate is shut: the lane waits among the ready ones, unbooked (True).
        Lanes it holds go first, in order, when it reopens."""
        ready = self.ready
        if not ready.shut and ready.pass_gates(lane, now):
            return False
        self.stats.gate_holds += 1
        lane.sched.phase = Phase.READY
        ready.lanes.append(lane)
        if not self.stopping:
            ready.reopen_later(now, ready.gates_of(lane))
        return True

    def _booked(self, lane: L, booking: Slot | Refusal, booked_at: float, *, at_once: bool) -> None:
        state = lane.sched
        if isinstance(booking, Refusal):
            # A saturated key: nothing consumed; the work waits in the key's line until
            # booking can succeed (one lane asks at a time, not every lane the key refused).
            self.stats.lead_refusals += 1
            if not booking.keys:
                self._wait(lane, booking.not_before)
                return
            line = self._line(booking.keys[0], self.kind.max_lead(lane))
            self._waiting(lane, self.key_waits.wait(lane, line, booking.not_before))
            return
        self.stats.slots += 1
        state.slot, state.booked_at, state.moved_keys = booking, booked_at, ()
        state.phase = Phase.BOOKED
        if at_once and booking.start <= self.timer.now():
            self._launch(lane)
        else:
            state.timer = self.timer.call_at(booking.start, self._launch, lane)

    # -- launching ----------------------------------------------------------------------

    def _launch(self, lane: L, *, refreshed: bool = False) -> None:
        state = lane.sched
        state.timer = None
        if self.stopping:
            return
        slot, work = state.slot, state.work
        assert slot is not None and work is not None
        if state.held_until > self.timer.now():  # paused while it booked
            state.slot, state.moved_keys = None, ()
            state.phase = Phase.IDLE
            self._hold(lane)
            return
        # A slot its site kept across a move is spaced on the keys it books on now too.
        keys = slot.keys + state.moved_keys if state.moved_keys else slot.keys
        if not refreshed and self.spacing.needs_refresh(keys):
            # Other workers' real sends on the slot's shared keys are read first.
            task = asyncio.get_running_loop().create_task(
                self._refresh_then_launch(lane, slot, keys)
            )
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
            return
        now = self.timer.now()
        hold = self.spacing.hold_until(keys, now)
        if hold > now and (hold <= slot.deadline or self.spacing.all_spaced(keys)):
            # An earlier request on a shared key went out late: start when it has been out
            # for its charge. Past the slot's deadline only when every key of the slot is
            # spaced from real sends (a page: site and origin), so starting late bunches
            # nothing; a slot with a burst key (media) is forfeited instead.
            self.spacing.holds += 1
            state.timer = self.timer.call_at(hold, self._launch, lane)
            return
        state.slot, state.moved_keys = None, ()
        state.phase = Phase.IDLE
        if slot.is_missed(now) or hold > now:
            if slot.is_missed(now):
                self.stats.missed_slots += 1
            else:  # held past its deadline by a late send on a shared burst-free key
                self.stats.spacing_forfeits += 1
            self.arm(lane)  # the forfeited slot stays consumed: no bunching
            return
        state.work = None
        if self.admit is not None and not self.admit(lane, work):
            self.arm(lane)
            return
        state.launched = True
        state.in_flight += 1
        self.in_flight += 1
        state.last_cost = slot.cost
        self.stats.spacing.started(lane.name, state.limits, slot.cost, state.booked_at, now)
        self.kind.started(lane, work, now)
        answered = Answered(self, lane)
        sent = Sent(self.spacing, slot, state.limits, keys)
        detach = Detach(self)
        launch = Launch(slot, state.booked_at, now, answered, sent, detach)
        task = asyncio.get_running_loop().create_task(self.kind.run(lane, work, launch))
        self.tasks.add(task)
        state.running.add(task)
        task.add_done_callback(partial(self._finished, lane, answered, sent, detach))
        self._arm(lane, at_once=True)

    async def _refresh_then_launch(self, lane: L, slot: Slot, keys: tuple[str, ...]) -> None:
        await self.spacing.refresh(keys)
        if lane.sched.slot is slot and lane.sched.timer is None:
            self._launch(lane, refreshed=True)

    def rearm(self, lane: L) -> None:
        """The lane's place in flight came back: it books (and starts, if its slot is open)."""
        self._arm(lane, at_once=True)

    def capacity_freed(self) -> None:
        """Work gave the crawl's place back before it ended (``Launch.detach``)."""
        self._release()

    def _finished(
        self, lane: L, answered: Answered[L], sent: Sent, detach: Detach, task: asyncio.Task[None]
    ) -> None:
        self.tasks.discard(task)
        lane.sched.running.discard(task)
        answered.give_back()
        sent.give_up()
        detach.give_back()
        if not task.cancelled() and task.exception() is not None:
            log.error("work on %s failed", lane.name, exc_info=task.exception())
            self.stats.internal_errors += 1
        self._arm(lane, at_once=True)
        self._release()

    def stop(self, lanes: list[L]) -> None:
        """No new starts: every timer is cancelled, the booker ends."""
        self.stopping = True
        self._booker_wake.set()
        self.ready.stop()
        for lane in lanes:
            if lane.sched.timer is not None:
                lane.sched.timer.cancel()
                lane.sched.timer = None
