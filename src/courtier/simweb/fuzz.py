"""A web fuzzer: random hosting topologies from a seed number, and who shares servers in them.

Worlds with one platform of each kind, each with a header of its own, flattered the crawler:
webs with other hosting shapes saw one origin per tenant and up to 301 times a platform's
budget. `add_fuzz` builds `fuzz_sites` seed sites of random shapes into a world (counts,
names, DNS, stacks and header combinations drawn from the seed); `Site.origin` is the truth
the audit judges by, every origin at the world's budget.

Shapes (`SHAPES`, in `Site.shape`):
- generic-platform: tenants CNAME to one platform name (`sites.<p>.test`, sometimes through a
  second name of the platform's), have plain A records to its addresses, or are its
  subdomains; 1-3 addresses, mostly with PTR names in its own domain (`web1.<p>.test`); a
  common stack's headers only (`Server: nginx`), sometimes an `X-Served-By: web1` from its
  front servers. Origin `platform:<p>`.
- cached-platform: the same behind its own caches: Via, X-Cache, X-Served-By, Age, X-Varnish,
  X-Cache-Hits, X-Cache-Status in random combinations, values no CDN's (`layers`); mostly
  generic, sometimes a brand of its own.
- cdn-platform: tenants CNAME to a platform name that CNAMEs to a generated CDN's name (its
  shared edge name or a distribution of the platform's own), generic or distinctive platform
  headers, the edge's CDN-shaped headers on top. A branded platform whose brand is on every
  answer may send its tenants to the CDN directly (no name of its own before the CDN's, or
  plain A records to the edge): only its brand groups them.
- shared-hosting: a hosting company's 1-3 servers, each its own origin `server:<company>/<n>`,
  each with unrelated owners' sites (A records, or a CNAME to `host<N>.<company>.test`); one
  web server per machine, each site its own application; a PTR name or none.
- cdn-stranger: unrelated sites behind a generated CDN edge (a CNAME to its shared name or to a
  distribution name of their own, or plain A records to its addresses), whose backends show a
  distinctive brand each, identical generic headers, or mixed generic stacks. Each its own
  origin, sharing the edge with platforms and each other.
- www-pair: `<domain>` and `www.<domain>`: on one server (one origin, the bare host; www a
  CNAME to the bare name or the same A record), or on two (each its own origin); sometimes
  the bare name redirects every page to www.

Overlays on those sites:
- platform-media: a platform's media host (`media.<p>.test`, `cdn.<p>.test`...) on its own
  servers (`SiteKind.PLATFORM_MEDIA`), embedded by its tenants, charged to the platform;
- vanity media: `images.<domain>` (or img., static., media., cdn.) CNAMEd to a CDN
  distribution name or a CDN's shared name known by that name alone (the Contentful-like
  `images.simassets.test`), the site's own bucket host or the store's path-style endpoint
  (the site's bucket is then named like the vanity host, as S3 and GCS serve a CNAME), or the
  image service (`Site.customer`). Which name of a CDN or a store is drawn from a generator
  of its own (`fuzz-media:<seed>`), so the other draws of a world are as they were;
- robots redirects: robots.txt answering 301/302/307/308 (http only) to the robots.txt of the
  www/bare twin, of another host of the same origin, or of a host of another origin; the
  target is always a seed site whose robots.txt answers. Ground truth: the site's robots.txt
  is its target's (`Site.robots_text`).

Generated CDNs (`sites.Edge`): a name that says CDN (`e<N>.simcdn.test`, `edge.<word><N>cdn.test`)
or does not (`global.<word><word><N>.test`), 1-3 addresses, PTR names under its own domain
sometimes, CDN-shaped headers in random combinations, its own error page.

Rules (the draws themselves, names and what stands in front of backends: `fuzz_draws`):
- Pure: the topology is a function of (seed, fuzz_sites) alone, drawn from its own rng, so the
  rest of the world's parameters do not move it.
- Names are `<word><word><N>.test` with a serial N: they never meet the older builder's
  `<word>-<word><N>.test`, nor each other.
- A variant of a shape is dealt from a shuffled deck per world (`Draws.deal`), so the few
  instances of a shape in one world differ and a handful of seeds show every variant.
- A platform that only its brand can group (no name of its own before the CDN's) sends the
  brand on every answer, robots.txt included: every shape can be crawled politely by a
  crawler that reads DNS and the first answer's headers well.
"""

from __future__ import annotations

import dataclasses
import random
from collections import defaultdict

