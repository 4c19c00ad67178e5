"""The booking of a request made by hand (``courtier fetch``): the keys a crawl books, on the
clocks a crawl over the same store books on.

Rules:
- A request is booked on the keys a crawl's site lane books (``lanes.pages``): the ``site:``
  key of the site's owner (``www.X`` on ``site:X`` when ``X`` is in the seed, unless the two
  are placed on different origins: ``lanes.site.booked_site_key``), spaced start-to-start by
  the site's interval (the operator's rate, else the site's ``[limits] overrides``, else
  ``[limits.site]``; widened by robots.txt's Crawl-delay; plus ``[politeness]
  start_margin``), and the ``origin:`` key of the origin the site books on (the operator's
  pin, else the one inference stored, else the site's address set: ``keys.guess_origin``)
  at the origin's budget (the operator's over the configuration:
  ``lanes.controls.operator_policy``). The cost is the request's class's (``[costs]``).
- Every request waits for its slot and starts inside it (a missed slot is booked again);
  a key booked further ahead than ``[politeness] max_lead`` is asked again when it can be.
  Requests of one site start no closer than its interval, whatever the clocks say.
- Without a store the clocks are this process's own (``MemoryLimiter``): the requests of one
  command (robots.txt, the page, redirect hops) are spaced from each other, nothing more.
- With a store the clocks are the crawl's wherever a crawl can share them:
  PostgreSQL (a fleet): the limiter table every worker books on, one atomic statement per
  booking (unfenced: this command holds no shard). SQLite with ``[crawl] limiter =
  "sqlite"`` (or whose ``limiter_tat`` table exists: a crawl booked there): the store
  file's table, one ``BEGIN IMMEDIATE`` transaction per booking, which a running crawl reads
  at each of its own bookings. SQLite with the default in-memory limiter: a running crawl
  keeps its clocks in its own memory, which no other process can book on. That is said
  (``notes``), and the command keeps to the site's spacing on clocks of its own.
- With a store, the floors it keeps (a Retry-After pause, a back-off, saved at a crawl's
  stop) are raised on the keys before their first booking, and the operator's controls
  are obeyed: an opted-out site gets no request, a paused one none while its pause lasts.
  Nothing else is written to the store.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from courtier.config import Config
from courtier.frontier.base import FrontierStore, SiteState, StoredRobots
from courtier.frontier.controls import SiteControl
from courtier.pipeline.feed.scope import site_owner
from courtier.pipeline.lanes.controls import operator_policy
from courtier.pipeline.store_lock import running_crawl
from courtier.politeness.gcra import KeyParams, Limit, Refusal
from courtier.politeness.keys import KeyType, LimitKey, LimitPolicy, guess_origin, site_key
from courtier.politeness.limiter import MemoryLimiter, SqliteLimiter
from courtier.politeness.limiter.base import Limiter
from courtier.url import Url

log = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[None]]
OnWait = Callable[[float, tuple[str, ...]], None]
"""Told (seconds, keys) before a wait for a slot of a second or more."""
SHOW_WAIT = 1.0
_IN_SCOPE = (SiteState.SEED, SiteState.REQUESTED)


@dataclass(frozen=True, slots=True)
class Booked:
    """What one request was booked on, and how long it waited for its slot."""

    keys: tuple[str, ...]
    cost: float
    waited: float
    origin: str | None


@dataclass(slots=True)
class StoreView:
    """What a store tells about its sites: read once, when the command starts."""

    seed: frozenset[str] = frozenset()
    origins: dict[str, str] = field(default_factory=dict)
    """Each site's origin: the operator's pin, else the inferred one."""
    controls: dict[str, SiteControl] = field(default_factory=dict)
    policy: LimitPolicy | None = None
    """The configured limits with the operator's origin budgets over them."""
    floors: dict[str, float] = field(default_factory=dict)
    robots: dict[str, StoredRobots] = field(default_factory=dict)
    opted_out: frozenset[str] = frozenset()

    @classmethod
    def read(cls, store: FrontierStore, config: Config, now: float) -> StoreView:
        origins = dict(store.origins())
        controls = store.site_controls()
        for site, control in controls.items():
            if control.origin is not None:
                origins[site] = control.origin
        policy = operator_policy(config.limits.policy(), store.origin_controls(), now)
        states = store.site_states()
        return cls(
            seed=frozenset(s for s, st in states.items() if st in _IN_SCOPE),
            origins=origins,
            controls=controls,
            policy=policy,
            floors=store.load_clock_floors(now),
            robots=store.load_robots(now),
            opted_out=frozenset(s for s, st in states.items() if st == SiteState.OPTED_OUT),
        )


