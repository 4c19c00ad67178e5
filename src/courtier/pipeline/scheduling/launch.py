"""The two calls a start hands its running work, each effective once.

- ``Answered``: the server is done with the request, so the lane's place in flight is free
  (the scheduler arms it again at once).
- ``Detach``: the work no longer holds the crawl's place (``max_in_flight``).
- ``Sent``: the request's headers went out at a time; the next start on the same shared
  keys is spaced from it (``send_spacing``). Work that ends without sending gives its keys
  back (``give_up``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic

from courtier.pipeline.scheduling.lanes import L
from courtier.pipeline.scheduling.send_spacing import SITE, SendSpacing
from courtier.politeness.gcra import Limit, Slot

if TYPE_CHECKING:
    from courtier.pipeline.scheduling.scheduler import Scheduler


class Answered(Generic[L]):
    """``Launch.answered`` of one start: gives the lane's place in flight back, once."""

    __slots__ = ("done", "lane", "scheduler")

    def __init__(self, scheduler: Scheduler[L, Any], lane: L) -> None:
        self.scheduler = scheduler
        self.lane = lane
        self.done = False

    def give_back(self) -> bool:
        if self.done:
            return False
        self.done = True
        self.lane.sched.in_flight -= 1
        return True

    def __call__(self) -> None:
        if self.give_back():
            self.scheduler.rearm(self.lane)


class Detach:
    """``Launch.detach`` of one start: gives the crawl's place back, once."""

    __slots__ = ("done", "scheduler")

    def __init__(self, scheduler: Scheduler[Any, Any]) -> None:
        self.scheduler = scheduler
        self.done = False

    def give_back(self) -> bool:
        if self.done:
            return False
        self.done = True
        self.scheduler.in_flight -= 1
        return True

    def __call__(self) -> None:
        if self.give_back():
            self.scheduler.capacity_freed()


class Sent:
    """``Launch.sent`` of one start: its keys learn when it went out, once."""

    __slots__ = ("done", "keys", "limits", "slot", "spacing")

    def __init__(
        self,
        spacing: SendSpacing,
        slot: Slot,
        limits: tuple[Limit, ...] = (),
        keys: tuple[str, ...] | None = None,
    ) -> None:
        """``limits``: what the slot was booked on (its site key's interval spaces the next
        start there); ``keys``: the slot's, and those its lane moved to (``moved_keys``)."""
        self.spacing = spacing
        self.slot = slot
        self.limits = limits
        self.keys = slot.keys if keys is None else keys
        self.done = False
        spacing.launched(self.keys)

    def __call__(self, at: float) -> None:
        if not self.done:
            self.done = True
            booked = {
                limit.key: limit.params.interval
                for limit in self.limits
                if limit.key.startswith(SITE)
            }
            self.spacing.sent(self.keys, self.slot.cost, at, spacing=booked)

    def give_up(self) -> None:
        """The work ended: a request that never went out frees its keys."""
        if not self.done:
            self.done = True
            self.spacing.not_sent(self.keys)
