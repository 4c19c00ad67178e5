"""Origins during a crawl: which origin each seed site books on, kept fresh as evidence comes.

Rules:
- A site books nothing before its origin is known. With origin inference (DNS evidence),
  the seed sites are inferred together before their first booking; the sites waiting for
  it go on ``RELEASE_SLICE`` per turn of the loop once it is done (2,000 waiting tasks woken
  at once made one turn of ~120 ms), and a site whose origin is inferred needs no task of
  its own. A site whose inference lookup failed (a DNS timeout under a start-up burst) is
  looked up again (failed hosts together, one re-clustering per batch); if it still fails
  but the guard resolves it, it books on the origin of a placed host sharing one of its
  addresses, else alone: never on a second name for a server the inference already
  named. A crawl without inference books on the origin the address set implies
  (``guess_origin``). A host the guard refuses books on its site key alone (its fetch is
  refused anyway). DNS trouble is never "no origin": the site backs off and asks again.
- Inference is re-run when DNS answers expire, or soon after new evidence: the headers of a
  seed site's first answer (its robots.txt, else its home page; a robots.txt 404 is its
  not-found page) where DNS is indeterminate or may name a CDN edge, and, over https, its
  verified certificate (corroboration), observed from the crawl's own fetch, never from an
  extra probe. The first answers behind a shared name decide whether it is an edge, so they
  are re-clustered within ``EVIDENCE_SETTLE``: strangers behind an edge wait that long on one
  shared budget, never minutes.
- A site whose origin id changes books on the new one, and the new origin's clock is raised
  to the old one's, capped at what the sites moving together spent there (their last starts
  and booked slots at their cost; not other sites' bookings: strangers leaving a CDN edge
  booked it 10 s ahead, and carried whole that stalled the platform leaving beside them),
  their recent requests added on top of the new key's bookings (they went to its servers);
  whole if a site of the group is another worker's (its bookings unseen here).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine, Iterable
from typing import Any

from courtier.frontier.observations import Observation
from courtier.origins.cluster import own_origin
from courtier.origins.header_evidence import probe_response
from courtier.origins.infer import InferenceResult, OriginInference
from courtier.origins.tls_evidence import tls_facts
from courtier.pipeline.answers.fetching import TRANSIENT_REFUSALS, Answer, Resolver
from courtier.pipeline.feed.frontier_io import FrontierIO
from courtier.pipeline.lanes.media_places import HostFacts
from courtier.pipeline.lanes.origin_saves import OriginSaves
from courtier.pipeline.lanes.shared_evidence import TRANSITION, SharedEvidence
from courtier.pipeline.lanes.site import OriginStatus, SiteLane
from courtier.pipeline.scheduling.clocks import KeyClocks
from courtier.pipeline.scheduling.timer import Timer, sleep_until, wait_until
from courtier.pipeline.stats import CrawlStats
from courtier.politeness.keys import guess_origin, origin_key

log = logging.getLogger(__name__)

SPENT_MEMORY = 5.0
"""Seconds a site's last request counts against the origin it moves to (the audit's window)."""
SEED_STRAGGLERS_AFTER = 1.0
"""Seconds the seed's inference waits for the last DNS answers once every lookup has begun (a
lost question waits out the resolver's retry): the rest are looked up on their own later."""
EVIDENCE_SETTLE = 1.0
"""Seconds to gather header evidence before re-clustering on it (2,000 sites: 60-150 ms)."""
RELEASE_SLICE = 100
"""Sites that waited for inference armed per turn of the loop once it is done."""


def infer_early(
    inference: OriginInference | None, hosts: Iterable[str]
) -> asyncio.Task[InferenceResult] | None:
    """Start inferring the seed hosts' origins now: inference needs nothing else, so it runs
    while the store is seeded, and the first bookings (which wait for it) are not held up."""
    if inference is None:
        return None
    return asyncio.get_running_loop().create_task(
        inference.add(sorted(hosts), stragglers_after=SEED_STRAGGLERS_AFTER)
    )