class Clocks:
    """Books requests made by hand (see the module's rules); ``notes`` says how."""

    def __init__(
        self,
        config: Config,
        limiter: Limiter,
        view: StoreView | None = None,
        *,
        notes: list[str] | None = None,
        on_wait: OnWait | None = None,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.config = config
        self.limiter = limiter
        self.view = view or StoreView()
        self.policy = self.view.policy or config.limits.policy()
        self.notes = notes or []
        self.on_wait = on_wait
        self.sleep = sleep
        self._floored: set[str] = set()
        self._last: dict[str, float] = {}
        """A site key's last start here, and the interval after it."""

    @classmethod
    def of_store(
        cls,
        config: Config,
        store: FrontierStore | None,
        *,
        sqlite_path: Path | None = None,
        shared: Limiter | None = None,
        on_wait: OnWait | None = None,
    ) -> Clocks:
        """The clocks for ``store`` (None: this process's own). ``sqlite_path``: the store's
        file when it is SQLite; ``shared``: the fleet's limiter when it is PostgreSQL."""
        now = time.time()
        if store is None:
            return cls(config, MemoryLimiter(time.time), on_wait=on_wait)
        view = StoreView.read(store, config, now)
        if shared is not None:
            note = "booked on the fleet's shared clocks (the store's limiter table)"
            return cls(config, shared, view, notes=[note], on_wait=on_wait)
        assert sqlite_path is not None
        if config.crawl.limiter == "sqlite" or _has_limiter_table(sqlite_path):
            note = f"booked on the store's clocks: the limiter table of {sqlite_path}"
            return cls(config, SqliteLimiter(sqlite_path), view, notes=[note], on_wait=on_wait)
        holder = running_crawl(sqlite_path)
        notes = [
            "the store's crawl keeps its clocks in its own memory ([crawl] limiter = "
            '"memory"): no other process can book on them; this command keeps to the '
            "site's spacing and the floors the store keeps (run the crawl and this command "
            "with -s crawl.limiter=sqlite to share one set of clocks)"
        ]
        if holder is not None:
            notes.append(f"a crawl runs on the store now: {holder}")
        return cls(config, MemoryLimiter(time.time), view, notes=notes, on_wait=on_wait)

    # -- what the store says of a site ----------------------------------------------------

    def held(self, site: str, now: float) -> str | None:
        """Why no request may go to ``site`` now (the operator's controls), or None."""
        if site in self.view.opted_out:
            return f"{site}: its owner opted out of the crawl (site state opted-out)"
        control = self.view.controls.get(site)
        if control is None:
            return None
        if control.opted_out:
            return f"{site}: its owner opted out of the crawl"
        if control.held_until(now) > now:
            return f"{site}: paused by the operator ({control.describe(now)})"
        return None

    def stored_robots(self, site: str) -> StoredRobots | None:
        """The site's robots.txt answer a crawl saved in the store, while it is fresh."""
        stored = self.view.robots.get(site)
        return stored if stored is not None and stored.expires_at > time.time() else None

    @property
    def seed(self) -> frozenset[str]:
        return self.view.seed

    # -- keys -------------------------------------------------------------------------------

    def origin_of(self, site: str, addresses: tuple[str, ...]) -> str | None:
        placed = self.view.origins.get(site)
        return placed if placed is not None else guess_origin(None, addresses)

    def site_interval(self, site: str, crawl_delay: float, now: float) -> float:
        control = self.view.controls.get(site)
        own = None if control is None else control.interval(now)
        if own is None:
            own = self.config.limits.site_interval(site)
        base = self.config.site_interval if own is None else own
        return max(base, crawl_delay) + self.config.politeness.start_margin

    def limits(
        self, url: Url, addresses: tuple[str, ...], crawl_delay: float, scope: frozenset[str]
    ) -> tuple[tuple[Limit, ...], str | None]:
        """The limits a crawl's site lane books a request for ``url`` on, and its origin."""
        site = url.site
        origin = self.origin_of(site, addresses)
        owner = site_owner(site, scope)
        theirs = self.view.origins.get(owner)
        if owner != site and theirs is not None and origin is not None and theirs != origin:
            owner = site  # two servers, a clock each
        settings = self.config.limits.site
        interval = self.site_interval(site, crawl_delay, time.time())
        limits: tuple[Limit, ...] = (
            Limit(
                site_key(owner),
                KeyParams(interval, settings.burst, settings.slot_width, weighted=False),
            ),
        )
        if origin is not None:
            key = LimitKey(KeyType.ORIGIN, origin)
            limits += (Limit(str(key), self.policy.params(key)),)
        return limits, origin

    # -- booking ------------------------------------------------------------------------

    async def book(
        self,
        url: Url,
        addresses: tuple[str, ...],
        *,
        target: str,
        crawl_delay: float = 0.0,
        scope: frozenset[str] = frozenset(),
    ) -> Booked:
        """Book a request for ``url`` (its path and query ``target`` give its cost) and
        return once its slot has started."""
        limits, origin = self.limits(url, addresses, crawl_delay, scope)
        cost = self.config.costs.model().cost_of_target(target)
        keys = tuple(limit.key for limit in limits)
        await self._raise_floors(keys)
        site = limits[0]
        last = self._last.get(site.key)
        after = None if last is None else last + site.params.interval
        clock = self.limiter.clock
        began = clock()
        while True:
            booking = await self.limiter.book(
                limits, cost, max_lead=self.config.politeness.max_lead, start_after=after
            )
            wait_until = booking.not_before if isinstance(booking, Refusal) else booking.start
            wait = max(0.0, wait_until - clock())
            if wait >= SHOW_WAIT and self.on_wait is not None:
                self.on_wait(wait, keys)
            await self.sleep(wait)
            if isinstance(booking, Refusal) or booking.is_missed(clock()):
                continue
            started = clock()
            self._last[site.key] = started
            return Booked(keys, cost, started - began, origin)

    async def _raise_floors(self, keys: tuple[str, ...]) -> None:
        floors = {
            key: self.view.floors[key]
            for key in keys
            if key in self.view.floors and key not in self._floored
        }
        self._floored.update(keys)
        if floors:
            await self.limiter.raise_floor(floors)

    async def close(self) -> None:
        await self.limiter.close()


def _has_limiter_table(path: Path) -> bool:
    """Does the SQLite file hold a limiter table (a crawl booked there)? Read only."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            row = db.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'limiter_tat'"
            ).fetchone()
    except sqlite3.Error:
        return False
    return row is not None
