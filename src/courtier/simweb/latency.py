"""How long the simulated web takes to answer: the real web's latencies, drawn per site.

Why: a loopback web answers in 3-40 ms, and a crawler tuned on it never learns what keeps
thousands of requests in flight. Real servers answer in hundreds of milliseconds, each site
in a band of its own, with a tail to seconds, sites that sometimes never answer in time, and
a handshake before a new connection's first answer.

Rules (all off when ``WorldParams.latency_median`` is 0: older worlds answer as they did):
- Each origin draws its base latency once (a platform's tenants share their servers', or
  a crawler's latency feedback on their shared origin would read one tenant's band against
  another's as congestion), from a log-normal distribution of median ``latency_median`` and
  shape ``latency_spread``, capped at ``latency_max``; media hosts
  (CDNs, object stores, image services) answer from nearby nodes: ``MEDIA_SHARE`` of it.
  A site whose latency is its behaviour (a slow site, one whose latency rises with load: the
  audit judges a crawler's latency feedback on it) keeps the world's.
- A share ``hang_share`` of the seed sites hangs now and then: ``HANG_EVERY``-th request or
  so (drawn) waits ``hang_seconds`` before answering, longer than a crawler should wait.
- Each answer varies around its site's base by ``JITTER`` either way.
- A connection's first request pays ``CONNECT_SHARE`` of its site's base on top: the TCP and
  TLS handshakes a kept-alive connection does not repeat.
- Draws come from generators of their own, seeded from the world's seed and the host, so
  adding latency changes no other draw of a world, and a site's answers are the same on
  every run of the same world.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Final

from courtier.simweb.sites import MEDIA_KINDS, SEED_KINDS, Behaviour, Site

if TYPE_CHECKING:
    from courtier.simweb.world import WorldParams

MEDIA_SHARE: Final = 0.25
"""A media host's latency as a share of a page site's (CDN nodes sit near the client)."""
JITTER: Final = 0.25
"""Each answer takes its site's base latency times a factor within 1 +- this."""
CONNECT_SHARE: Final = 0.5
"""A new connection's first answer waits this share of the site's base more (handshakes)."""
HANG_EVERY: Final = 10
"""A hanging site hangs on one request in this many, on average."""
REAL_WEB: Final = {
    "latency_median": 0.35,
    "latency_spread": 0.7,
    "latency_max": 4.0,
    "hang_share": 0.01,
    "hang_seconds": 30.0,
}
"""The real web's latencies as the benchmarks take them (``bench/``'s default): a median
site answers in 350 ms, one in ten after about 850 ms, the slowest after 4 s; one seed site
in a hundred hangs for 30 s (past a crawler's read timeout) on about one request in ten."""


def add_latencies(sites: MutableMapping[str, Site], params: WorldParams) -> None:
    """Give every site of the world its base latency."""
    median = params.latency_median
    if median <= 0:
        return
    for host, site in sorted(sites.items()):
        # Drawn per origin: a platform's tenants are answered by the same servers.
        base_rng = random.Random(f"latency:{params.seed}:{site.origin}")
        spread = params.latency_spread * base_rng.gauss(0, 1)
        base = min(params.latency_max, median * math.exp(spread))
        rng = random.Random(f"latency:{params.seed}:{host}")
        if site.kind in MEDIA_KINDS:
            base *= MEDIA_SHARE
        own = site.latency > 0 or Behaviour.RISING_LATENCY in site.behaviours
        latency = site.latency if own else round(base, 4)
        hangs = site.kind in SEED_KINDS and rng.random() < params.hang_share
        sites[host] = dataclasses.replace(site, latency=latency, hangs=hangs)


def mean_answer_time(params: WorldParams, site: Site) -> float:
    """Seconds the site takes to answer on average (its hangs counted at full length; the
    handshake left out, paid once per kept-alive connection); 0 without latencies."""
    if params.latency_median <= 0:
        return 0.0
    if not site.hangs:
        return site.latency
    return (1 - 1 / HANG_EVERY) * site.latency + params.hang_seconds / HANG_EVERY


class AnswerTimes:
    """The delay of each answer of a world with latencies (one per simulated web)."""

    def __init__(self, params: WorldParams) -> None:
        self.on = params.latency_median > 0
        self.hang_seconds = params.hang_seconds
        self._seed = params.seed
        self._rngs: dict[str, random.Random] = {}

    def delay(self, site: Site, base: float, first_on_connection: bool) -> float:
        """Seconds to wait before answering a request of ``site`` whose behaviour asks for
        ``base`` (its latency, or more for a site whose latency rises with load)."""
        if not self.on:
            return base
        rng = self._rngs.get(site.host)
        if rng is None:
            rng = self._rngs[site.host] = random.Random(f"answers:{self._seed}:{site.host}")
        if site.hangs and rng.random() < 1.0 / HANG_EVERY:
            return self.hang_seconds
        delay = base * (1.0 + JITTER * (2.0 * rng.random() - 1.0))
        if first_on_connection:
            delay += CONNECT_SHARE * site.latency
        return delay
