"""Spacing requests that are not a lane's own work: robots.txt redirect hops to a host no
lane of this worker crawls (``lanes.robots_hops``: a hop to a seed site is its lane's work).

Every request's real start raises its site's key (``sent``), so a hop to a host spaces from
the last request that really went there, whoever sent it.

A robots.txt that redirects sends the next request to another host (or the same one): that
request is booked on the keys of the host it goes to, like a page's: the ``site:`` key at
that site's own interval (a seed site's current one, else the configured site interval) and,
when the host's origin is known (a seed site's, an inferred host's, or that of a placed host
sharing one of its addresses), that origin's key. It is sent only inside its slot and, on
an origin key, no sooner than the crawl's last real send there allows (``send_spacing``,
shared with the lanes): robots.txt files that all redirect to one innocent host, or to many
hosts of one platform, cannot make it a target.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable

from courtier.pipeline.scheduling.budget import Budget
from courtier.pipeline.scheduling.clocks import KeyClocks
from courtier.pipeline.scheduling.send_spacing import SendSpacing
from courtier.pipeline.scheduling.timer import Timer, sleep_until
from courtier.pipeline.stats import CrawlStats
from courtier.politeness.gcra import KeyParams, Limit, Refusal
from courtier.politeness.keys import site_key

HOP_COST = 1.0
"""A robots.txt hop costs what a robots.txt request does."""


class HopSlot:
    """A booked hop: its keys, its origin, and what its send tells the shared keys.

    Unlike a lane's launch, a hop is not counted unsent while its fetch resolves and
    connects: it goes to a host no lane may have resolved yet (hostile DNS answers slowly),
    and every start on its origin would wait for it meanwhile. Its real send still spaces
    the next start there; a start that overtakes it is short by at most one robots.txt
    request's charge."""

    __slots__ = ("_spacing", "keys", "origin")

    def __init__(self, keys: tuple[str, ...], origin: str | None, spacing: SendSpacing) -> None:
        self.keys = keys
        self.origin = origin
        self._spacing = spacing

    def sent(self, at: float) -> None:
        """The hop's headers went out at ``at`` (``RequestContext.sent``)."""
        self._spacing.sent(self.keys, HOP_COST, at, launched=False)


class HopBooker:
    def __init__(
        self,
        margin: float,
        clocks: KeyClocks,
        timer: Timer,
        stats: CrawlStats,
        interval_of: Callable[[str], float | None],
        stopping: Callable[[], bool],
        *,
        spacing: SendSpacing | None = None,
        origin_of: Callable[[str, str], Awaitable[str | None]] | None = None,
        origin_limit: Callable[[str], Limit] | None = None,
        budget: Budget | None = None,
    ) -> None:
        """``margin``: seconds added to a site's interval after a real send there
        (``politeness.start_margin``); the site's limits are the clocks' policy."""
        self.margin = margin
        self.clocks = clocks
        self.timer = timer
        self.stats = stats
        self.interval_of = interval_of
        self.stopping = stopping
        self.spacing = spacing or SendSpacing(clocks)
        """Shared with the lanes' schedulers: one record of real sends per key."""
        self.origin_of = origin_of
        """(site, host) -> the origin a request there reaches (None: unknown)."""
        self.origin_limit = origin_limit
        self.budget = budget
        """The crawl's budgets: a hop is a request (refused when they are spent)."""

    async def sent(self, site: str, sent_at: float) -> None:
        """A request to ``site`` went out at ``sent_at``: nothing else (a robots.txt hop from
        another site, another lane) starts there before its interval from that moment."""
        key = site_key(site)
        spacing = self.interval_of(site) or self.clocks.policy.params_of(key).interval + self.margin
        self.clocks.raise_floors_soon({key: sent_at + spacing})

    async def __call__(self, site: str, host: str) -> HopSlot | None:
        """Book one request to ``host`` (of ``site``) on its site and origin keys and wait
        for its slot; None when the crawl stops first (then nothing may be sent)."""
        key = site_key(site)
        params = self.clocks.policy.params_of(key)
        interval = self.interval_of(site) or params.interval
        limits = [Limit(key, KeyParams(interval, params.burst, params.slot_width, False))]
        origin = None
        if self.origin_of is not None and self.origin_limit is not None:
            origin = await self.origin_of(site, host)
            if origin is not None:
                limits.append(self.origin_limit(origin))
        keys = tuple(limit.key for limit in limits)
        while not self.stopping():
            booking = await self.clocks.book(tuple(limits), HOP_COST, max_lead=math.inf)
            if isinstance(booking, Refusal):
                await sleep_until(self.timer, booking.not_before)
                continue
            self.stats.slots += 1
            await sleep_until(self.timer, booking.start)
            if booking.is_missed(self.timer.now()):
                self.stats.missed_slots += 1
                continue
            # Site and origin keys are both spaced from real sends: holding past the slot's
            # deadline for a late send there bunches nothing.
            hold = await self._hold_until(keys)
            while hold > self.timer.now() and not self.stopping():
                self.spacing.holds += 1
                await sleep_until(self.timer, hold)
                hold = await self._hold_until(keys)
            if self.stopping() or (self.budget is not None and not self.budget.take(page=False)):
                return None
            return HopSlot(keys, origin, self.spacing)
        return None

    async def _hold_until(self, keys: tuple[str, ...]) -> float:
        if self.spacing.needs_refresh(keys):
            await self.spacing.refresh(keys)
        return self.spacing.hold_until(keys, self.timer.now())
