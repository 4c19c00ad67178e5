"""Page bodies of the simulated web, rendered on first request and kept in a bounded cache.

Rules:
- A page is a pure function of (world, network, site, path, query): the same request always
  gets the same bytes, so crawls of one seed are comparable.
- Seed sites have page classes: home `/`, listings `/list/N`, details `/item/N`, search results
  `/search?q=..&page=..`, images `/img/N.jpg`, `/private/...` (disallowed by robots.txt but served,
  so a rude client gets content), and on some sites an endless calendar `/calendar/Y/M`.
- Links deliberately spell one host many ways (case, trailing dot, `:80` when the port is 80,
  Unicode and punycode), repeat URLs with reordered queries and fragments, and lead outside the
  seed (horizon hosts, a link farm) and to the canary (IP literals, DNS aliases, a redirect).
- With `documents` (off by default), seed sites serve PDFs and RSS/Atom feeds
  (`courtier.simweb.documents`).
- Pages are padded to `page_bytes` with pre-built paragraphs, so large pages cost a slice.
- Single-page apps, their plain-HTML twin and the third-party script host answer what
  `courtier.simweb.spa` renders (robots.txt aside); their catalogue is numbered as here.
- Generated sites (`fuzz`) may redirect: robots.txt to another host's robots.txt
  (`Site.robots_redirect`), every other page to the same path on another host
  (`Site.redirect_to`). A platform's own not-found page is its brand's (`layers`).
- A page embeds a site's image-service images only when the site's first label names it
  alone (`World.customer_labels`): `www.` sites share a label, and a path naming another
  customer would charge that customer's origin for their misses. A platform's media host is
  asked for `/<tenant>/img/N.jpg`, the tenant by host or, on platform A's, by label.
"""

from __future__ import annotations

import random
import zlib
from collections import OrderedDict
from urllib.parse import parse_qsl

from courtier.simweb import articles
from courtier.simweb.catalogue import (
    HTML,
    JPEG,
    TEXT,
    XML,
    Page,
    listing_items,
    listing_of,
    related_items,
)
from courtier.simweb.documents import FEED_HEAD, document_page, home_links
from courtier.simweb.layers import brand_not_found
from courtier.simweb.network import Network
from courtier.simweb.spa import SPA_PAGE_KINDS, SpaPages
from courtier.simweb.stacks import PLATFORM_C_404, stack_not_found
from courtier.simweb.world import (
    CDN_HOST,
    IMGSVC_HOST,
    PLATFORM_A_MEDIA_HOST,
    STORE_HOST,
    Behaviour,
    Site,
    SiteKind,
    World,
)

PARAGRAPH_BYTES = 512
SEARCH_PAGES = 3
FARM_PAGES = 50
PLATFORM_B_404 = (
    b"<!doctype html><html><head><title>Page not found</title></head>"
    b"<body><h1>Page not found</h1><p>Powered by Plinth.</p></body></html>"
)


def not_found(site: Site | None, path: str = "/") -> Page:
    if site is not None and site.kind is SiteKind.HEADER_TENANT:
        return Page(404, PLATFORM_B_404, HTML)
    if site is not None and site.kind is SiteKind.EDGE_TENANT:
        return Page(404, PLATFORM_C_404, HTML)
    if site is not None and site.brand is not None and site.brand.not_found:
        return Page(404, brand_not_found(site.brand), HTML)
    if site is not None and site.stack is not None:  # an edge site: its stack's stock page
        body, content_type, headers = stack_not_found(site.stack, path)
        return Page(404, body, content_type, headers)
    host = site.host if site else "this server"
    return Page(
        404, f"<html><body><h1>404</h1><p>Not found on {host}</p></body></html>".encode(), HTML
    )


_FILLER_WORDS = (
    "lorem ipsum garden river market lantern copper meadow signal harvest window "
    "paper thread stone orbit cloud"
)


