"""Origin evidence shared by the workers of a fleet (``frontier.observations``).

A worker sees the headers and certificates of the sites it fetches, and only those. Without
sharing, the worker holding most tenants of a platform groups them by their headers while
another, holding the rest, keeps its tenants on the name DNS gave: one platform booked on two
origin keys, each with the whole budget. So every ``SHARE_EVERY`` seconds each worker writes
what its fetches showed and reads what the others' showed into its own inference: every
worker groups sites on the same evidence and names the same origins, within seconds. For
those seconds a site that moved books on its old origin's key as well as its new one
(``TRANSITION``), so workers that have moved and workers that have not yet share a budget;
not a site split off onto an origin of its own, where no other worker's site books.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging

from courtier.frontier.base import FrontierError
from courtier.frontier.observations import Observation
from courtier.origins.infer import OriginInference
from courtier.pipeline.feed.frontier_io import FrontierIO
from courtier.pipeline.scheduling.timer import Timer, sleep_until
from courtier.pipeline.stats import CrawlStats

log = logging.getLogger(__name__)

SHARE_EVERY = 2.0
"""Seconds between two exchanges of origin evidence with the other workers."""
TRANSITION = 3 * SHARE_EVERY + 2.0
"""Seconds a site that moved to another origin books on its old one too: another worker
still books the old key until the evidence reaches it (an exchange, then a re-clustering),
and until then the two keys must not each grant the whole budget."""


class SharedEvidence:
    def __init__(
        self,
        worker: str,
        inference: OriginInference,
        frontier: FrontierIO,
        timer: Timer,
        stats: CrawlStats,
    ) -> None:
        self.worker = worker
        self.inference = inference
        self.frontier = frontier
        self.timer = timer
        self.stats = stats
        self._unshared: list[Observation] = []
        self._after = 0
        """The id of the last observation read."""

    def mine(self, observation: Observation) -> None:
        """Evidence this worker's own fetch showed (its inference took it already)."""
        self._unshared.append(dataclasses.replace(observation, worker=self.worker))

    async def run(self, observed: set[str], new_evidence: asyncio.Event) -> None:
        """Exchange evidence until the crawl ends; a host the others observed joins
        ``observed`` (its own answer here adds nothing) and new evidence sets
        ``new_evidence`` (the origins are clustered again)."""
        store = self.frontier.store
        while True:
            await sleep_until(self.timer, self.timer.now() + SHARE_EVERY)
            try:
                mine, self._unshared = self._unshared, []
                if mine:
                    await self.frontier.call(store.save_observations, mine, self.timer.now())
                theirs = await self.frontier.call(
                    store.observations_after, self._after, self.worker
                )
            except FrontierError as exc:  # the next round tries again
                log.warning("origin evidence not shared this round: %s", exc)
                continue
            for seen in theirs:
                self._after = max(self._after, seen.id)
                observed.add(seen.host)
                new = False
                if seen.home is not None or seen.missing is not None:
                    new |= self.inference.observe(seen.host, seen.home, seen.missing)
                if seen.tls is not None:
                    new |= self.inference.observe_tls(seen.host, seen.tls)
                if new:
                    self.stats.shared_evidence += 1
                    new_evidence.set()
