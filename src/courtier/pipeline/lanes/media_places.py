"""Media hosts known by where they live, not by their names.

Listing sites keep their images on hostnames of their own: a platform's media host on the
platform's servers (``media.platform.example``), a vanity name CNAMEd to an image CDN
(``images.shop.example -> images.ctfassets.net``, ``-> d123.cloudfront.net``), an image
service (``-> res.cloudinary.com``, ``-> acme.imgix.net``) or an object store
(``-> img.agent.example.s3.amazonaws.com``, ``-> c.storage.googleapis.com``). By name they
are ordinary hosts outside the seed, so their images were horizon and never fetched. Their
DNS says what they are.

Rules (``place`` is pure; the keys are ``courtier.politeness.placement``'s):
- The CNAME chain reaches a provider's name (a store endpoint, a shared CDN or image-service
  hostname, a service's per-customer name, a CDN's name): the host is that provider's
  customer or bucket (``placement.behind``).
- Origin inference puts the host on the origin of a seed site (a platform's own media host:
  the same CNAME name or addresses as its tenants, whether or not the platform's own names
  are seed sites): same-origin media, booked on the host's ``site:`` key and that origin, at
  the image cost.
- Anything else stays what it was: a horizon link, recorded, never fetched.
- A host is looked up once; hosts found within ``LOOKUP_BATCH`` seconds of each other are
  looked up together (one re-clustering of origins); at most ``MAX_HOSTS`` of them. Its
  first images keep their horizon record while it is looked up (nothing is lost if it is not
  media) and wait, at most ``PENDING_PER_HOST`` of them; once it is placed they are fetched
  as media, and so is every later image of it, each on its own keys (``placement``: an
  account's store endpoint keys each image on its container).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass

from courtier.pipeline.scheduling.timer import Timer, sleep_until
from courtier.politeness.keys import KeyRules
from courtier.politeness.placement import Placement, behind, same_origin
from courtier.url import Url

__all__ = ["HostFacts", "Lookup", "MediaPlaces", "Placement", "place"]

log = logging.getLogger(__name__)

LOOKUP_BATCH = 0.5
"""Seconds to gather image hosts before one lookup of them all."""
PENDING_PER_HOST = 1_000
"""Images of a host being looked up that wait for its answer (the rest stay horizon only)."""
MAX_HOSTS = 5_000
"""Image hosts ever looked up: each joins origin inference, which re-clusters every host it
knows; a crawl whose pages embed from endless third-party hosts (ads, trackers) keeps the
rest horizon rather than grow it without end."""


@dataclass(frozen=True, slots=True)
class HostFacts:
    """What a lookup found: the host's CNAME chain and the origin inference gave it."""

    cname_chain: tuple[str, ...]
    origin: str | None


def place(
    site: str, facts: HostFacts, seed_origins: Iterable[str], rules: KeyRules
) -> Placement | None:
    """Where the media host ``site`` (host[:port]) lives, or None: not media (see the rules)."""
    found = behind(site, facts.cname_chain, rules)
    if found is not None:
        return found
    origin = facts.origin
    if origin is not None and origin in set(seed_origins):
        return same_origin(site, origin)
    return None


Lookup = Callable[[list[str]], Awaitable[Mapping[str, HostFacts]]]
"""Hosts -> their facts (origin inference's DNS and clustering); a host missing: unknown."""


class MediaPlaces:
    def __init__(
        self,
        look_up: Lookup,
        seed_origins: Callable[[], Iterable[str]],
        rules: KeyRules,
        offer: Callable[[Url, str, Placement], object],
        tasks: set[asyncio.Task[None]],
        timer: Timer,
    ) -> None:
        self.look_up = look_up
        self.timer = timer
        self.seed_origins = seed_origins
        self.rules = rules
        self.offer = offer
        self.tasks = tasks
        self.placed: dict[str, Placement | None] = {}
        """Site (host[:port]) -> its placement, None: not media. Absent: not known yet."""
        self._pending: dict[str, list[tuple[Url, str]]] = {}
        self._batch: dict[str, str] = {}
        """Sites to look up next -> their host."""
        self.stopping = False

    def known(self, site: str) -> bool:
        return site in self.placed

    def placement(self, url: Url) -> Placement | None:
        """Where the image ``url`` is booked, its host placed; None: not placed (yet)."""
        placement = self.placed.get(url.site)
        return None if placement is None else placement.for_url(url)

    def ask(self, url: Url, referrer: str, *, image: bool = True) -> None:
        """An image of an unknown host: look the host up (once) and fetch it if it is media.
        ``image`` False (a render's request): only look the host up, for later renders."""
        site = url.site
        if self.stopping or site in self.placed:
            return
        waiting = self._pending.get(site)
        if waiting is None:
            if len(self.placed) + len(self._pending) >= MAX_HOSTS:
                return
            waiting = self._pending[site] = []
            self._batch[site] = url.host
            if len(self._batch) == 1:
                task = asyncio.get_running_loop().create_task(self._look_up_soon())
                self.tasks.add(task)
                task.add_done_callback(self.tasks.discard)
        if image and len(waiting) < PENDING_PER_HOST:
            waiting.append((url, referrer))

    async def _look_up_soon(self) -> None:
        await sleep_until(self.timer, self.timer.now() + LOOKUP_BATCH)
        batch, self._batch = self._batch, {}
        try:
            found = await self.look_up(sorted(set(batch.values())))
        except Exception:  # a lookup that breaks must not stop the crawl: the hosts stay horizon
            log.exception("looking up %d image hosts failed", len(batch))
            found = {}
        origins = set(self.seed_origins())
        for site, host in batch.items():
            facts = found.get(host)
            placement = None if facts is None else place(site, facts, origins, self.rules)
            self.placed[site] = placement
            waiting = self._pending.pop(site, [])
            if placement is None or self.stopping:
                continue
            log.info("%s holds media: %s", site, placement.why)
            for url, referrer in waiting:
                self.offer(url, referrer, placement.for_url(url))