class LiveOrigins:
    def __init__(
        self,
        inference: OriginInference | None,
        *,
        guard: Resolver,
        clocks: KeyClocks,
        frontier: FrontierIO,
        stats: CrawlStats,
        hosts: Callable[[], Iterable[str]],
        sites: Callable[[], Iterable[SiteLane]],
        arm: Callable[[SiteLane], None],
        unresolved: Callable[[SiteLane, float], None],
        timer: Timer,
        recheck_every: float,
        tasks: set[asyncio.Task[None]],
        early: asyncio.Future[InferenceResult] | None = None,
        started: float | None = None,
        per_unit: Callable[[str], float] | None = None,
        rebook: Callable[[SiteLane], None] | None = None,
    ) -> None:
        """``per_unit(origin)``: seconds of the origin's clock one cost unit takes there (the
        cap of a clock carried to a site's new origin); None: no cap."""
        self.inference = inference
        self.guard = guard
        self.clocks = clocks
        self.frontier = frontier
        self.stats = stats
        self.hosts = hosts
        """Every seed host (a worker of a shared crawl infers them all, so that workers
        agree on the origins of the sites they share)."""
        self.sites = sites
        self.arm = arm
        self.unresolved = unresolved  # backs off a lane whose host did not resolve for now
        self.timer = timer
        self.saves = OriginSaves()  # a fleet's worker writes its own sites' rows (wiring)
        self.recheck_every = recheck_every
        self.tasks = tasks
        self.early = early
        """Inference of the seed hosts, started before the store opened (or None)."""
        self.started = time.monotonic() if started is None else started  # for the log
        self.ready = asyncio.Event()
        self._before_ready: list[SiteLane] = []
        """Sites that asked for their origin before inference was done, in order."""
        self._new_evidence = asyncio.Event()
        self._observed: set[str] = set()
        self._lookups = asyncio.Semaphore(64)
        """Lookups at once: a start-up burst must not flood the resolver."""
        self._to_retry: set[str] = set()
        self._retrying = asyncio.Lock()
        self.per_unit = per_unit
        self.rebook = rebook
        """Asks a lane that waits for its old origin's key to book again on its new one."""
        self.manual: Callable[[str], str | None] = lambda _site: None
        """The origin an operator placed a site on (``controls``): over inference."""
        self.sharing: SharedEvidence | None = None
        """A fleet's evidence exchange (``shared_evidence``); None: not shared."""

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def look_up(self, lane: SiteLane) -> None:
        """Find the origin of ``lane`` before its first booking (arms it when done)."""
        if lane.origin_status is OriginStatus.LOOKING_UP:
            return
        lane.origin_status = OriginStatus.LOOKING_UP
        if self.inference is not None and not self.ready.is_set():
            self._before_ready.append(lane)
        else:  # not in this call: the scheduler is choosing the lane's work right now
            asyncio.get_running_loop().call_soon(self._go_on, lane)

    def _go_on(self, lane: SiteLane) -> None:
        """Resolve ``lane`` on its inferred origin; without one, look it up (a task)."""
        inference = self.inference
        inferred = None
        if inference is not None and not inference.failed(lane.host):
            inferred = inference.origin_of(lane.host)
        if inferred is not None:
            self._resolved(lane, inferred)
        else:
            self._spawn(self._look_up(lane))

    async def _release_waiting(self) -> None:
        """Inference is done: the sites that waited for it go on, a slice per turn."""
        waiting, self._before_ready = self._before_ready, []
        for n, lane in enumerate(waiting):
            if n and n % RELEASE_SLICE == 0:
                await asyncio.sleep(0)
            self._go_on(lane)

    async def _look_up(self, lane: SiteLane) -> None:
        """``lane``'s origin where inference has none for it; started (by ``_go_on``) only
        once inference is done."""
        inference = self.inference
        if inference is not None:
            if inference.failed(lane.host):
                await self._retry(lane.host)
            inferred = inference.origin_of(lane.host)
            if inferred is not None and not inference.failed(lane.host):
                self._resolved(lane, inferred)
                return
        async with self._lookups:
            resolution = await self.guard.resolve(lane.host)
        if not resolution.allowed and resolution.reason in TRANSIENT_REFUSALS:
            lane.origin_status = OriginStatus.UNRESOLVED
            self.unresolved(lane, self.timer.now())
            self.arm(lane)
            return
        if not resolution.allowed:
            origin = None
        elif inference is not None:
            origin = inference.origin_sharing(resolution.addresses) or inference.origin_of(
                lane.host
            )
        else:
            origin = guess_origin(None, resolution.addresses)
        self._resolved(lane, origin)

    async def _retry(self, host: str) -> None:
        """Look ``host`` up again with every other failed host waiting by then."""
        assert self.inference is not None
        self._to_retry.add(host)
        async with self._retrying:
            if host not in self._to_retry:  # an earlier batch took it
                return
            batch, self._to_retry = self._to_retry, set()
            self.stats.origin_retries += len(batch)
            await self._apply(await self.inference.retry(batch))

    async def origin_for(self, host: str) -> str | None:
        """The origin a request to ``host`` reaches when no lane here books on it (a
        robots.txt redirect hop): the inferred one, else that of a placed host sharing one of
        its addresses (or, without inference, what its address set implies); None when the
        guard refuses it or nothing is known."""
        inference = self.inference
        if inference is not None and not inference.failed(host):
            inferred = inference.origin_of(host)
            if inferred is not None:
                return inferred
        async with self._lookups:
            resolution = await self.guard.resolve(host)
        if not resolution.allowed:
            return None
        if inference is not None:
            return inference.origin_sharing(resolution.addresses)
        return guess_origin(None, resolution.addresses)

    def _resolved(self, lane: SiteLane, origin: str | None) -> None:
        manual = self.manual(lane.site)
        lane.origin = manual if manual is not None else origin
        lane.origin_status = OriginStatus.RESOLVED
        lane.provisional = self.inference is not None and self.inference.provisional(lane.host)
        self.arm(lane)

    async def hosts_facts(self, hosts: list[str]) -> dict[str, HostFacts]:
        """The CNAME chains and inferred origins of ``hosts`` outside the seed (image hosts:
        ``media_places``), through the same inference as the seed's, changes applied."""
        inference = self.inference
        if inference is None:
            return {}
        await self._apply(await inference.add(hosts))
        facts = inference.facts()
        return {
            host: HostFacts(facts[host].dns.cname_chain, inference.origin_of(host))
            for host in hosts
            if host in facts and not inference.failed(host)
        }

    async def added(self, lane: SiteLane) -> None:
        """A site promoted into the seed while the crawl runs."""
        if self.inference is not None:
            await self.inference.add([lane.host])
        self.arm(lane)

    def observe_answer(self, lane: SiteLane, answer: Answer) -> None:
        """A seed site's first answer with headers (robots.txt or home page) and certificate
        as origin evidence, once per host."""
        result = answer.result
        if self.inference is None or lane.host in self._observed or result is None:
            return
        if result.status is None:
            return
        self._observed.add(lane.host)
        headers = list(result.headers)
        if result.status == 404 and not result.spooled:
            # A robots.txt the site does not have: its not-found page, small, read from memory.
            home = None
            missing = probe_response(404, headers, result.body, lane.host)
        else:
            # Only a not-found page's body counts in a fingerprint: a page's headers are what
            # matters, so its body (maybe megabytes) is not hashed on the event loop.
            home, missing = probe_response(result.status, headers, b"", lane.host), None
        if self.inference.observe(lane.host, home, missing):
            self.stats.header_evidence += 1
            self._new_evidence.set()
            if self.sharing is not None:
                self.sharing.mine(Observation(lane.host, "", home, missing))
        if result.peercert is not None:
            tls = tls_facts(result.peercert, result.peercert_der)
            if self.inference.observe_tls(lane.host, tls):
                self.stats.tls_evidence += 1
                self._new_evidence.set()
                if self.sharing is not None:
                    self.sharing.mine(Observation(lane.host, "", tls=tls))

    async def run(self) -> None:
        """Infer the seed sites' origins, then keep them fresh (a background task)."""
        if self.inference is None:
            self.ready.set()
            return
        hosts = sorted(self.hosts())
        started = self.started
        if self.sharing is not None:
            self._spawn(self.sharing.run(self._observed, self._new_evidence))
        try:
            if self.early is not None:
                await self.early  # then only hosts the store added are looked up below
            result = await self.inference.add(hosts, stragglers_after=SEED_STRAGGLERS_AFTER)
        finally:
            self.ready.set()
            self._spawn(self._release_waiting())  # a task of its own: even if this one fails
        log.info(
            "origins of %d hosts known %.1f s after the crawl began: %d origins",
            len(hosts),
            time.monotonic() - started,
            len({a.origin for a in result.assignments.values()}),
        )
        while True:
            await self._apply(result)
            # Re-check when DNS answers expire, or soon after new header evidence arrived
            # (a short wait gathers the home pages of many sites into one re-clustering).
            timer = self.timer
            if await wait_until(timer, self._new_evidence, timer.now() + self.recheck_every):
                await sleep_until(timer, timer.now() + EVIDENCE_SETTLE)
            self._new_evidence.clear()
            result = await self.inference.recheck()

    async def _apply(self, result: InferenceResult) -> None:
        self.stats.origins = len({a.origin for a in result.assignments.values()})
        await self.frontier.call(self.saves, self.frontier.store, result, self.timer.now())
        lanes: dict[str, list[SiteLane]] = {}
        for lane in self.sites():
            lanes.setdefault(lane.host, []).append(lane)
        # Results are applied as their awaits end, not as they were made (the seed's, a
        # re-check's, an image host's): a site takes the inference's origin of now, never an
        # older result's, or it would book on a key its group has left.
        inference = self.inference
        together: dict[tuple[str | None, str], list[list[SiteLane]]] = {}
        for c in result.changes:
            together.setdefault((c.old, c.new), []).append(lanes.get(c.site, []))
        carried: set[tuple[object, ...]] = set()
        for change in result.changes:
            moving = lanes.get(change.site, [])
            now_origin = (inference and inference.origin_of(change.site)) or change.new
            booked_on = {change.old} | {
                lane.origin for lane in moving if lane.origin_status is OriginStatus.RESOLVED
            }
            cap, spent = self._cap(together[(change.old, change.new)], now_origin)
            for old_origin in sorted(o for o in booked_on if o is not None and o != now_origin):
                once = (change.old, change.new, old_origin, now_origin)  # the cap is the group's
                if once in carried:
                    continue
                carried.add(once)
                await self.clocks.carry(origin_key(old_origin), origin_key(now_origin), cap, spent)
                spent = 0.0  # once
            for lane in moving:
                if self.manual(lane.site) is not None:
                    continue  # the operator's origin, whatever inference says
                if lane.origin_status is OriginStatus.RESOLVED and lane.origin != now_origin:
                    # A site alone on its new origin shares it with no other worker's sites.
                    if self.sharing is not None and now_origin != own_origin(change.site):
                        lane.moved(self.timer.now() + TRANSITION)
                    lane.origin = now_origin
                    self._rebook(lane)
        if inference is not None:
            for host, hosts_lanes in lanes.items():
                if not inference.provisional(host):
                    for lane in hosts_lanes:
                        if lane.provisional:
                            lane.provisional = False  # told apart: it books as far as any
                            self._rebook(lane)

    async def repin(self, lane: SiteLane) -> None:
        """An operator placed the site on an origin, or gave it back to inference: it books
        there, its new key's clock raised as for a site moving alone."""
        if lane.origin_status is not OriginStatus.RESOLVED:
            return  # placed when it resolves (``_resolved`` asks ``manual``)
        manual = self.manual(lane.site)
        if manual is None and self.inference is not None and not self.inference.failed(lane.host):
            manual = self.inference.origin_of(lane.host)
        if manual is None:  # nothing inferred: look it up again, as at its start
            lane.origin_status = OriginStatus.UNRESOLVED
            return self._rebook(lane)
        old, cap = lane.origin, self._cap([[lane]], manual)
        if old is not None and old != manual:
            await self.clocks.carry(origin_key(old), origin_key(manual), *cap)
        lane.origin = manual
        self._rebook(lane)

    def _rebook(self, lane: SiteLane) -> None:
        if self.rebook is not None:
            self.rebook(lane)

    def _cap(self, group: list[list[SiteLane]], origin: str) -> tuple[float | None, float]:
        """The latest the requests of sites moving together (each site's lanes) can have booked
        their new origin's clock (last starts and slots on the old key, at their cost there),
        and their recent spend there; no cap when a site has no lane here."""
        if self.per_unit is None or not group or not all(group):
            return None, 0.0
        per_unit, now = self.per_unit(origin), self.timer.now()
        ends, spent = [now], 0.0  # nothing of its own ever booked on the old key: no floor
        for lane in (lane for lanes in group for lane in lanes):
            state = lane.sched
            if state.launched:
                last = max(lane.last_sent, lane.next_start - lane.interval)
                ends.append(last + state.last_cost * per_unit)
                spent += state.last_cost * per_unit if lane.last_sent > now - SPENT_MEMORY else 0
            if state.slot is not None:
                ends.append(state.slot.start + state.slot.cost * per_unit)
        return max(ends), spent
