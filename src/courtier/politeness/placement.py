"""Where a media host lives, by where its DNS leads: the keys its images are booked on.

Listing sites keep their images on hostnames of their own that their DNS places elsewhere: a
vanity name CNAMEd to an image CDN, an image service or an object store
(``images.shop.example -> images.ctfassets.net``), or a platform's media host on the
platform's servers. By name they are ordinary hosts; the provider is known by the names their
CNAME chain reaches, and those are the real providers' names, so this is keyed here, purely.

Rules (``behind``), each link of the chain in order, the first that names a provider wins:
- an object store's endpoint (``courtier.url.store_name``): the bucket it names
  (``img.shop.example.s3.amazonaws.com``, ``*.s3-website-<region>.amazonaws.com``); on an
  account's endpoint (``acct.blob.core.windows.net``) the container the image's path names
  (``Placement.for_url``); on a path-style endpoint (``s3.amazonaws.com``,
  ``s3.<region>.amazonaws.com``, ``c.storage.googleapis.com``) the bucket named like the vanity
  host, as S3 and GCS serve a CNAME's Host. Keys: ``bucket:<provider>/<bucket>`` only.
- a shared CDN hostname (``KeyRules.cdn_hosts``: Contentful's ``images.ctfassets.net``): the
  vanity host is one customer of it, ``cdn:<that host>``.
- a shared image-service hostname (``KeyRules.imgsvc_hosts``: ``res.cloudinary.com``,
  Cloudflare Images' ``imagedelivery.net``): ``imgsvc:<service host>/<vanity host>``; a
  service's per-customer name (``KeyRules.imgsvc_domains``: ``acme.imgix.net``):
  ``imgsvc:<service>/<that name>``, the key a direct URL on that name books.
- a CDN's name (``courtier.origins.cdn``: ``*.cloudfront.net``, ``*.fastly.net`` and
  ``*.global.ssl.fastly.net``, Akamai's ``*.edgekey.net``/``*.akamaized.net``, ``*.b-cdn.net``):
  ``cdn:<the CDN's domain>``.
- A CDN customer's misses are booked on ``cdn-miss:<vanity host>`` and the embedding site's
  origin while a miss is expected; an image service's on that origin while it acts as a cache.
``same_origin`` places a host origin inference puts on a seed site's origin (a platform's
media host): ``site:<host>`` and ``origin:<that origin>``, at the image cost.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

from courtier.origins.cdn import CdnRules
from courtier.politeness.keys import KeyRules, KeyType, LimitKey, MediaSource
from courtier.url import StoreName, Url, host_of_site, store_name

_CACHES = frozenset({MediaSource.CDN, MediaSource.IMGSVC})


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a media host lives: what its images are booked on."""

    source: MediaSource
    keys: tuple[LimitKey, ...]
    """Keys of every request (``bucket:``, ``cdn:``, ``imgsvc:``, or ``site:`` + ``origin:``)."""
    miss_key: LimitKey | None = None
    """A CDN customer's ``cdn-miss:`` key, booked while a miss is expected."""
    why: str = ""
    store: StoreName | None = None
    """An account's store endpoint whose containers the images' paths name (``for_url``)."""

    def for_url(self, url: Url) -> Placement:
        """The placement of one image: on an account's endpoint, its container's bucket."""
        if self.store is None or not self.store.per_path:
            return self
        bucket = self.store.bucket_behind(url.host, url.target)
        if bucket is None:
            return self
        key = LimitKey(KeyType.BUCKET, f"{self.store.provider}/{bucket}")
        return dataclasses.replace(self, keys=(key,), store=None)

    def keys_for(
        self, *, miss_expected: bool, customer_origin: str | None, service_caches: bool = True
    ) -> tuple[LimitKey, ...]:
        """The keys one image is booked on: while a miss is expected, a CDN customer's miss
        key and the embedding site's origin (an image service's, while it acts as a cache)."""
        if not miss_expected or self.source not in _CACHES:
            return self.keys
        extra = [] if self.miss_key is None else [self.miss_key]
        caches = self.miss_key is not None or service_caches
        if caches and customer_origin is not None:
            extra.append(LimitKey(KeyType.ORIGIN, customer_origin))
        return (*self.keys, *extra)


def behind(site: str, chain: Iterable[str], rules: KeyRules) -> Placement | None:
    """The provider the media host ``site`` (host[:port]) is a customer or bucket of, by the
    names its CNAME ``chain`` reaches (see the rules), or None: its chain names none."""
    for name in chain:
        found = _provider(site, name.lower().rstrip("."), rules)
        if found is not None:
            return found
    return None


def same_origin(site: str, origin: str) -> Placement:
    """A media host on the servers of ``origin``, which seed sites share: that origin pays."""
    return Placement(
        MediaSource.SAME_ORIGIN,
        (LimitKey(KeyType.SITE, site), LimitKey(KeyType.ORIGIN, origin)),
        why=f"on the servers of origin {origin}, which seed sites share",
    )


def _provider(site: str, name: str, rules: KeyRules) -> Placement | None:
    store = store_name(name)
    if store is not None:
        return _store(site, name, store)
    if name in rules.cdn_hosts:
        return _cdn(site, name, f"CNAME to {name}: a customer of the CDN {name}")
    if name in rules.imgsvc_hosts:
        key = LimitKey(KeyType.IMGSVC, f"{name}/{site}")
        why = f"CNAME to {name}: a customer of the image service {name}"
        return Placement(MediaSource.IMGSVC, (key,), why=why)
    service = rules.imgsvc_domain(name)
    if service is not None:
        key = LimitKey(KeyType.IMGSVC, f"{service}/{name}")
        why = f"CNAME to {name}: the image service {service}'s customer {name}"
        return Placement(MediaSource.IMGSVC, (key,), why=why)
    cdn = (rules.cdn_names or CdnRules()).cdn_domain(name)
    if cdn is not None:
        return _cdn(site, cdn, f"CNAME to {name}: a customer of the CDN {cdn}")
    return None


def _cdn(site: str, cdn: str, why: str) -> Placement:
    keys = (LimitKey(KeyType.CDN, cdn),)
    return Placement(MediaSource.CDN, keys, LimitKey(KeyType.CDN_MISS, site), why)


def _store(site: str, name: str, store: StoreName) -> Placement:
    if store.per_path:
        # The account's key until an image's path names its container (``for_url``).
        key = LimitKey(KeyType.BUCKET, f"{store.provider}/{store.account}")
        why = f"CNAME to {name}: the {store.provider} account {store.account}'s containers"
        return Placement(MediaSource.STORE, (key,), why=why, store=store)
    bucket = store.bucket_behind(host_of_site(site))
    assert bucket is not None  # named by the endpoint, or the host itself
    key = LimitKey(KeyType.BUCKET, f"{store.provider}/{bucket}")
    return Placement(MediaSource.STORE, (key,), why=f"CNAME to {name}: bucket {key.name}")