from courtier.simweb.fuzz_draws import Builder, Draws
from courtier.simweb.media_shapes import SIMASSETS, SIMASSETS_HOST, simassets_slots
from courtier.simweb.sites import (
    CDN_DOMAIN,
    CDN_HOST,
    IMGSVC_HOST,
    STORE_HOST,
    WORDS,
    Edge,
    Site,
    SiteKind,
)

SHAPES = (
    "generic-platform",
    "cached-platform",
    "cdn-platform",
    "shared-hosting",
    "cdn-stranger",
    "www-pair",
)
_WEIGHTS = (20, 15, 15, 20, 20, 10)
MIN_SITES = 12  # room for every shape at least once
PLATFORM_MEDIA = "platform-media"
VANITY_MEDIA = "vanity-media"

# A hosting machine runs one web server, each site on it its own application (`stacks`).
_HOSTING_SERVERS = ("apache", "apache-centos", "apache-plesk", "litespeed", "nginx", "openresty")
_HOSTING_APPS = ("static", "php74", "php81", "php82", "wordpress", "wordpress", "laravel")
_PLATFORM_NAMES = ("sites", "hosting", "proxy", "lb", "apps", "custom", "domains")
_MEDIA_NAMES = ("media", "static", "img", "cdn", "assets")
_VANITY_NAMES = ("images", "img", "static", "media", "cdn")
_ALLOW_ALL = "User-agent: *\nAllow: /\n"


