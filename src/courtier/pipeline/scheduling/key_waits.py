"""Lanes a saturated key refused wait on that key in a line, not each on its own timer.

Why: a refusal (``gcra.Refusal``: the slot would start more than ``max_lead`` ahead) says
when the same booking could succeed, ``not_before``. Every lane the key refused hears much
the same time. Woken each on its own timer, they all ask again at once, one books and the
others are refused again: a key shared by N lanes (a CDN edge serving hundreds of sites'
images, a platform's origin) cost N booking attempts per slot. Measured at 300 simulated
sites: 21 media bookings refused per media slot, a fifth of the event loop's samples.

Rules:
- ``wait(lane, key, not_before)`` puts the lane at the end of ``key``'s line. The line has
  one timer: at the earliest ``not_before`` it was told, it wakes the lane at its head.
- When the woken lane has asked, the line's next lane asks at once unless the line has a
  timer by then. A lane booked by a task (SQLite, PostgreSQL: ``booker.py``) has asked when
  its answer comes back (``answered``), not when it is woken: until then the line waits,
  or every lane of the line would be queued to ask at once, one turn of the loop apart.
  The woken lane either booked, or left (no work left, dropped), or was
  refused again: on the same key it goes back to the head of the line (and the refusal
  arms the line's timer), on another key to the end of that key's line. So a slot costs one
  successful booking and at most one refusal, however many lanes wait, and lanes are served
  in the order they were first refused.
- A lane about to book on a key whose line waits for a later time would only be refused:
  ``busy`` names such a key, and ``join`` puts the lane at the end of its line unasked (the
  limiter is not asked: in memory that is most of a booking's cost, with SQLite or
  PostgreSQL a round trip).
  The lane woken from a line's head is never sent back: its line has no timer while it asks.
- ``cancel()`` on what ``wait`` or ``join`` returned takes the lane out of the line (a
  dropped lane, a stopping crawl); a cancelled lane is skipped, never woken.
- Pure bookkeeping on the injected ``Timer``: nothing here books or sleeps.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

from courtier.pipeline.scheduling.timer import Handle, Timer

L = TypeVar("L")


class KeyWait(Generic[L]):
    """A lane's place in a key's line; ``cancel()`` gives it up."""

    __slots__ = ("cancelled", "lane")

    def __init__(self, lane: L) -> None:
        self.lane = lane
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class _Line(Generic[L]):
    __slots__ = ("asking", "handle", "waits", "when")

    def __init__(self) -> None:
        self.waits: deque[KeyWait[L]] = deque()
        self.handle: Handle | None = None
        self.when = math.inf
        self.asking: L | None = None
        """The lane woken from this line's head, while it asks."""


class KeyWaits(Generic[L]):
    """The lines of refused lanes, one per saturated key (see the module rules)."""

    def __init__(self, timer: Timer, wake: Callable[[L], bool]) -> None:
        self.timer = timer
        self.wake = wake
        """Called with the lane at a line's head when its turn comes: it asks again. True:
        its ask is still out (queued for a booker): ``answered`` says when it is back."""
        self._lines: dict[str, _Line[L]] = {}
        self._asking: dict[int, str] = {}
        """id(lane) -> the line whose head it is while its ask is out."""

    def wait(self, lane: L, key: str, not_before: float) -> KeyWait[L]:
        line = self._lines.get(key)
        if line is None:
            line = self._lines[key] = _Line()
        place = KeyWait(lane)
        if line.asking is lane:
            line.waits.appendleft(place)  # refused again on its turn: it keeps its place
        else:
            line.waits.append(place)
        if not_before < line.when:
            self._arm(key, line, not_before)
        return place

    def busy(self, keys: Iterable[str], now: float) -> str | None:
        """One of ``keys`` whose line waits for a later time than ``now``, or None. A lane
        about to book on it would only be refused: it joins the line instead (``join``)."""
        lines = self._lines
        for key in keys:
            line = lines.get(key)
            if line is not None and line.handle is not None and line.when > now:
                return key
        return None

    def lined(self, key: str) -> bool:
        """``key`` has a line (lanes it refused, waiting or asking in turn)."""
        return key in self._lines

    def join(self, lane: L, key: str) -> KeyWait[L]:
        """``lane`` at the end of ``key``'s line (``busy`` said it has one), without asking."""
        place = KeyWait(lane)
        self._lines[key].waits.append(place)
        return place

    def waiting(self) -> int:
        """Lanes in a line (cancelled places not counted)."""
        return sum(1 for line in self._lines.values() for w in line.waits if not w.cancelled)

    def lines(self) -> int:
        return len(self._lines)

    def _arm(self, key: str, line: _Line[L], when: float) -> None:
        if line.handle is not None:
            line.handle.cancel()
        line.when = when
        line.handle = self.timer.call_at(when, self._turn, key)

    def _turn(self, key: str) -> None:
        line = self._lines.get(key)
        if line is None:
            return
        line.handle, line.when = None, math.inf
        waits = line.waits
        while waits:
            place = waits.popleft()
            if not place.cancelled:
                place.cancelled = True  # woken: this place is used up
                line.asking = place.lane
                pending = False
                try:
                    pending = self.wake(place.lane)
                finally:
                    if not pending:
                        line.asking = None
                if pending:
                    self._asking[id(place.lane)] = key
                    return  # the line moves on when the answer comes (``answered``)
                break
        self._next(key, line)

    def answered(self, lane: L) -> None:
        """The ask of ``lane``, woken from a line and booked later (``wake`` returned True),
        is answered: booked, refused (``wait`` kept its place) or given up. A lane that was
        not asking for a line is ignored."""
        key = self._asking.pop(id(lane), None)
        line = None if key is None else self._lines.get(key)
        if key is None or line is None or line.asking is not lane:
            return
        line.asking = None
        self._next(key, line)

    def _next(self, key: str, line: _Line[L]) -> None:
        """After an ask: a refusal armed the line again; otherwise the next asks now."""
        waits = line.waits
        while waits and waits[0].cancelled:
            waits.popleft()
        if not waits:
            if line.handle is None:
                del self._lines[key]
        elif line.handle is None:
            self._arm(key, line, self.timer.now())
