"""Media hosts known by where they live, not by their names.

Listing sites keep their images on hostnames of their own: a platform's media host on the
platform's servers (``media.platform.example``), a vanity name CNAMEd to a CDN distribution
(``images.agent.example -> d123.cloudfront.net``) or to a bucket
(``-> img.agent.example.s3.amazonaws.com``). By name they are ordinary hosts outside the seed,
so their images were horizon and never fetched. Their DNS says what they are.

Rules (``place`` is pure):
- The CNAME chain reaches a bucket's host: keyed on that bucket (``bucket:``), like a store URL.
- The CNAME chain reaches a CDN's name: the host is one CDN customer's hostname (``cdn:<cdn>``,
  and while a miss is expected ``cdn-miss:<host>`` and the embedding site's origin), like a
  per-customer CDN name.
- Origin inference puts the host on the origin of a seed site (a platform's own media host):
  same-origin media, booked on the host's ``site:`` key and that origin, at the image cost.
- Anything else stays what it was: a horizon link, recorded, never fetched.
- A host is looked up once; hosts found within ``LOOKUP_BATCH`` seconds of each other are
  looked up together (one re-clustering of origins); at most ``MAX_HOSTS`` of them. Its
  first images keep their horizon record while it is looked up (nothing is lost if it is not
  media) and wait, at most ``PENDING_PER_HOST`` of them; once it is placed they are fetched
  as media, and so is every later image of it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass

from courtier.origins.cdn import CdnRules
from courtier.pipeline.scheduling.timer import Timer, sleep_until
from courtier.politeness.keys import KeyType, LimitKey, MediaSource
from courtier.url import Url, UrlError, object_store, parse_url

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
class Placement:
    """Where a media host lives: what its images are booked on."""

    source: MediaSource
    keys: tuple[LimitKey, ...]
    """Keys of every request (``bucket:``, ``cdn:``, or ``site:`` + ``origin:``)."""
    miss_key: LimitKey | None = None
    """A CDN customer's ``cdn-miss:`` key, booked while a miss is expected."""
    why: str = ""

    def keys_for(self, *, miss_expected: bool, customer_origin: str | None) -> tuple[LimitKey, ...]:
        """The keys one image is booked on (a CDN's miss also on the embedding site's origin)."""
        if self.miss_key is None or not miss_expected:
            return self.keys
        extra = [self.miss_key]
        if customer_origin is not None:
            extra.append(LimitKey(KeyType.ORIGIN, customer_origin))
        return (*self.keys, *extra)


@dataclass(frozen=True, slots=True)
class HostFacts:
    """What a lookup found: the host's CNAME chain and the origin inference gave it."""

    cname_chain: tuple[str, ...]
    origin: str | None


def place(
    site: str, facts: HostFacts, seed_origins: Iterable[str], rules: CdnRules
) -> Placement | None:
    """Where the media host ``site`` (host[:port]) lives, or None: not media (see the rules)."""
    for name in facts.cname_chain:
        try:
            store = object_store(parse_url(f"http://{name}/"))
        except UrlError:
            store = None
        if store is not None:
            key = LimitKey(KeyType.BUCKET, f"{store.provider}/{store.bucket}")
            return Placement(MediaSource.STORE, (key,), why=f"CNAME to {name}: bucket {key.name}")
        cdn = rules.cdn_domain(name)
        if cdn is not None:
            return Placement(
                MediaSource.CDN,
                (LimitKey(KeyType.CDN, cdn),),
                LimitKey(KeyType.CDN_MISS, site),
                why=f"CNAME to {name}: a customer of the CDN {cdn}",
            )
    origin = facts.origin
    if origin is not None and origin in set(seed_origins):
        return Placement(
            MediaSource.SAME_ORIGIN,
            (LimitKey(KeyType.SITE, site), LimitKey(KeyType.ORIGIN, origin)),
            why=f"on the servers of origin {origin}, which seed sites share",
        )
    return None


Lookup = Callable[[list[str]], Awaitable[Mapping[str, HostFacts]]]
"""Hosts -> their facts (origin inference's DNS and clustering); a host missing: unknown."""


class MediaPlaces:
    def __init__(
        self,
        look_up: Lookup,
        seed_origins: Callable[[], Iterable[str]],
        rules: CdnRules,
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
                self.offer(url, referrer, placement)