def add_fuzz(b: Builder, seed: int, n_sites: int) -> tuple[Edge, ...]:
    """Build `n_sites` seed sites of random shapes into `b`; the generated CDNs' edges."""
    if n_sites <= 0:
        return ()
    f = _Fuzz(b, seed)
    f.edges = [f.cdn() for _ in range(min(4, 1 + n_sites // 150))]
    first = f.rng.sample(SHAPES, len(SHAPES))  # every shape once, then as the weights say
    remaining = n_sites
    while remaining > 0:
        shape = first.pop() if first else f.rng.choices(SHAPES, _WEIGHTS)[0]
        room = max(2, n_sites // 10) if first else remaining
        remaining -= f.build(shape, min(room, remaining))
    f.vanity_media()
    f.robots_redirects()
    return tuple(f.edges)


class _Fuzz(Draws):
    def __init__(self, b: Builder, seed: int) -> None:
        super().__init__(b, seed)
        self.pairs: list[tuple[str, str]] = []  # (bare, www)
        self._provider = ""
        self._media_rng = random.Random(f"fuzz-media:{seed}")
        """Which of a provider's names a vanity host CNAMEs to: drawn apart, so adding the
        shared names moved no other draw of a world."""

    # -- shapes ------------------------------------------------------------------------------

    def build(self, shape: str, room: int) -> int:
        """Build one instance of `shape` with at most `room` seed sites; how many it made."""
        if shape == "www-pair" and room >= 2:
            return sum(self._pair() for _ in range(min(room // 2, self.rng.randint(1, 3))))
        if shape == "shared-hosting":
            return self._hosting(min(room, self.count(8, 30)))
        if shape in ("cdn-stranger", "www-pair"):
            return self._strangers(min(room, self.count(8, 30)))
        return self._platform(shape, min(room, self.count(10, 60)))

    def _platform(self, shape: str, n: int) -> int:
        domain = self.domain()
        origin = f"platform:{domain}"
        cdn = shape == "cdn-platform"
        branded = self.coin(0.5 if cdn else 0.3 if shape == "cached-platform" else 0.0)
        ways: tuple[str, ...] = ("cname", "chain", "a-records", "subdomains")
        if cdn:
            ways = ("cname", "chain", "direct") if branded else ("cname", "chain")
        way = self.deal(f"dns:{shape}:{branded}", ways)
        # Only a brand on the first answer (robots.txt) can group tenants no DNS name groups.
        brand = self.brand(way == "direct" or self.coin(0.7)) if branded else None
        front = None
        if shape == "cached-platform" or (cdn and self.coin(0.3)):
            front = self.front(domain)
        elif shape == "generic-platform" and self.coin(0.5):
            front = self.front(domain, ("x-served-by",))
        stack = self.generic_stack()
        first, second = self.rng.sample(_PLATFORM_NAMES, 2)
        name = target = f"{first}.{domain}"
        if cdn:
            edge = self.rng.choice(self.edges)
            slots = edge.slots
            target = edge.name if self.coin(0.5) else self.distribution(edge)
            if way != "direct":
                self.b.cnames[name] = target
        else:
            slots = tuple(self.b.slot() for _ in range(self.rng.randint(1, 3)))
            ptr = self.deal(f"ptr:{shape}", (True, True, False))
            prefix = self.rng.choice(("web", "srv", "node"))
            for i, slot in enumerate(slots, 1):
                server = f"{prefix}{i}.{domain}"
                self.b.a_records[server] = (slot,)
                if ptr:
                    self.b.ptr_names[slot] = server
            self.b.a_records[name] = slots
        cluster = name
        if way == "chain":
            cluster = f"{second}.{domain}"
            self.b.cnames[cluster] = name
        elif way == "direct":
            cluster = target
        plain_a = way == "a-records" or (way == "direct" and self.coin(0.3))
        tenants = []
        for _ in range(n):
            if way == "subdomains":
                self.serial += 1
                host = f"{self.rng.choice(WORDS)}{self.serial}.{domain}"
            else:
                host = self.own_host()
            if plain_a or (way == "subdomains" and self.coin(0.5)):
                self.b.a_records[host] = slots
            else:
                self.b.cnames[host] = cluster
            tenant = Site(host, SiteKind.PLATFORM_TENANT, origin, slots, shape=shape)
            tenant = dataclasses.replace(tenant, stack=stack, brand=brand, front=front)
            tenants.append(self.add(tenant))
        if not cdn and self.deal(f"media:{shape}", (True, False)):
            self._platform_media(domain, origin, slots, name, tenants)
        return n

    def _platform_media(
        self, domain: str, origin: str, slots: tuple[int, ...], name: str, tenants: list[Site]
    ) -> None:
        """The platform's own media host, on its own servers: its images are the platform's."""
        host = f"{self.deal('media-name', _MEDIA_NAMES)}.{domain}"
        if self.coin(0.5):
            self.b.cnames[host] = name
        else:
            self.b.a_records[host] = slots
        media = Site(host, SiteKind.PLATFORM_MEDIA, origin, slots, robots_text=_ALLOW_ALL)
        self.b.add(dataclasses.replace(media, shape=PLATFORM_MEDIA))
        for tenant in tenants:
            self.b.sites[tenant.host] = dataclasses.replace(tenant, media_host=host)

    def _hosting(self, n: int) -> int:
        company = self.domain()
        machines = min(self.rng.randint(1, 3), max(1, n // 2))
        shares = [n // machines + (i < n % machines) for i in range(machines)]
        for i, count in enumerate(shares, 1):
            slot = self.b.slot()
            self.serial += 1
            name = f"host{self.serial}.{company}"
            self.b.a_records[name] = (slot,)
            if self.deal("ptr:hosting", (True, True, False)):
                self.b.ptr_names[slot] = name
            server = self.deal("hosting-server", _HOSTING_SERVERS)
            for _ in range(count):
                host = self.own_host()
                if self.coin(0.2):
                    self.b.cnames[host] = name
                else:
                    self.b.a_records[host] = (slot,)
                stack = f"{server}+{self.rng.choice(_HOSTING_APPS)}"
                site = Site(host, SiteKind.SHARED_HOST, f"server:{company}/{i}", (slot,))
                self.add(dataclasses.replace(site, stack=stack, shape="shared-hosting"))
        return n

    def _strangers(self, n: int) -> int:
        edge = self.rng.choice(self.edges)
        evidence = self.deal("evidence", ("distinctive", "identical", "none"))
        same = self.generic_stack()
        for _ in range(n):
            host = self.own_host()
            way = self.rng.choices(("edge-name", "distribution", "a-records"), (5, 3, 2))[0]
            if way == "edge-name":
                self.b.cnames[host] = edge.name
            elif way == "distribution":
                self.b.cnames[host] = self.distribution(edge)
            else:
                self.b.a_records[host] = edge.slots
            stack = same if evidence == "identical" else self.generic_stack()
            brand = self.brand(self.coin(0.7)) if evidence == "distinctive" else None
            site = Site(host, SiteKind.CDN_SITE, host, edge.slots, shape="cdn-stranger")
            self.add(dataclasses.replace(site, stack=stack, brand=brand))
        return n

    def _pair(self) -> int:
        domain = self.domain()
        www = f"www.{domain}"
        two = self.deal("pair-servers", (False, True))
        stack = self.generic_stack()
        slots = [self.b.slot()]
        self.b.a_records[domain] = (slots[0],)
        if two:
            slots.append(self.b.slot())
            self.b.a_records[www] = (slots[1],)
        elif self.coin(0.5):
            self.b.cnames[www] = domain
        else:
            self.b.a_records[www] = (slots[0],)
        for slot in slots:
            if self.coin(0.4):  # a rented machine named by its provider
                self._provider = self._provider or self.domain()
                self.serial += 1
                name = f"vps{self.serial}.{self._provider}"
                self.b.ptr_names[slot] = name
                self.b.a_records[name] = (slot,)
        for host, slot in ((domain, slots[0]), (www, slots[-1])):
            # Two machines may run two stacks: the bare name's is often a small redirector.
            own = stack if host == www or not two else self.generic_stack()
            site = Site(host, SiteKind.PAIR_SITE, host if two else domain, (slot,), stack=own)
            redirect = www if host == domain and self.coin(0.3) else None
            self.add(dataclasses.replace(site, shape="www-pair", redirect_to=redirect))
        self.pairs.append((domain, www))
        return 2

    # -- overlays ----------------------------------------------------------------------------

    def vanity_media(self) -> None:
        """Some sites' images on `images.<domain>`: a CDN distribution or a CDN's shared name,
        the site's bucket (by its own host or the store's endpoint), or the image service."""
        cdn, store, imgsvc = (self.b.sites[h].slots for h in (CDN_HOST, STORE_HOST, IMGSVC_HOST))
        for host in self.built:
            site = self.b.sites[host]
            domain = host.removeprefix("www.")
            own = site.kind is not SiteKind.PLATFORM_TENANT or domain.count(".") == 1
            if not own or site.media_host or site.redirect_to or not self.coin(0.15):
                continue
            vanity = f"{self.deal('vanity-name', _VANITY_NAMES)}.{domain}"
            if vanity in self.b.sites or vanity in self.b.cnames or vanity in self.b.a_records:
                continue
            target = self.deal("vanity-target", ("cdn", "store", "imgsvc"))
            shared = self._media_rng.random() < 0.5  # a provider's shared name
            if target == "cdn" and shared:
                self.rng.getrandbits(52)  # the distribution name it does not take
                self.b.cnames[vanity] = SIMASSETS_HOST
                names: tuple[str, ...] = (vanity,)
                slots = simassets_slots(self.b)
                media = Site(vanity, SiteKind.CDN, SIMASSETS, slots, customer=host)
            elif target == "cdn":
                distribution = f"d{self.rng.getrandbits(52):013x}.{CDN_DOMAIN}"
                self.b.a_records[distribution] = cdn
                self.b.cnames[vanity] = distribution
                names = (distribution, vanity)
                media = Site(vanity, SiteKind.CDN, "simcdn", cdn, customer=host)
            elif target == "store":
                if shared:  # the bucket named like the vanity host, reached by CNAME
                    site = self.b.sites[host] = dataclasses.replace(site, bucket=vanity)
                self.b.cnames[vanity] = STORE_HOST if shared else f"{site.bucket}.{STORE_HOST}"
                names = (vanity,)
                media = Site(vanity, SiteKind.STORE, "simstore", store, robots_status=404)
                media = dataclasses.replace(media, bucket=site.bucket, customer=host)
            else:
                self.b.cnames[vanity] = IMGSVC_HOST
                names = (vanity,)
                media = Site(vanity, SiteKind.IMGSVC, "simresize", imgsvc, customer=host)
            for name in names:
                self.b.add(
                    dataclasses.replace(
                        media, host=name, shape=VANITY_MEDIA, robots_text=_ALLOW_ALL
                    )
                )
            self.b.sites[host] = dataclasses.replace(site, media_host=vanity)

    def robots_redirects(self) -> None:
        """robots.txt answers that redirect to the twin's, to another host of the same origin,
        to a host of another origin; at least one of each when the world has room."""
        moved: set[str] = set()
        targets: set[str] = set()

        def redirect(source: str, target: str) -> bool:
            busy = source in targets or target in moved or source == target
            if busy or source in moved or self.b.sites[target].robots_status != 200:
                return False
            site, aim = self.b.sites[source], self.b.sites[target]
            status = self.rng.choice((301, 302, 307, 308))
            self.b.sites[source] = dataclasses.replace(
                site, robots_redirect=target, robots_text=aim.robots_text, redirect_status=status
            )
            moved.add(source)
            targets.add(target)
            return True

        for i, (bare, www) in enumerate(self.pairs):
            if i == 0 or self.coin(0.4):
                redirect(*((bare, www) if self.coin(0.7) else (www, bare)))
        groups: dict[str, list[str]] = defaultdict(list)
        for host in self.built:
            groups[self.b.sites[host].origin].append(host)
        shared = [hosts for hosts in groups.values() if len(hosts) > 1]
        done = False
        for hosts in shared:
            for host in hosts:
                if (not done or self.coin(0.05)) and redirect(host, self.rng.choice(hosts)):
                    done = True
        done = False
        for host in self.built:
            other = self.rng.choice(self.built)
            if self.b.sites[other].origin == self.b.sites[host].origin:
                continue
            if (not done or self.coin(0.03)) and redirect(host, other):
                done = True
