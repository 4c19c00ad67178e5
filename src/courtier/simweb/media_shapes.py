"""Media where real sites keep it: the shapes a held-out web had and our worlds lacked.

A crawl of a web built elsewhere fetched none of the images on vanity names CNAMEd to a real
image CDN's shared name (``images.example-shop.com -> images.ctfassets.net``, Contentful), and
none on a listing platform's own media host, whose tenants' pages live on vanity domains. Our
vanity names all CNAMEd to names that say CDN or bucket (``d<hex>.simcdn.test``,
``<bucket>.s3.simstore.test``), and our one platform media host sat on a platform whose names
and PTR records give it away.

Shapes (both off at 0: a world without them is the world it was, byte for byte):
- provider vanity (``WorldParams.provider_media``, a share of the own-domain seed sites,
  standalone and edge sites, that have no media host yet): ``images.<host>`` CNAMEd to a
  provider's *shared* name, taken in turn so a small world has each: the Contentful-like CDN
  ``images.simassets.test`` (``SIMASSETS_HOST``: no ``cdn`` in its name, known by that name
  alone, as Contentful's is), the image service ``img.simresize.test`` (Cloudinary's shape:
  ``/<transform>/img/N.jpg``), or the store's path-style endpoint ``s3.simstore.test``, which
  serves the bucket named like the vanity host (S3's and GCS's answer to a CNAME's Host).
- listing platforms (``WorldParams.listing_tenants`` tenants, over two platforms): tenants on
  vanity domains ``<word>-<word>-<N>.test`` whose pages embed
  ``media.<platform>/<tenant host>/img/N.jpg``; the media host is on the platform's servers
  and no name of the platform is a seed site. ``listhub.test``: tenants CNAME
  ``sites.listhub.test``, the media host has plain A records to the same two addresses, no
  PTR names, generic ``nginx`` answers. ``homespot.test``: tenants and ``photos.homespot.test``
  have plain A records to its one address, no PTR; only its brand's headers group the
  tenants. Every request to a media host is charged to its platform (``PLATFORM_MEDIA``).
- Draws come from a generator of their own (``media-shapes:<seed>``), so no other draw of a
  world moves; the shapes are built after every older step.
"""

from __future__ import annotations

import dataclasses
import random
from typing import TYPE_CHECKING, Final

from courtier.simweb.fuzz_draws import Builder
from courtier.simweb.sites import (
    IMGSVC_HOST,
    STORE_HOST,
    WORDS,
    Brand,
    Site,
    SiteKind,
)

if TYPE_CHECKING:
    from courtier.simweb.world import WorldParams

SIMASSETS_HOST: Final = "images.simassets.test"
"""The Contentful-like CDN: one shared name, the customer in the first path segment."""
SIMASSETS: Final = "simassets"
PROVIDER_MEDIA: Final = "provider-media"
LISTING_PLATFORM: Final = "listing-platform"
LISTING_MEDIA: Final = "listing-media"
PROVIDER_TARGETS: Final = ("cdn", "imgsvc", "store")
"""The shared names a provider vanity host CNAMEs to, in the order they are taken."""
LISTHUB: Final = "listhub.test"
HOMESPOT: Final = "homespot.test"
_ALLOW_ALL: Final = "User-agent: *\nAllow: /\n"
_LISTING_ROBOTS: Final = "User-agent: *\nDisallow: /search\n"


def add_media_shapes(b: Builder, params: WorldParams) -> dict[str, str]:
    """Build the shapes into ``b`` (see the module rules); the buckets they add (bucket name
    -> the seed site whose media it holds)."""
    rng = random.Random(f"media-shapes:{params.seed}")
    buckets: dict[str, str] = {}
    if params.provider_media > 0:
        buckets.update(_provider_vanity(b, rng, params.provider_media))
    if params.listing_tenants > 0:
        _listing_platforms(b, rng, params.listing_tenants)
    return buckets


