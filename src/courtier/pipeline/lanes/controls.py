"""An operator's controls as this worker applies them: pauses, rates, render modes, drops,
opt-outs, new seed sites and recrawls, taken from the store while the crawl runs.

Rules (the store's side: ``courtier.frontier.controls``):
- At the start every site's controls are read before any lane is made, and each lane is
  made with its site's (``shape``): a paused site never starts, a limited one starts at its
  own rate, an opted-out one has no lane and its host gets no request (``opted_out``, read
  by the guarded fetch for every kind of request: pages, robots.txt, media, renders).
- Every ``[control] poll`` seconds the worker reads the actions logged since the last it saw
  (one indexed query) and applies them: a site's controls are read again and applied to its
  lane if this worker has it (in a shared crawl only the worker holding the site's shard
  has one; every worker keeps the scope and the opt-out list); ``seed add`` and a promotion
  admit the site (``SeedSites.admit``: a lane here if its shard is held here); ``site drop``
  and ``seed remove`` take it out of the scope and drop its lane (its leased URLs go back to
  the store); ``recrawl`` leases the site's fastlane URLs now, ahead of what it holds.
- The fastlane endpoint (``[control] http_port``, ``fastlane_endpoint``) runs beside the
  poll: what it schedules reaches every worker through the same log.
- A pause holds the lane in the scheduler (``Scheduler.hold``): a slot booked and not
  started yet is given up; work in flight finishes. A rate of the site's own replaces its
  base interval (backoff on top, as ever) and its next start is spaced by it at once. A
  pause or rate that runs out (``--until``) ends on its own: the pause on the scheduler's
  timer, the rate at the first poll after its end.
- An origin's budget of the operator's (``origins limit``) replaces its key's parameters in
  the policy every booking reads (``KeyClocks.policy``: the configured limits and overrides,
  then the operator's), on every worker, so the one shared key of the origin is slowed
  whichever worker books it. Made slower, the lanes of this worker booked or waiting on it
  give up their slots and book again at the new spacing (the slots given up stay consumed);
  made faster, what is booked stands. It ends like a site's rate, at the first poll after
  ``--until``.
- A site's render mode and rules (``site render``) are read by the render lane for each page
  parsed after the poll that brought them (``render_of``), over the configuration's.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from courtier.config import Config
from courtier.frontier.controls import ControlAction, OriginControl, SiteControl
from courtier.pipeline.feed.frontier_io import FrontierIO
from courtier.pipeline.lanes.seeding import SeedSites
from courtier.pipeline.lanes.site import SiteLane
from courtier.pipeline.scheduling.timer import Timer, sleep_until
from courtier.pipeline.stats import CrawlStats
from courtier.politeness.gcra import KeyParams
from courtier.politeness.keys import LimitPolicy, origin_key
from courtier.render.decision import SiteRender
from courtier.url import host_of_site

if TYPE_CHECKING:
    from courtier.pipeline.lanes.feeding import Feeder
    from courtier.pipeline.lanes.origins_live import LiveOrigins
    from courtier.pipeline.lanes.rendering import Rendering
    from courtier.pipeline.scheduling.clocks import KeyClocks
    from courtier.pipeline.scheduling.scheduler import Scheduler

log = logging.getLogger(__name__)

SITE_ACTIONS = frozenset(
    {
        "site pause",
        "site resume",
        "site limit",
        "site render",
        "origins pin",
        "origins split",
        "origins unpin",
    }
)
DROPS = frozenset({"site drop", "seed remove"})
ADMITS = frozenset({"seed add", "promote"})
ORIGIN_ACTIONS = frozenset({"origins limit"})


def operator_policy(
    base: LimitPolicy, origins: dict[str, OriginControl], now: float
) -> LimitPolicy:
    """``base`` with the origins' budgets of the operator's in effect at ``now`` over its
    own (a burst of None keeps the configured one)."""
    extra: dict[str, KeyParams] = {}
    for origin, control in origins.items():
        if not control.in_effect(now) or control.rate is None:
            continue
        key = origin_key(origin)
        try:
            configured = base.params_of(key)
        except ValueError:  # not a key's name: nothing books on it
            continue
        burst = configured.burst if control.burst is None else control.burst
        extra[key] = KeyParams.from_rate(control.rate, burst, configured.slot_width)
    if not extra:
        return base
    return dataclasses.replace(base, overrides={**base.overrides, **extra})


async def _nothing(_lane: SiteLane) -> None:
    pass


class Controls:
    def __init__(
        self,
        config: Config,
        frontier: FrontierIO,
        seed: SeedSites,
        timer: Timer,
        stats: CrawlStats,
        clocks: KeyClocks | None = None,
    ) -> None:
        """``clocks``: whose policy takes the origins' budgets (None: they are not applied)."""
        self.config = config
        self.clocks = clocks
        self.by_origin: dict[str, OriginControl] = {}
        self.frontier = frontier
        self.seed = seed
        self.timer = timer
        self.stats = stats
        self.by_site: dict[str, SiteControl] = {}
        self.opted_out: set[str] = seed.opted_out
        """Hosts whose owner opted out: the guarded fetch refuses them, the seed admits
        none of them."""
        self.last_id = 0
        self.hold: Callable[[SiteLane, float], None] = lambda lane, until: None
        """The page scheduler's ``hold`` (``wire``)."""
        self.drop_lane: Callable[[SiteLane], None] = lambda lane: None
        """The page scheduler's ``drop``: nothing of the lane starts any more."""
        self.look_again: Callable[[SiteLane], None] = lambda lane: None
        """The feeder's priority path: a recrawl's URLs are leased at once."""
        self._expiries: float = math.inf
        self.repin: Callable[[SiteLane], Awaitable[None]] = _nothing
        """Live origins' ``repin``: the lane books on its operator's origin (``wire``)."""
        self._pinned: dict[str, str | None] = {}
        """The operator's origin each lane was last placed on here."""
        self._dropped: list[SiteLane] = []
        """Lanes dropped whose leased URLs have not gone back to the store yet."""
        self._renders: dict[str, tuple[SiteControl, SiteRender | None]] = {}
        """Each site's render controls as last compiled, with the control they came from."""
        seed.shape = self.shape

    def wire(
        self,
        pages: Scheduler[SiteLane, Any],
        feeder: Feeder,
        origins: LiveOrigins,
        rendering: Rendering | None = None,
    ) -> None:
        self.hold, self.drop_lane = pages.hold, pages.drop
        self.look_again = feeder.lease_urgent  # a recrawl overtakes what the site holds
        self.repin = origins.repin
        origins.manual = self.origin_of
        if rendering is not None:
            rendering.operator = self.render_of

    def render_of(self, site: str) -> SiteRender | None:
        """The operator's render mode and rules for ``site`` (None: the configuration's)."""
        control = self.by_site.get(site)
        if control is None or (control.render is None and not control.render_rules):
            return None
        compiled = self._renders.get(site)
        if compiled is not None and compiled[0] is control:
            return compiled[1]
        try:
            own: SiteRender | None = SiteRender.of(control.render, control.render_rules)
        except (ValueError, re.error) as error:  # written by something else than `site`
            log.warning("operator's render controls of %s ignored: %s", site, error)
            own = None
        self._renders[site] = (control, own)
        return own

    def origin_of(self, site: str) -> str | None:
        """The origin the operator placed ``site`` on (None: inference decides)."""
        control = self.by_site.get(site)
        return None if control is None else control.origin

    # -- the start ----------------------------------------------------------------------

    def load(self) -> None:
        """Read every site's controls and the last action's id (on the store thread)."""
        store = self.frontier.store
        self.by_site = store.site_controls()
        self.by_origin = store.origin_controls()
        self._set_policy()
        last = store.last_actions(1)
        self.last_id = last[0].id if last else 0
        # One set, shared with the seed and the guarded fetch: updated in place.
        self.opted_out.clear()
        self.opted_out.update(host_of_site(s) for s, c in self.by_site.items() if c.opted_out)
        self._expiries = self._next_expiry()

    def shape(self, lane: SiteLane) -> None:
        """A new lane takes its site's controls (before the scheduler has seen it)."""
        control = self.by_site.get(lane.site)
        if control is None:
            return
        now = self.timer.now()
        lane.sched.held_until = control.held_until(now)
        self._set_interval(lane, control.interval(now))

    # -- while the crawl runs -----------------------------------------------------------

    async def run(self) -> None:
        settings = self.config.control
        endpoint = None
        if settings.http_port:
            # Imported here: aiohttp's web server is not loaded by a crawl that serves nothing.
            from courtier.pipeline.lanes.fastlane_endpoint import FastlaneEndpoint

            endpoint = FastlaneEndpoint(self.frontier, self.seed.scope, settings.http_token)
            await endpoint.start(settings.http_host, settings.http_port)
        try:
            await self._poll_forever(settings.poll)
        finally:
            if endpoint is not None:
                await endpoint.close()

    async def _poll_forever(self, poll: float) -> None:
        while True:
            await sleep_until(self.timer, self.timer.now() + poll)
            try:
                await self.poll()
            except Exception:  # a store error: the next poll tries again
                log.exception("reading the operator's controls failed; tried again")

    async def poll(self) -> None:
        store = self.frontier.store
        actions = await self.frontier.call(store.control_actions, self.last_id)
        expired = self.timer.now() >= self._expiries
        if not actions and not expired:
            return
        if actions:
            self.last_id = actions[-1].id
        if expired or any(a.action in SITE_ACTIONS or a.action in DROPS for a in actions):
            self.by_site = await self.frontier.call(store.site_controls)
        if expired or any(a.action in ORIGIN_ACTIONS for a in actions):
            self.by_origin = await self.frontier.call(store.origin_controls)
            self._slowed(self._set_policy())
        self._expiries = self._next_expiry()
        touched = set(self.by_site) if expired else set()
        for action in actions:
            self._take(action)
            if action.action not in ORIGIN_ACTIONS:
                touched.add(action.target)
        for site in touched:
            self.apply(site)
            lane = self.seed.lanes.get(site)
            if lane is not None and self._pinned.get(site) != self.origin_of(site):
                self._pinned[site] = self.origin_of(site)
                await self.repin(lane)
        dropped, self._dropped = self._dropped, []
        for lane in dropped:
            # Its URLs leased here go back (to nobody: the site has left the scope).
            release = functools.partial(store.release_leases, sites=[lane.site], fence=lane.fence)
            await self.frontier.call(release)

    def _take(self, action: ControlAction) -> None:
        self.stats.control_actions += 1
        site = action.target
        log.info("operator: %s %s (%s)", action.action, site, action.actor)
        if action.action in ADMITS:
            control = self.by_site.get(site)
            if control is None or not control.opted_out:
                self.seed.admit(site, str(action.detail.get("scheme", "http")))
        elif action.action in DROPS:
            self.drop(site)
        elif action.action == "recrawl":
            lane = self.seed.lanes.get(site)
            if lane is not None:
                self.look_again(lane)

    def apply(self, site: str) -> None:
        """Bring the site's lane (if this worker has one) in line with its controls."""
        control = self.by_site.get(site) or SiteControl(site)
        if control.opted_out:
            self.opted_out.add(host_of_site(site))
            self.drop(site)
            return
        lane = self.seed.lanes.get(site)
        if lane is None:
            return
        now = self.timer.now()
        held = control.held_until(now)
        if held != lane.sched.held_until:
            self.hold(lane, held)
        if self._set_interval(lane, control.interval(now)):
            # Booked at the old spacing: booked again at the new one.
            self.hold(lane, lane.sched.held_until)

    def drop(self, site: str) -> None:
        self.seed.scope.discard(site)
        lane = self.seed.lanes.get(site)
        if lane is not None:
            self.drop_lane(lane)
            self.seed.drop([lane])
            self._dropped.append(lane)

    # -- helpers ------------------------------------------------------------------------

    def _set_policy(self) -> set[str]:
        """The clocks' policy with the origins' budgets now; the origins it made slower."""
        clocks = self.clocks
        if clocks is None:
            return set()
        old = clocks.policy
        new = operator_policy(self.config.limits.policy(), self.by_origin, self.timer.now())
        clocks.policy = new
        slower = set()
        for origin in self.by_origin:
            key = origin_key(origin)
            try:
                if new.params_of(key).interval > old.params_of(key).interval:
                    slower.add(origin)
            except ValueError:
                continue
        return slower

    def _slowed(self, origins: set[str]) -> None:
        """Lanes booked or waiting on a slowed origin book again at its new spacing."""
        if not origins:
            return
        for lane in list(self.seed.lanes.values()):
            if lane.booked_origin in origins:
                self.hold(lane, lane.sched.held_until)

    def _set_interval(self, lane: SiteLane, own: float | None) -> bool:
        """Give the lane ``own`` interval (None: the configured one). Changed?"""
        base = own if own is not None else self.config.limits.site_interval(lane.site)
        if base == lane.base_interval:
            return False
        default = self.config.site_interval
        old = lane.base_interval or default
        new = base or default
        backoff = lane.backoff
        # Backing off (above the old base): the backoff stays, never below the new base.
        interval = new if backoff.interval <= old + 1e-9 else max(new, backoff.interval)
        lane.backoff = dataclasses.replace(backoff, interval=interval)
        lane.base_interval = base
        lane.hold_start(lane.last_sent + lane.interval)
        return True

    def _next_expiry(self) -> float:
        now = self.timer.now()
        ends = [t for c in self.by_site.values() if (t := c.next_change(now)) is not None]
        ends += [t for c in self.by_origin.values() if (t := c.next_change(now)) is not None]
        return min(ends, default=math.inf)
