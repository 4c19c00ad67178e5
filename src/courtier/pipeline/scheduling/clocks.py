"""``KeyClocks``: the one owner of every limit key's state in a crawl.

Rules:
- Every write to a limit key goes through here: bookings (GCRA slots), floors (a pause, a
  Retry-After, an origin stopped after a run of errors, a clock carried over when a site's
  origin id changes, floors restored from the last run) and late charges (a response dearer
  than it was booked, a cache miss nobody expected). Nothing else in the engine holds a TAT.
- The state lives behind the ``Limiter`` protocol: in memory (the embedded default), in the
  store's SQLite file, or in PostgreSQL, chosen by ``[crawl] limiter``; the engine cannot
  tell which. Times are the engine's clock (``Timer.now``), which the limiter books on.
- Floors are durable before they matter: a pause (Retry-After, backoff, an origin held) is
  written through the store before it is raised, so a crash right after the answer that
  asked for it cannot lose it; the request that depends on it comes later.
- Floors that outlive a run: at a stop the engine saves, per key, the time before which
  nothing may start on it (``floors``), through the frontier store; the next run raises its
  keys to them before its first booking (``restore``). A TAT also holds slots booked for
  requests this run will never make, so a saved floor keeps only what requests already
  started demand: at most one request of the dearest class on an origin, one image on a
  media key, and each site's own next start and pause (given by its lane).
- Real sends (``send_spacing``): when the last request sent on a shared key has been out for
  its charge, kept in the limiter beside the key's TAT as ``sent:<key>``, so every worker
  of a fleet sees every worker's late sends. In memory it is written and read in this
  thread; a shared limiter is written in coalesced batches a moment after the send and
  read before a start that depends on it (``refresh_sent``: the starts that ask while a
  read is out share the next one).
- A send on a key another worker may send on is written at once. What only this worker
  books (the site floor after every request, a real send on a private origin: ``urgent``
  false) waits up to ``PRIVATE_GATHER`` for more, or rides in the next urgent write: the
  others read it only for a robots.txt hop, whose slot the booking already spaces, so the
  wait hides a send's lateness from a rare hop for a moment, as an unsent hop's is hidden.
  A hop's own booking here writes the floors pending on its keys first; a stop and a shard
  given back write all of them.
- A shared limiter whose server cannot be reached (``LimiterUnavailable``) books nothing,
  so nothing is sent. A floor or a late charge that could not be written meanwhile is kept
  here and written before the next booking: no slot is booked past a pause or a charge the
  limiter has not heard of.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from courtier.pipeline.scheduling.timer import Timer, wait_until
from courtier.politeness.gcra import Booking, Limit
from courtier.politeness.keys import KeyType, LimitPolicy
from courtier.politeness.limiter.base import (
    BookingRequest,
    BookingResult,
    Fence,
    Limiter,
    LimiterError,
    LimiterUnavailable,
)
from courtier.politeness.limiter.memory import MemoryLimiter

log = logging.getLogger(__name__)

Persist = Callable[[Mapping[str, float]], Awaitable[None]]

SENT: str = "sent:"
"""Prefix of the limiter entry that holds when a key's last real send has been out for its
charge (not a limit key: nothing books on it)."""
PRIVATE_GATHER = 0.25
"""Seconds a write of what only this worker books waits for more (a shared limiter): one
round trip per request cost a fleet worker about a tenth of its CPU (``bench_rebook.py
--store postgresql --workers 2``)."""


class KeyClocks:
    def __init__(
        self,
        limiter: Limiter,
        policy: LimitPolicy,
        *,
        persist: Persist | None = None,
        timer: Timer | None = None,
    ) -> None:
        """``persist`` makes a floor durable (the store): it is awaited before the floor is
        raised, so a pause survives a crash before any request that depends on it.
        ``timer``: the engine's clock, which times ``PRIVATE_GATHER`` (None: every write at
        once)."""
        self.limiter = limiter
        self.timer = timer
        self.policy = policy
        self.persist = persist
        self.booked_keys: set[str] = set()
        """Keys this process has written (what a stop saves floors for)."""
        self._memory = limiter if isinstance(limiter, MemoryLimiter) else None
        self._sent_seen: dict[str, float] = {}
        """Shared limiter: the latest ready time known per key (own sends and reads)."""
        self._sent_unwritten: dict[str, float] = {}
        self._floors_pending: dict[str, float] = {}
        self._writer: asyncio.Task[None] | None = None
        """Writes real sends and the floors they raise, gathered: one round trip for all
        that were asked for while the last one was out (or, none urgent, for a moment)."""
        self._write_now = asyncio.Event()
        """Something pending is urgent: the writer stops gathering."""
        self._next_read: _SentRead | None = None
        """The read of other workers' sends that launches asking now join."""
        self._read_turn = asyncio.Lock()
        self._readers: set[asyncio.Task[None]] = set()
        self._floors_unwritten: dict[str, float] = {}
        self._charges_unwritten: dict[str, tuple[Limit, float]] = {}
        """Floors and late charges (costs summed per key) a shared limiter could not take
        while it was unreachable."""

    async def book(
        self, limits: Sequence[Limit], cost: float, *, max_lead: float, fence: Fence | None = None
    ) -> Booking:
        """A slot (or refusal); ``LeaseLost`` when ``fence`` no longer holds (scale-out);
        ``LimiterUnavailable`` while a shared limiter cannot be reached."""
        if self._floors_unwritten or self._charges_unwritten:
            await self._write_kept()
        pending = self._floors_pending
        if pending and any(limit.key in pending for limit in limits):
            await self.flush_sent()  # a hop onto a site that just sent: its floor first
        self.booked_keys.update(limit.key for limit in limits)
        return await self.limiter.book(limits, cost, max_lead=max_lead, fence=fence)

    async def book_many(self, requests: Sequence[BookingRequest]) -> list[BookingResult]:
        """``book`` for each request, in order, in one call to the limiter (its answers in
        the requests' places: a slot, a refusal or ``LeaseLost``)."""
        if self._floors_unwritten or self._charges_unwritten:
            await self._write_kept()
        for request in requests:
            self.booked_keys.update(limit.key for limit in request.limits)
        return await self.limiter.book_many(requests)

    async def _write_kept(self) -> None:
        """What the limiter could not take while it was unreachable, now (or it raises)."""
        floors, self._floors_unwritten = self._floors_unwritten, {}
        try:
            await self.limiter.raise_floor(floors)
        except LimiterUnavailable:
            self._keep_floors(floors)
            raise
        while self._charges_unwritten:
            key, (limit, cost) = next(iter(self._charges_unwritten.items()))
            await self.limiter.charge(limit, cost)  # raises while it is still down
            del self._charges_unwritten[key]
        log.warning("floors and charges kept while the limiter was unreachable are written")

    def _keep_floors(self, floors: Mapping[str, float]) -> None:
        kept = self._floors_unwritten
        for key, when in floors.items():
            kept[key] = max(when, kept.get(key, -math.inf))

    @property
    def books_now(self) -> bool:
        """``book_now`` books (the limiter books in this thread)."""
        return isinstance(self.limiter, MemoryLimiter)

    def book_now(
        self, limits: Sequence[Limit], cost: float, *, max_lead: float, fence: Fence | None = None
    ) -> Booking | None:
        """``book`` without a coroutine when the limiter books in this thread (memory);
        None when it cannot (SQLite, PostgreSQL): await ``book`` instead."""
        limiter = self.limiter
        if not isinstance(limiter, MemoryLimiter):
            return None
        booked = self.booked_keys
        for limit in limits:
            booked.add(limit.key)
        return limiter.book_now(limits, cost, max_lead=max_lead, fence=fence)

    # -- real sends ----------------------------------------------------------------------

    @property
    def sends_shared(self) -> bool:
        """Real sends are recorded in storage other workers read (refresh before judging)."""
        return self._memory is None

    def sent_ready(self, key: str) -> float | None:
        """When the last request sent on ``key`` has been out for its charge, as known here."""
        if self._memory is not None:
            return self._memory.tat_now(SENT + key)
        return self._sent_seen.get(key)

    def note_sent(self, ready: Mapping[str, float], *, urgent: bool = True) -> None:
        """Requests went out: nothing more on each key before its ready time (only later).
        ``urgent``: another worker may send on one of the keys (written at once)."""
        memory = self._memory
        if memory is not None:
            for key, when in ready.items():
                memory.raise_key_now(SENT + key, when)
            return
        seen, unwritten = self._sent_seen, self._sent_unwritten
        for key, when in ready.items():
            if when > seen.get(key, -math.inf):
                seen[key] = when
                unwritten[key] = when
        if unwritten:
            self._write_soon(urgent)

    def _write_soon(self, urgent: bool) -> None:
        if urgent:
            self._write_now.set()
        if self._writer is None:
            self._writer = asyncio.get_running_loop().create_task(self._write_pending())

    async def _write_pending(self) -> None:
        """Real sends (``note_sent``) and floors (``raise_floors_soon``), in one write: a
        request's send asks for both at once."""
        timer = self.timer
        try:
            while self._sent_unwritten or self._floors_pending:
                if timer is not None:
                    await wait_until(timer, self._write_now, timer.now() + PRIVATE_GATHER)
                self._write_now.clear()
                sent, self._sent_unwritten = self._sent_unwritten, {}
                floors, self._floors_pending = self._floors_pending, {}
                batch = floors | {SENT + key: when for key, when in sent.items()}
                try:
                    await self.limiter.raise_floor(batch)
                except LimiterUnavailable as error:
                    self._keep_floors(floors)  # written before the next booking
                    if sent:  # this worker still holds them; others wait less
                        log.warning("real sends not shared with other workers: %s", error)
                except LimiterError as error:
                    log.warning("real sends and their floors not written: %s", error)
        finally:
            self._writer = None

    async def refresh_sent(self, keys: Iterable[str]) -> None:
        """Learn other workers' real sends on ``keys`` (a shared limiter; else nothing).

        Every launch that asks while a read is out joins the next read, sent as soon as
        that one is back: each caller's answer is read after it asked, and a burst of
        launches costs one round trip instead of one each."""
        if self._memory is not None:
            return
        read = self._next_read
        if read is None:
            read = self._next_read = _SentRead(asyncio.get_running_loop().create_future())
            task = asyncio.get_running_loop().create_task(self._read_sent(read))
            self._readers.add(task)
            task.add_done_callback(self._readers.discard)
        read.keys.update(keys)
        await asyncio.shield(read.done)

    async def _read_sent(self, read: _SentRead) -> None:
        try:
            async with self._read_turn:  # one read out at a time; the next gathers meanwhile
                if self._next_read is read:
                    self._next_read = None
                keys = sorted(read.keys)
                found = await self.limiter.tats([SENT + key for key in keys])
            seen = self._sent_seen
            for key in keys:
                when = found.get(SENT + key)
                if when is not None and when > seen.get(key, -math.inf):
                    seen[key] = when
        except LimiterError as error:
            log.warning("other workers' real sends unknown: %s", error)
        finally:
            if not read.done.done():
                read.done.set_result(None)

    async def flush_sent(self) -> None:
        """Wait until every recorded send, and every floor it raised, is written (a stop)."""
        while self._writer is not None:
            self._write_now.set()
            await asyncio.shield(self._writer)

    # -- floors ----------------------------------------------------------------------------

    async def raise_floors(self, floors: Mapping[str, float], *, durable: bool = True) -> None:
        """Nothing starts on each key before its floor (a TAT only ever moves later).

        A booking may start a key's burst tolerance before its TAT, so the TAT is set that
        much past the floor: a floor is hard on a bucket too."""
        wanted = {
            key: when + self._burst(key) for key, when in floors.items() if math.isfinite(when)
        }
        if wanted:
            if durable and self.persist is not None:
                await self.persist(wanted)
            self.booked_keys.update(wanted)
            try:
                await self.limiter.raise_floor(wanted)
            except LimiterUnavailable:
                self._keep_floors(wanted)  # written before the next booking

    def raise_floors_soon(self, floors: Mapping[str, float]) -> None:
        """``raise_floors`` (not durable) without waiting for it: a shared limiter gets the
        floors asked for while a write is out in the next write, one round trip for all of
        them (a real send's floor on its site key, after every request)."""
        wanted = {
            key: when + self._burst(key) for key, when in floors.items() if math.isfinite(when)
        }
        if not wanted:
            return
        self.booked_keys.update(wanted)
        if self._memory is not None:
            self._memory.raise_floor_now(wanted)
            return
        pending = self._floors_pending
        for key, when in wanted.items():
            pending[key] = max(when, pending.get(key, -math.inf))
        self._write_soon(False)

    def _burst(self, key: str) -> float:
        try:
            return self.policy.params_of(key).burst
        except ValueError:
            return 0.0

    async def charge(self, limit: Limit, cost: float) -> None:
        """Spend ``cost`` more on ``limit`` after the fact; never credited."""
        self.booked_keys.add(limit.key)
        try:
            await self.limiter.charge(limit, cost)
        except LimiterUnavailable:
            _limit, kept = self._charges_unwritten.get(limit.key, (limit, 0.0))
            self._charges_unwritten[limit.key] = (limit, kept + cost)

    async def carry(
        self, old_key: str, new_key: str, cap: float | None = None, spent: float = 0.0
    ) -> None:
        """A site moving to another origin brings the old origin's clock along: a fresh key
        must not let it start early. ``cap``: no later than this (the old key is shared by
        other sites, whose bookings the moving site did not make). ``spent``: seconds of the
        new key's clock its recent requests took, added on top of the new key's own bookings:
        they went to the servers it joins, whose clock never saw them."""
        if old_key == new_key:
            return
        tats = await self.limiter.tats([old_key, new_key])
        floors = []
        old = tats.get(old_key)
        if old is not None:
            floors.append(old if cap is None else min(old, cap))
        if spent > 0:
            now = self.limiter.clock()
            floors.append(max(tats.get(new_key, now), now) + spent)
        if floors:
            await self.raise_floors({new_key: max(floors)})

    async def restore(self, floors: Mapping[str, float]) -> int:
        await self.raise_floors(floors, durable=False)
        return len(floors)

    async def floors(
        self,
        now: float,
        *,
        dearest: float,
        image: float,
        origin_interval: Callable[[str], float],
        media_spacing: Callable[[str], float],
        owned_sites: set[str],
    ) -> dict[str, float]:
        """Per key still ahead of ``now``, the time before which nothing may start on it.

        ``origin_interval(name)``: the origin's seconds per cost unit as this run left it;
        ``media_spacing(key)``: a media host's ``site:`` spacing (its Crawl-delay). Seed
        sites' keys (``owned_sites``) are left to their lanes, which know their spacing.
        """
        ahead = await self.limiter.tats(sorted(self.booked_keys))
        floors: dict[str, float] = {}
        for key, tat in ahead.items():
            if tat <= now:
                continue
            kind, _, name = key.partition(":")
            if kind == KeyType.ORIGIN.value:
                floors[key] = min(tat, now + dearest * origin_interval(name))
            elif kind != KeyType.SITE.value or name not in owned_sites:
                try:
                    params = self.policy.params_of(key)
                except ValueError:
                    continue
                spacing = max(params.interval, media_spacing(key))
                floors[key] = min(tat, now + image * spacing)
        return floors


@dataclass(slots=True)
class _SentRead:
    """One read of other workers' sends, for every launch that joined it."""

    done: asyncio.Future[None]
    keys: set[str] = field(default_factory=set)
