"""The engine's side of the frontier store: one store thread, leases in, outcomes out.

Rules (one status stream, one writer):
- Every store call runs on one thread (``call``), so the event loop never waits on the
  store and the store sees one caller. The store is any ``FrontierStore``.
- Outcomes and what discovery found are buffered and written every ``flush_interval`` in
  one transaction (``flush``); sites that received new work are told (``fed``).
- Lease refills are batched too: a site whose queue ran dry asks (``want``), and one
  ``lease_due`` call serves every site that asked since the last one, in serving order
  (fastlane, freshlane, refresh, discovery), with some discovery leased beside a batch full
  of due work so the split has both lanes to choose from.
- A store whose server cannot be reached (``FrontierUnavailable``: a PostgreSQL restart or
  failover, a network blip, a busy SQLite file) is waited for: the call is made again, with
  backoff and jitter, until it succeeds or the outage has lasted ``[crawl] store_outage``
  seconds (then ``FrontierError`` says so, and the crawl stops). A write whose commit was
  lost with the connection may run twice: every write is a batch of upserts, outcomes and
  leases by id, so the second changes nothing or leaves URLs leased until their release.
- In a scale-out crawl every lease is fenced (``fence_leases``): a site's URLs are leased
  only while this worker's lease of the site's shard holds, checked by the store in the
  leasing transaction; a refill asked for by a site whose shard went meanwhile leases nothing.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from courtier.frontier.base import (
    FrontierError,
    FrontierStore,
    FrontierUnavailable,
    HorizonLink,
    HostEdge,
    LeasedUrl,
    NewUrl,
    Outcome,
    SiteState,
    UrlLane,
    UrlStatus,
)
from courtier.politeness.limiter.base import Fence

T = TypeVar("T")

log = logging.getLogger(__name__)

Drain = Callable[[], tuple[list[NewUrl], list[HorizonLink], list[HostEdge], list[tuple[str, int]]]]


class FrontierIO:
    def __init__(
        self,
        store: FrontierStore,
        *,
        queue_per_site: int,
        now: Callable[[], float] = time.time,
        outage: float = 300.0,
    ) -> None:
        self.store = store
        self.outage = outage
        """Seconds to wait for an unreachable store before giving up."""
        self.outages = 0
        """Calls that found the store unreachable and waited for it."""
        self.now = now
        """The engine's clock (``Timer.now``): what outcomes and leases are dated with."""
        self.queue_per_site = queue_per_site
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="courtier-store")
        self._outcomes: list[Outcome] = []
        self._wanted: set[str] = set()
        self._want_event = asyncio.Event()
        self._fence_of: Callable[[str], Fence | None] | None = None
        self._adopted: list[str] = []
        self._urgent: set[str] = set()
        self.evicted = 0
        self.calls = 0
        """Store calls under way (``call``)."""

    def fence_leases(self, fence_of: Callable[[str], Fence | None]) -> None:
        """Lease a site's URLs only under ``fence_of(site)``, its shard's lease as this worker
        holds it now (None: not held, nothing is leased)."""
        self._fence_of = fence_of

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        self.calls += 1
        try:
            return await self._call(fn, *args)
        finally:
            self.calls -= 1

    @property
    def quiet(self) -> bool:
        """Nothing is waiting to be written, leased or answered by the store thread."""
        return not (self.calls or self._outcomes or self._adopted or self._wanted)

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        down_since: float | None = None
        delay = 0.25
        while True:
            try:
                result = await loop.run_in_executor(self._thread, fn, *args)
            except FrontierUnavailable as exc:
                waited = 0.0 if down_since is None else time.monotonic() - down_since
                if down_since is None:
                    down_since = time.monotonic()
                    self.outages += 1
                    log.warning("the frontier store is unreachable; waiting for it: %s", exc)
                elif waited > self.outage:
                    raise FrontierError(
                        f"the frontier store has been unreachable for {waited:.0f} s "
                        f"([crawl] store_outage): {exc}"
                    ) from exc
                await asyncio.sleep(delay * random.uniform(0.5, 1.0))
                delay = min(delay * 2, 5.0)
                continue
            if down_since is not None:
                log.warning(
                    "the frontier store is back after %.1f s", time.monotonic() - down_since
                )
            return result

    async def refresh_lastmod(self, changes: dict[str, float], now: float) -> None:
        """A sitemap's ``<lastmod>`` later than a URL's last fetch makes it due now."""
        if changes:
            await self.call(self.store.refresh_lastmod, list(changes.items()), now)

    def outcome(
        self,
        url_id: int,
        status: UrlStatus,
        http_status: int | None,
        fingerprint: str | None = None,
    ) -> None:
        self._outcomes.append(Outcome(url_id, status, http_status, self.now(), fingerprint))

    def record(self, outcome: Outcome) -> None:
        """An outcome built by the caller (with a refresh's validators)."""
        self._outcomes.append(outcome)

    def adopt(self, site: str) -> None:
        """``site`` joined the seed while the crawl runs: saved as a seed site with the next
        flush, before the URLs found with it."""
        self._adopted.append(site)

    # -- refills ------------------------------------------------------------------------

    def want(self, site: str) -> None:
        self._wanted.add(site)
        self._want_event.set()

    async def next_refill(self) -> dict[str, list[LeasedUrl]]:
        """Wait for sites that asked for work; lease for all of them at once. Every site
        that asked is in the answer (an empty list: nothing due)."""
        await self._want_event.wait()
        self._want_event.clear()
        sites, self._wanted = self._wanted, set()
        fences = None
        if self._fence_of is not None:
            fence_of = self._fence_of
            fences = {site: fence for site in sites if (fence := fence_of(site)) is not None}
        job = asyncio.ensure_future(
            self.call(self._lease_many, sorted(sites), self.queue_per_site, fences)
        )
        try:
            leased = await asyncio.shield(job)
        except asyncio.CancelledError:
            # The crawl is stopping while the store leases: what it leases goes back (on the
            # store thread, before the store closes), never left leased by nobody.
            job.add_done_callback(lambda done: self._give_back(done))
            raise
        return {site: leased.get(site, []) for site in sites}

    def _give_back(self, done: asyncio.Future[dict[str, list[LeasedUrl]]]) -> None:
        if done.cancelled() or done.exception() is not None:
            return
        ids = [item.id for items in done.result().values() for item in items]
        if ids:
            self._thread.submit(lambda: self.store.release_leases(ids=ids))

    def _lease_many(
        self, sites: list[str], limit: int, fences: dict[str, Fence] | None
    ) -> dict[str, list[LeasedUrl]]:
        now = self.now()
        leased = self.store.lease_due(limit, sites, now, fences)
        for site, items in leased.items():
            if len(items) >= limit and all(i.lane is not UrlLane.DISCOVERY for i in items):
                fence = None if fences is None else fences[site]
                items.extend(self.store.lease(site, max(1, limit // 2), now, fence))
        return leased

    # -- writes -------------------------------------------------------------------------

    async def flush(self, drain: Drain) -> tuple[int, list[str]]:
        """Write what was gathered; (new URLs written, sites that received new work)."""
        new_urls, horizon, edges, evictions = drain()
        self._urgent.update(u.site for u in new_urls if u.lane < UrlLane.DISCOVERY)
        outcomes, self._outcomes = self._outcomes, []
        adopted, self._adopted = self._adopted, []
        if not (new_urls or outcomes or horizon or evictions or adopted):
            return 0, []
        fed = await self.call(self._write, new_urls, outcomes, horizon, evictions, edges, adopted)
        return len(new_urls), fed

    def urge(self, site: str) -> None:
        """A page of ``site`` fell due on the priority path (a fast source's look): lease the
        site after the next flush, whatever it holds."""
        self._urgent.add(site)

    def take_urgent(self) -> set[str]:
        """Sites that received fastlane or freshlane URLs in the flushes since the last call
        (written by now): the priority path leases them at once."""
        urgent, self._urgent = self._urgent, set()
        return urgent

    def _write(
        self,
        new_urls: list[NewUrl],
        outcomes: list[Outcome],
        horizon: list[HorizonLink],
        evictions: list[tuple[str, int]],
        edges: list[HostEdge],
        adopted: list[str],
    ) -> list[str]:
        if adopted:
            self.store.add_sites(adopted, SiteState.SEED, self.now())
        fed = self.store.write_batch(new_urls, outcomes, horizon, self.now(), host_edges=edges)
        for site, cap in evictions:
            self.evicted += self.store.evict_deeper(site, cap)
        return fed

    async def close(self) -> None:
        try:
            await self.call(lambda: None)  # a lease still running hands back what it leased
            await self.call(self.store.close)
        finally:
            self._thread.shutdown(wait=True)
