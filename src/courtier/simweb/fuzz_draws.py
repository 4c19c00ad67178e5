"""The fuzzer's random draws (`courtier.simweb.fuzz`): names, stacks, and what stands in front
of a backend (a generated CDN's edge, a platform's own front servers and caches, a brand).

Rules:
- Every draw comes from one rng seeded by the world's seed, in a fixed order: a pure function.
- Names are `<word><word><N>.test` with a serial N shared by every name, so none repeats.
- `deal` hands out a variant from a deck shuffled per world, every variant before a repeat, so
  the few instances of a shape in one world differ.
- A generated site gets a bucket of its own named after its whole host (`www.` sites share a
  first label, so the older `media-<label>` would collide), and one of the robots.txt files
  the older sites have.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

from courtier.simweb.sites import (
    BRAND_HEADERS,
    CDN_DOMAIN,
    EDGE_HEADERS,
    FRONT_HEADERS,
    ROBOTS_VARIANTS,
    WORDS,
    Brand,
    Edge,
    Front,
    Site,
)

T = TypeVar("T")

# A platform runs one web server and one application (`stacks`: `<server>+<app>`).
PLATFORM_SERVERS = ("nginx", "nginx", "nginx-1.24", "openresty", "apache", "caddy")
PLATFORM_APPS = ("static", "static", "php82", "express", "django", "rails", "laravel")
_VIA = ("1.1 varnish (Varnish/6.0)", "1.1 varnish (Varnish/7.1)", "1.1 varnish", "squid")
_SERVED_BY = (("web1", "web2"), ("haproxy-01", "haproxy-02"), ("app-3", "app-4"), ("lb1",))
_SUFFIXES = ("Sites", "Press", "Shop", "Cloud", "Pages", "Stack", "Hub")


class Builder(Protocol):
    """What the fuzzer needs of the world builder (`world._Builder`)."""

    sites: dict[str, Site]
    a_records: dict[str, tuple[int, ...]]
    cnames: dict[str, str]
    ptr_names: dict[int, str]

    def slot(self) -> int: ...

    def add(self, site: Site) -> Site: ...


class Draws:
    """Random choices for one generated world, and the names and records they make."""

    def __init__(self, b: Builder, seed: int) -> None:
        self.b = b
        self.rng = random.Random(f"fuzz:{seed}")
        self.serial = 0
        self.edges: list[Edge] = []
        self.built: list[str] = []  # generated seed hosts, in build order
        self._decks: dict[str, list[Any]] = {}
        self._brands: set[str] = set()

    # -- drawing ---------------------------------------------------------------------------

    def deal(self, key: str, options: Sequence[T]) -> T:
        """The next of `options` from a deck shuffled per world: all of them before a repeat."""
        deck = self._decks.get(key)
        if not deck:
            deck = self._decks[key] = self.rng.sample(list(options), len(options))
        value: T = deck.pop()
        return value

    def count(self, mean: float, cap: int) -> int:
        """A heavy-tailed count of at least 2: most platforms are small, a few are large."""
        return min(cap, 2 + int(self.rng.expovariate(1 / mean)))

    def coin(self, p: float) -> bool:
        return self.rng.random() < p

    def domain(self) -> str:
        self.serial += 1
        return f"{self.rng.choice(WORDS)}{self.rng.choice(WORDS)}{self.serial}.test"

    def own_host(self) -> str:
        domain = self.domain()
        return f"www.{domain}" if self.coin(0.4) else domain

    def stack(self, servers: Sequence[str], apps: Sequence[str]) -> str:
        return f"{self.rng.choice(servers)}+{self.rng.choice(apps)}"

    def generic_stack(self) -> str:
        return self.stack(PLATFORM_SERVERS, PLATFORM_APPS)

    # -- what stands in front of backends ----------------------------------------------------

    def cdn(self) -> Edge:
        says = self.deal("cdn-says", (True, False))
        self.serial += 1
        word = self.rng.choice(WORDS)
        if says and self.coin(0.5):
            name, product = f"e{self.serial}.{CDN_DOMAIN}", "simcdn"
        elif says:
            name, product = f"edge.{word}{self.serial}cdn.test", f"{word}cdn"
        else:
            place = self.rng.choice(("global", "edge", "geo", "front"))
            name, product = f"{place}.{self.domain()}", f"{word}{self.rng.choice(WORDS)}"
        domain = name.split(".", 1)[1]
        slots = tuple(self.b.slot() for _ in range(self.rng.randint(1, 3)))
        self.b.a_records[name] = slots
        if self.coin(0.5 if says else 0.2):  # PTR names under the CDN's own domain
            for i, slot in enumerate(slots, 1):
                ptr = f"n{i}-{self.serial}.{domain}"
                self.b.ptr_names[slot] = ptr
                self.b.a_records[ptr] = (slot,)
        marks = (self.deal("edge-mark", ("served-by", "ray")),)
        extra = [h for h in EDGE_HEADERS if h not in marks and self.coin(0.5)]
        headers = tuple(h for h in EDGE_HEADERS if h in marks or h in extra)
        code = (product[0] + self.rng.choice(product[1:])).upper()
        status = self.rng.choice((421, 404, 403))
        return Edge(name, product, code, slots, headers, says, status)

    def distribution(self, edge: Edge) -> str:
        """A name of the CDN's own for one customer, resolving to the edge's addresses."""
        self.serial += 1
        domain = edge.name.split(".", 1)[1]
        name = f"f{self.rng.getrandbits(48):012x}{self.serial}.{domain}"
        self.b.a_records[name] = edge.slots
        return name

    def front(self, domain: str, only: tuple[str, ...] = ()) -> Front:
        if only:
            headers = only
        else:
            forced = self.deal("front-header", FRONT_HEADERS)
            headers = tuple(h for h in FRONT_HEADERS if h == forced or self.coin(0.45))
        via = self.rng.choice(_VIA)
        if via == "squid":
            via = f"1.1 cache{self.rng.randint(1, 4)}.{domain} (squid/4.10)"
        cache_from = self.rng.choice(("", " from varnish1", f" from cache2.{domain}"))
        servers = self.rng.choice(_SERVED_BY)
        return Front(headers, via, cache_from, servers, self.rng.randint(15, 85))

    def brand(self, everywhere: bool) -> Brand:
        name = f"{self.rng.choice(WORDS).capitalize()}{self.rng.choice(_SUFFIXES)}"
        while name in self._brands:
            name += self.rng.choice(WORDS)
        self._brands.add(name)
        forced = self.deal("brand-header", BRAND_HEADERS)
        headers = tuple(h for h in BRAND_HEADERS if h == forced or self.coin(0.4))
        cookie = self.rng.choice((f"{name.lower()}_sid", f"{name.lower()}-visitor", None))
        return Brand(name, headers, cookie, self.coin(0.6), everywhere)

    def add(self, site: Site) -> Site:
        bucket = f"media-{site.host.replace('.', '-')}"[:63]
        site = dataclasses.replace(
            site,
            robots_text=self.rng.choice(ROBOTS_VARIANTS),
            bucket=bucket,
            store_style=self.rng.choice(("virtual", "path")),
        )
        self.built.append(site.host)
        return self.b.add(site)