def _paragraphs(seed: int, count: int = 64) -> bytes:
    """`count` paragraphs of exactly PARAGRAPH_BYTES each, twice over, for cheap slicing."""
    rng = random.Random(f"filler:{seed}")
    words = _FILLER_WORDS.split()
    out = []
    for _ in range(count):
        text = ""
        while len(text) < PARAGRAPH_BYTES - 20:
            text += rng.choice(words) + " "
        para = f"<p>{text}".ljust(PARAGRAPH_BYTES - 5) + "</p>\n"
        out.append(para.encode("ascii"))
    blob = b"".join(out)
    return blob + blob


class PageRenderer:
    """Renders pages for one world on one network; caches up to `cache_bytes` of bodies."""

    def __init__(self, world: World, network: Network, cache_bytes: int = 64 << 20) -> None:
        self.world = world
        self.network = network
        self.params = world.params
        self._filler = _paragraphs(world.params.seed)
        self._cache: OrderedDict[tuple[str, str, str], Page] = OrderedDict()
        self._cache_bytes = cache_bytes
        self._cached = 0
        self._seed_hosts = world.seed_hosts
        self._idn = world.sites_with(Behaviour.IDN)
        self._spa = SpaPages(world, network, self._html)
        self._last_article: articles.Article | None = None

    def article_of(self, host: str, path: str, query: str = "") -> articles.Article | None:
        """The ground truth of the article page at ``path`` (``WorldParams.articles``): its
        main text, language and boilerplate; None for a page that is no article."""
        site = self.world.sites.get(host)
        if site is None or not self.params.articles:
            return None
        self._last_article = None
        page = self._render(site, path, query)
        return self._last_article if page.status == 200 else None

    def render(self, site: Site, path: str, query: str) -> Page:
        key = (site.host, path, query)
        page = self._cache.get(key)
        if page is not None:
            self._cache.move_to_end(key)
            return page
        page = self._render(site, path, query)
        self._cache[key] = page
        self._cached += len(page.body)
        while self._cached > self._cache_bytes and self._cache:
            _, old = self._cache.popitem(last=False)
            self._cached -= len(old.body)
        return page

    # -- dispatch ---------------------------------------------------------------------------

    def _render(self, site: Site, path: str, query: str) -> Page:
        if path == "/robots.txt":
            return self._robots(site)
        if site.kind in SPA_PAGE_KINDS:  # single-page apps, their twin, their script host
            return self._spa.render(site, path)
        if site.kind is SiteKind.CDN:
            return self._cdn(site, path)
        if site.kind is SiteKind.STORE:
            return self._store(site, path)
        if site.kind is SiteKind.IMGSVC:
            return self._imgsvc(site, path)
        if site.kind in (SiteKind.HORIZON, SiteKind.FARM):
            return self._outside(site, path)
        if site.kind is SiteKind.PLATFORM_MEDIA:
            return self._platform_media(site, path)
        if site.redirect_to is not None:
            location = f"{self.network.origin_url(site.redirect_to)}{path}"
            return _moved(site, location + (f"?{query}" if query else ""))
        page = self._seed_page(site, path, query)
        if page.status == 404 and site.stack is not None:
            return not_found(site, path)  # the stock page of the stack names the path
        return page

    def _seed_page(self, site: Site, path: str, query: str) -> Page:
        parts = path.strip("/").split("/")
        if path == "/":
            return self._home(site)
        if path == "/search":
            return self._search(site, query)
        if len(parts) == 2 and parts[0] in ("list", "item", "img") and parts[1]:
            return self._numbered(site, parts[0], parts[1])
        if self.params.articles and len(parts) >= 2 and parts[0] in ("item", "story"):
            page = self._article_copy(site, path, parts)
            if page is not None:
                return page
        if parts[0] == "private":
            return self._html(site, f"Private {path}", [("/", "home")], path)
        if parts[0] == "calendar" and Behaviour.CALENDAR_TRAP in site.behaviours:
            return self._calendar(site, parts[1:])
        if path == "/go/elsewhere" and Behaviour.REDIRECT_TO_CANARY in site.behaviours:
            location = f"http://{self.network.canary_spellings()[0]}/landing"
            return Page(302, b"", TEXT, (("Location", location),))
        if self.params.documents and (document := document_page(site, self.params, path)):
            return document
        return not_found(site)

    def _numbered(self, site: Site, kind: str, number: str) -> Page:
        if kind == "img":
            stem, dot, ext = number.partition(".")
            n = _int(stem)
            if dot and ext == "jpg" and n is not None and 1 <= n <= self.params.n_images:
                return self._image(f"{site.host}/img/{n}")
            return not_found(site)
        n = _int(number)
        if kind == "list" and n is not None and 1 <= n <= self.params.n_lists:
            return self._listing(site, n)
        if kind == "item" and n is not None and 1 <= n <= self.params.n_items:
            return self._item(site, n)
        return not_found(site)

    # -- seed-site pages ---------------------------------------------------------------------

    def _home(self, site: Site) -> Page:
        rng = random.Random(f"{self.params.seed}:{site.host}:/")
        word = rng.choice(("garden", "lamp", "boots", "tea", "maps"))
        links = [
            ("/list/1", "Catalogue"),
            (f"/search?q={word}", f"Search {word}"),
            (f"/search?q={word}&page=2", "More results"),
            (f"/search?page=2&q={word}", "More results (again)"),
            ("/item/1", "Featured"),
            ("/item/1#reviews", "Reviews"),
            ("/private/account", "Account"),
            *self._self_spellings(site),
            *self._cross_links(site, rng, 3),
            *self._outside_links(rng),
            *self._bait_links(),
        ]
        if Behaviour.CALENDAR_TRAP in site.behaviours:
            links.append(("/calendar/2026/1", "Events"))
        if Behaviour.REDIRECT_TO_CANARY in site.behaviours:
            # First on the page: a short crawl (whose origin budget also pays for the
            # pages' images) still reaches the redirect it must refuse.
            links.insert(0, ("/go/elsewhere", "Partner offers"))
        extra = self.params.documents
        links += home_links(self.params) if extra else []
        return self._html(
            site,
            f"Welcome to {site.host}",
            links,
            "/",
            images=self._images(site, 1),
            in_head=FEED_HEAD if extra else "",
        )

    def _listing(self, site: Site, n: int) -> Page:
        p = self.params
        links = [(f"/item/{i}", f"Item {i}") for i in listing_items(p, n)]
        if n < p.n_lists:
            links.append((f"/list/{n + 1}", "Next page"))
        if n > 1:
            links.append((f"/list/{n - 1}", "Previous page"))
        links.append(("/", "Home"))
        return self._html(
            site, f"Catalogue page {n}", links, f"/list/{n}", images=self._images(site, n)
        )

    def _item(self, site: Site, n: int) -> Page:
        p = self.params
        rng = random.Random(f"{p.seed}:{site.host}:/item/{n}")
        links = [(f"/item/{m}", f"Related {m}") for m in related_items(p, n, rng)]
        links += [
            (f"/list/{listing_of(p, n)}", "Back to catalogue"),
            (f"/private/edit/{n}", "Edit"),
            (f"/private/open/{n}", "Open notes"),
            (f"/item/{n}?utm_source=self&ref=item", "Share"),
            (f"/item/{n}?ref=item&utm_source=self", "Share (again)"),
        ]
        if rng.random() < 0.3:
            links.extend(self._outside_links(rng))
        if self.params.articles and n % articles.PRINTABLE == 0:
            links.append((f"/item/{n}/print", "Print"))
        return self._html(site, f"Item {n}", links, f"/item/{n}", images=self._images(site, n))

    def _search(self, site: Site, query: str) -> Page:
        args = dict(parse_qsl(query))
        q = args.get("q", "")
        page = _int(args.get("page", "1")) or 1
        if not 1 <= page <= SEARCH_PAGES:
            return not_found(site)
        rng = random.Random(f"{self.params.seed}:{site.host}:search:{q}:{page}")
        hits = sorted(rng.sample(range(1, self.params.n_items + 1), min(8, self.params.n_items)))
        links = [(f"/item/{i}", f"Result {i}") for i in hits]
        if page < SEARCH_PAGES:
            links.append((f"/search?q={q}&page={page + 1}", "Next results"))
            links.append((f"/search?page={page + 1}&q={q}", "Next"))
        return self._html(site, f"Search: {q}", links, f"/search{page}")

    def _calendar(self, site: Site, parts: list[str]) -> Page:
        year = _int(parts[0]) if parts else None
        month = _int(parts[1]) if len(parts) > 1 else None
        if year is None or month is None or not 1 <= month <= 12 or not 1 <= year <= 9999:
            return not_found(site)
        nxt = (year + month // 12, month % 12 + 1)
        prev = (year - (month == 1), (month - 2) % 12 + 1)
        links = [
            (f"/calendar/{nxt[0]}/{nxt[1]}", "Next month"),
            (f"/calendar/{prev[0]}/{prev[1]}", "Previous month"),
        ]
        return self._html(site, f"Events {year}-{month:02d}", links, "/calendar")

    def _robots(self, site: Site) -> Page:
        if site.robots_redirect is not None:
            return _moved(site, f"{self.network.origin_url(site.robots_redirect)}/robots.txt")
        if site.robots_status == 200:
            return Page(200, site.robots_text.encode(), TEXT)
        if site.robots_status == 404:
            return not_found(site)
        return Page(site.robots_status, b"Internal Server Error\n", TEXT)

    # -- link sets -----------------------------------------------------------------------------

    def _self_spellings(self, site: Site) -> list[tuple[str, str]]:
        suffix = self.network.port_suffix
        links = [
            (f"http://{site.host.upper()}{suffix}/item/2", "Item 2"),
            (f"http://{site.host}.{suffix}/item/3", "Item 3"),
        ]
        if self.network.port == 80:
            links.append((f"http://{site.host}:80/item/4", "Item 4"))
        return links

    def _cross_links(self, site: Site, rng: random.Random, count: int) -> list[tuple[str, str]]:
        hosts = [h for h in rng.sample(self._seed_hosts, min(count, len(self._seed_hosts)))]
        hosts.extend(s.host for s in self._idn)
        links = []
        for host in hosts:
            if host == site.host:
                continue
            target = self.world.sites[host]
            links.append((self._spelled(target, rng), f"Friends at {host}"))
            if target.unicode_host:
                links.append((f"http://{target.unicode_host}{self.network.port_suffix}/", "Tŷ"))
                links.append((f"http://{target.host}{self.network.port_suffix}/", "Ty"))
        return links

    def _spelled(self, target: Site, rng: random.Random) -> str:
        suffix = self.network.port_suffix
        variants = [
            f"{target.host}{suffix}",
            f"{target.host.upper()}{suffix}",
            f"{target.host}.{suffix}",
        ]
        if self.network.port == 80:
            variants.append(f"{target.host}:80")
        return f"http://{rng.choice(variants)}/"

    def _outside_links(self, rng: random.Random) -> list[tuple[str, str]]:
        world = self.world
        hosts = [
            world.popular_horizon_host,
            *rng.sample(world.horizon_hosts, min(2, len(world.horizon_hosts))),
        ]
        if world.farm_hosts:
            hosts.append(rng.choice(world.farm_hosts))
        return [(f"{self.network.origin_url(h)}/", f"Visit {h}") for h in dict.fromkeys(hosts)]

    def _bait_links(self) -> list[tuple[str, str]]:
        links = [(f"http://{spelled}/", "Status") for spelled in self.network.canary_spellings()]
        for bait in self.world.sites_with(Behaviour.CANARY_ALIAS) + self.world.sites_with(
            Behaviour.REBIND
        ):
            links.append((f"{self.network.origin_url(bait.host)}/", "Assets"))
        return links

    def _images(self, site: Site, n: int) -> list[str]:
        p, net = self.params, self.network
        a, b = 1 + (n % p.n_images), 1 + ((n + 3) % p.n_images)
        images = [f"/img/{a}.jpg", f"{net.origin_url(CDN_HOST)}/{site.host}/img/{b}.jpg"]
        if site.bucket and site.store_style == "virtual":
            images.append(f"{net.origin_url(f'{site.bucket}.{STORE_HOST}')}/img/{a}.jpg")
        elif site.bucket:
            images.append(f"{net.origin_url(STORE_HOST)}/{site.bucket}/img/{b}.jpg")
        if self.world.customer_labels.get(site.label) == site.host:
            images.append(f"{net.origin_url(IMGSVC_HOST)}/{site.label}/w_320/img/{a}.jpg")
        if site.kind is SiteKind.CNAME_TENANT and PLATFORM_A_MEDIA_HOST in self.world.sites:
            images.append(f"{net.origin_url(PLATFORM_A_MEDIA_HOST)}/{site.label}/img/{b}.jpg")
        if site.media_host is not None:
            media = self.world.sites[site.media_host].kind
            if media is SiteKind.PLATFORM_MEDIA:
                images.append(f"{net.origin_url(site.media_host)}/{site.host}/img/{b}.jpg")
            elif media is SiteKind.IMGSVC:
                images.append(f"{net.origin_url(site.media_host)}/w_320/img/{a}.jpg")
            else:
                images.append(f"{net.origin_url(site.media_host)}/img/{a}.jpg")
        return images

    # -- hosts outside the seed ----------------------------------------------------------------

    def _outside(self, site: Site, path: str) -> Page:
        n = 0 if path == "/" else None
        if path.startswith("/page/"):
            n = _int(path.removeprefix("/page/"))
        if n is None or not 0 <= n < FARM_PAGES:
            return not_found(site)
        rng = random.Random(f"{self.params.seed}:{site.host}:{n}")
        links = [(f"/page/{(n + k) % FARM_PAGES}", f"Page {k}") for k in (1, 2, 7)]
        peers = self.world.farm_hosts if site.kind is SiteKind.FARM else self.world.horizon_hosts
        links += [
            (f"{self.network.origin_url(h)}/page/{rng.randrange(FARM_PAGES)}", h)
            for h in peers
            if h != site.host
        ]
        return self._html(site, f"{site.host} page {n}", links, f"/page/{n}")

    def _cdn(self, site: Site, path: str) -> Page:
        if site.customer is not None:  # a vanity host or a distribution name: /img/N.jpg
            name = f"cdn//{site.customer}{path}"  # the bytes cdn.simcdn.test/<host>/… serves
            return self._media_image(site, True, path.lstrip("/"), name)
        host, _, rest = path.lstrip("/").partition("/")
        customer = self.world.sites.get(host)
        styles = None if customer is None else self._spa.cdn_static(customer, rest)
        if styles is not None:  # an app's stylesheet (`simweb.spa`)
            return styles
        return self._media_image(site, customer is not None, rest, f"cdn/{path}")

    def _platform_media(self, site: Site, path: str) -> Page:
        label, _, rest = path.lstrip("/").partition("/")  # /<tenant host or label>/img/N.jpg
        named = self.world.site_of_host(label)
        tenant = named.host if named is not None else self.world.customer_labels.get(label.lower())
        known = tenant is not None and self.world.sites[tenant].origin == site.origin
        return self._media_image(site, known, rest, f"platform-media/{path}")

    def _store(self, site: Site, path: str) -> Page:
        if site.bucket is None:  # path-style: /<bucket>/<key>
            bucket, _, key = path.lstrip("/").partition("/")
        else:
            bucket, key = site.bucket, path.lstrip("/")
        if bucket not in self.world.buckets:
            return Page(404, b"<Error><Code>NoSuchBucket</Code></Error>", XML)
        page = self._media_image(site, True, key, f"store/{bucket}/{key}")
        if page.status == 404:
            return Page(404, b"<Error><Code>NoSuchKey</Code></Error>", XML)
        return page

    def _imgsvc(self, site: Site, path: str) -> Page:
        if site.customer is not None:  # a vanity host: /<transform>/<image path>
            _, _, key = path.lstrip("/").partition("/")
            return self._media_image(site, True, key, f"imgsvc//{site.customer}{path}")
        parts = path.lstrip("/").split("/", 2)  # <customer>/<transform>/<image path>
        if len(parts) != 3:
            return not_found(site)
        return self._media_image(site, True, parts[2], f"imgsvc/{path}")

    def _media_image(self, site: Site, known: bool, key: str, name: str) -> Page:
        stem = key.removeprefix("img/").removesuffix(".jpg")
        n = _int(stem)
        if known and key.startswith("img/") and n is not None and 1 <= n <= self.params.n_images:
            return self._image(name)
        return not_found(site)

    # -- bodies --------------------------------------------------------------------------------

    def _image(self, name: str) -> Page:
        size = max(16, self.params.image_bytes)
        rng = random.Random(f"{self.params.seed}:image:{name}")
        body = b"\xff\xd8\xff\xe0" + rng.randbytes(size - 6) + b"\xff\xd9"
        return Page(200, body, JPEG, (("Cache-Control", "public, max-age=86400"),))

    def _html(
        self,
        site: Site,
        title: str,
        links: list[tuple[str, str]],
        salt: str,
        images: list[str] | None = None,
        in_head: str = "",
    ) -> Page:
        if self.params.articles:
            return self._article(site, links, salt, salt, images or [])
        items = "".join(
            f'<li><a href="{_attr(href)}">{_text(text)}</a></li>' for href, text in links
        )
        imgs = "".join(f'<img src="{_attr(src)}" alt="">' for src in images or ())
        head = (
            f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{_text(title)}'
            f"</title>{in_head}</head><body><header><h1>{_text(title)}</h1></header>"
            f"<nav><ul>{items}</ul></nav><main>{imgs}"
        ).encode()
        tail = b"</main></body></html>\n"
        pad = max(0, self.params.page_bytes - len(head) - len(tail))
        paragraphs = -(-pad // PARAGRAPH_BYTES)
        blob_paragraphs = len(self._filler) // (2 * PARAGRAPH_BYTES)
        start = zlib.crc32(f"{site.host}{salt}".encode()) % blob_paragraphs * PARAGRAPH_BYTES
        filler = self._padding(start, paragraphs * PARAGRAPH_BYTES)
        return Page(200, head + filler + tail, HTML)

    def _article_copy(self, site: Site, path: str, parts: list[str]) -> Page | None:
        """``/item/N/print`` and ``/story/N``: item N's article again, at another URL."""
        n = _int(parts[1])
        if n is None or not 1 <= n <= self.params.n_items:
            return None
        if parts[0] == "item" and parts[2:] == ["print"] and n % articles.PRINTABLE == 0:
            return self._article(site, [(f"/item/{n}", "Back")], f"/item/{n}", path, [])
        if parts[0] == "story" and len(parts) == 2 and n % articles.STORY == 0:
            return self._article(site, [(f"/item/{n}", "Item")], f"/item/{n}", path, [])
        return None

    def _article(
        self, site: Site, links: list[tuple[str, str]], salt: str, path: str, images: list[str]
    ) -> Page:
        """An article page (``articles``): ``salt`` names its text, ``path`` its URL."""
        article = articles.article(self.params.seed, site.host, salt)
        self._last_article = article
        origin = self.network.origin_url(site.host)
        horizon = f"{self.network.origin_url(self.world.popular_horizon_host)}/page/1"
        canonical, in_header = articles.canonical_of(path, origin, horizon)
        related = [(links[0][0] if links else "/", article.boilerplate[-1])]
        body = articles.render(
            site.host, article, links, images, None if in_header else canonical, related
        )
        headers = (("Link", f'<{canonical}>; rel="canonical"'),) if in_header else ()
        return Page(200, body.encode(), HTML, headers)

    def _padding(self, start: int, size: int) -> bytes:
        half = len(self._filler) // 2
        if size <= half:
            return self._filler[start : start + size]
        whole, rest = divmod(size, half)
        return self._filler[:half] * whole + self._filler[start : start + rest]


def _moved(site: Site, location: str) -> Page:
    body = f"Moved to {location}\n".encode()
    return Page(site.redirect_status, body, TEXT, (("Location", location),))


def _int(text: str) -> int | None:
    return int(text) if text.isascii() and text.isdigit() and len(text) < 10 else None


def _attr(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;")


def _text(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;")
