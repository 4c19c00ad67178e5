"""Keys spaced from real sends: a late send must not bring the next start closer.

Why: a booked slot is where a request *starts*; the server sees it when its headers go out,
after the guard's resolution and, on a new connection, a connect, each a turn of the event
loop. Under load one request can go out a few hundred milliseconds after its slot while the
next, on a kept-alive connection, goes out on time: two slots one charge apart arrive closer
than that, and an origin's budget is exceeded in the window (seen at 2,000 sites with the
loop lagging ~300 ms). The same holds for a site: its lane spaces its own requests from
their real sends (``SiteLane.next_start``), but another sender may book its key too (a
robots.txt redirect hop booked by ``hops.py``, a media host's lanes), and a slot booked behind
that one is spaced from its slot, not from when it went out. Late in its slot, connecting, or
held past it on its origin (the saturated group a site had just been split off, while the
site booked on its own origin at once, right behind it), a hop came 0.83-0.97 s before the
site's next request at 1 request/s.

Rules:
- A key is watched when it is a site key (at the site's own spacing, ``site_spacing``:
  Crawl-delay, backoff and all, whoever sends there) or its burst is 0 (origins, CDN
  misses: cost x the key's interval).
- A launch on watched keys waits until, for each of them, the last request sent on it has
  been out for its charge, and until no earlier launch on it is still unsent (it may yet go
  out at any moment). The scheduler holds the start within the slot's deadline; past it, it
  goes on holding when every key of the slot is spaced from real sends (site and watched
  keys: a page), and forfeits the slot (which stays consumed) otherwise. A server that
  answers slowly to connect thus gets its charge from each send.
- A request that never goes out (the guard refused, the connection failed) releases its
  keys when its work ends.
- The record of real sends is key state, kept by ``KeyClocks`` in the limiter, so the
  workers of a fleet space from each other's sends: a start on a watched key first reads
  the others' (``refresh``) when the limiter is shared. Unsent launches are this process's
  own (another worker's launch that has not gone out is not seen until it does).
- A key no other worker sends on (``private``: in a fleet, the origin of a site alone on it
  and the site's own key, whose shard this worker holds) is not read before a start: nobody
  else books there but a robots.txt hop from another worker's site, whose own slot there the
  booking already spaces from (that hop reads the site's sends before it goes).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping

from courtier.pipeline.scheduling.clocks import KeyClocks
from courtier.politeness.gcra import KeyParams

UNSENT_RECHECK = 0.01
"""Seconds between looks while an earlier launch on a key has not gone out yet."""
SITE = "site:"
_SITE_KEY = KeyParams(0.0, weighted=False)
"""What ``watched`` gives a site key: its spacing is the site's own (``site_spacing``)."""


def _site_keys(key: str) -> bool:
    return key.startswith(SITE)


class SendSpacing:
    def __init__(self, clocks: KeyClocks) -> None:
        self._clocks = clocks
        self._policy = clocks.policy
        self._watched: dict[str, KeyParams | None] = {}
        self._unsent: Counter[str] = Counter()
        self.holds = 0
        """Starts held back by a late send on one of their keys."""
        self.private: Callable[[str], bool] = _site_keys
        """A watched key only this worker sends on: nothing to read before a start there
        (one process: its sites' keys; a fleet's worker: ``Cluster.sends_alone_on``)."""
        self.site_interval: Callable[[str], float | None] = lambda _site: None
        """A site's own interval where this worker crawls it (its lane's; the engine wires
        it): else the configured one and ``margin``, as for a robots.txt hop's floor."""
        self.margin = 0.0

    def site_spacing(self, site: str) -> float:
        """Seconds after a real send on ``site`` before the next start there."""
        own = self.site_interval(site)
        if own is not None:
            return own
        return self._clocks.policy.params_of(SITE + site).interval + self.margin

    def watched(self, keys: Iterable[str]) -> list[tuple[str, KeyParams]]:
        if self._clocks.policy is not self._policy:  # an operator's budget changed a key
            self._policy = self._clocks.policy
            self._watched.clear()
        found = []
        for key in keys:
            if key not in self._watched:
                self._watched[key] = self._classify(key)
            params = self._watched[key]
            if params is not None:
                found.append((key, params))
        return found

    def _classify(self, key: str) -> KeyParams | None:
        if key.startswith(SITE):
            return _SITE_KEY
        try:
            params = self._policy.params_of(key)
        except ValueError:
            return None
        return params if params.burst == 0 else None

    def all_spaced(self, keys: Iterable[str]) -> bool:
        """Every key is spaced from real sends (watched)."""
        keys = list(keys)
        return len(self.watched(keys)) == len(keys)

    def needs_refresh(self, keys: Iterable[str]) -> bool:
        """Other workers' sends on ``keys`` must be read before judging a start."""
        if not self._clocks.sends_shared:
            return False
        private = self.private
        return any(not private(key) for key, _params in self.watched(keys))

    async def refresh(self, keys: Iterable[str]) -> None:
        private = self.private
        await self._clocks.refresh_sent(
            key for key, _params in self.watched(keys) if not private(key)
        )

    def hold_until(self, keys: Iterable[str], now: float) -> float:
        """When a start on ``keys`` may go out (``now``: at once), from the sends known here
        (with a shared limiter, ``refresh`` first)."""
        until = now
        sent_ready = self._clocks.sent_ready
        for key, _params in self.watched(keys):
            if self._unsent[key] > 0:
                until = max(until, now + UNSENT_RECHECK)
            ready = sent_ready(key)
            if ready is not None and ready > until:
                until = ready
        return until

    def launched(self, keys: Iterable[str]) -> None:
        for key, _params in self.watched(keys):
            self._unsent[key] += 1

    def sent(
        self,
        keys: Iterable[str],
        cost: float,
        at: float,
        *,
        launched: bool = True,
        spacing: Mapping[str, float] | None = None,
    ) -> None:
        """A request on ``keys`` went out at ``at`` (``launched``: it was counted unsent by
        ``launched``; a robots.txt hop is not, see ``hops.py``). ``spacing``: the interval
        each site key was booked at (a lane's own, a media host's Crawl-delay); a key not in
        it waits ``site_spacing``."""
        ready = {}
        private, urgent = self.private, False
        for key, params in self.watched(keys):
            if launched:
                self._release(key)
            if params is _SITE_KEY:
                booked = None if spacing is None else spacing.get(key)
                if booked is None:
                    booked = self.site_spacing(key[len(SITE) :])
                ready[key] = at + booked
            else:
                ready[key] = at + (cost if params.weighted else 1.0) * params.interval
            urgent = urgent or not private(key)
        if ready:
            self._clocks.note_sent(ready, urgent=urgent)

    def not_sent(self, keys: Iterable[str]) -> None:
        for key, _params in self.watched(keys):
            self._release(key)

    def _release(self, key: str) -> None:
        if self._unsent[key] > 1:
            self._unsent[key] -= 1
        else:
            del self._unsent[key]