def simassets_slots(b: Builder) -> tuple[int, ...]:
    """The Contentful-like CDN's servers, the CDN built on first use."""
    site = b.sites.get(SIMASSETS_HOST)
    if site is None:
        slot = b.slot()
        b.a_records[SIMASSETS_HOST] = (slot,)
        site = Site(SIMASSETS_HOST, SiteKind.CDN, SIMASSETS, (slot,), robots_text=_ALLOW_ALL)
        b.add(site)
    return site.slots


def _provider_vanity(b: Builder, rng: random.Random, share: float) -> dict[str, str]:
    simassets = simassets_slots(b)
    buckets: dict[str, str] = {}
    turn = 0
    for site in list(b.sites.values()):
        own_domain = site.kind in (SiteKind.STANDALONE, SiteKind.EDGE_SITE)
        if not own_domain or site.unicode_host or site.media_host or rng.random() >= share:
            continue
        vanity = f"images.{site.host}"
        if vanity in b.sites or vanity in b.cnames or vanity in b.a_records:
            continue
        target = PROVIDER_TARGETS[turn % len(PROVIDER_TARGETS)]
        turn += 1
        if target == "cdn":
            b.cnames[vanity] = SIMASSETS_HOST
            media = Site(vanity, SiteKind.CDN, SIMASSETS, simassets)
        elif target == "imgsvc":
            b.cnames[vanity] = IMGSVC_HOST
            media = Site(vanity, SiteKind.IMGSVC, "simresize", b.sites[IMGSVC_HOST].slots)
        else:  # the path-style endpoint serves the bucket named like the vanity host
            b.cnames[vanity] = STORE_HOST
            media = Site(vanity, SiteKind.STORE, "simstore", b.sites[STORE_HOST].slots)
            media = dataclasses.replace(media, robots_status=404, bucket=vanity)
            buckets[vanity] = site.host
        robots = "" if target == "store" else _ALLOW_ALL
        b.add(
            dataclasses.replace(media, customer=site.host, shape=PROVIDER_MEDIA, robots_text=robots)
        )
        b.sites[site.host] = dataclasses.replace(site, media_host=vanity)
    return buckets


def _listing_platforms(b: Builder, rng: random.Random, n: int) -> None:
    listhub = max(1, (n + 1) // 2)
    web1, web2 = b.slot(), b.slot()
    b.a_records[f"sites.{LISTHUB}"] = (web1, web2)
    _platform(b, rng, LISTHUB, listhub, (web1, web2), media="media", cname=f"sites.{LISTHUB}")
    if n - listhub > 0:
        server = b.slot()
        brand = Brand("HomeSpot", ("powered-by", "tenant"), "homespot_sid", True, False)
        _platform(b, rng, HOMESPOT, n - listhub, (server,), media="photos", brand=brand)


def _platform(
    b: Builder,
    rng: random.Random,
    domain: str,
    n: int,
    slots: tuple[int, ...],
    *,
    media: str,
    cname: str | None = None,
    brand: Brand | None = None,
) -> None:
    origin = f"platform:{domain}"
    host = f"{media}.{domain}"
    b.a_records[host] = slots  # on the platform's servers: no name of its own before them
    b.add(
        Site(
            host,
            SiteKind.PLATFORM_MEDIA,
            origin,
            slots,
            robots_text=_ALLOW_ALL,
            shape=LISTING_MEDIA,
        )
    )
    label = domain.split(".", 1)[0]
    for i in range(1, n + 1):
        tenant = f"{rng.choice(WORDS)}-{rng.choice(WORDS)}-{label}{i}.test"
        if cname is not None:
            b.cnames[tenant] = cname
        else:
            b.a_records[tenant] = slots
        site = Site(
            tenant,
            SiteKind.PLATFORM_TENANT,
            origin,
            slots,
            robots_text=_LISTING_ROBOTS,
            stack="nginx+php82",
            brand=brand,
            shape=LISTING_PLATFORM,
            media_host=host,
        )
        b.add(site)
