"""Page parsing, run in worker processes so it never holds the fetch loop.

``parse_page`` is top-level and picklable. It returns plain data (links already canonicalised,
counts of what was skipped) and touches no metrics or stores: the parent records it.

Hostile pages. Links, images, title, canonical and fingerprint come from one lexbor tree (the
main text from resiliparse's, ``text.page_text``); all after the parse is linear in the tree.
The parse is not: lexbor, like the HTML standard's algorithm, looks through the stack of open
elements for most block start tags ("is there a ``p`` in button scope?"), so a page nested
``d`` deep costs ``O(nodes * d)``: 100,000 nested ``<div>`` (500 KB) took two minutes. So
``nesting.nesting_cut`` first estimates the nesting in linear time, and a page nesting deeper
than ``MAX_DEPTH`` (about 512, as in browsers) is parsed up to the tag that goes past it
(``ParsedPage.truncated``: ``"depth"``); the parse pool's time budget is the backstop.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Final

from selectolax.lexbor import LexborHTMLParser, LexborNode

from courtier.content.canonical import declared_in_markup
from courtier.content.decode import encode_query
from courtier.content.feed_links import feed_references
from courtier.content.nesting import nesting_cut
from courtier.content.parsed import Link as Link
from courtier.content.parsed import ParsedPage as ParsedPage
from courtier.content.parsed import new_link as new_link
from courtier.content.shell import shell_reason
from courtier.frontier.fingerprint import tree_fingerprint, unparsed_fingerprint
from courtier.frontier.traps import clear_pattern_caches, pattern_of
from courtier.politeness.robots_meta import directives, meta_applies
from courtier.url import (
    MAX_URL_LENGTH,
    UrlError,
    _ada,
    canonical_target,
    clear_url_caches,
    parse_url,
    plain_path_target,
)

_ANCHORS: Final = "a[href], area[href]"
"""Both kinds of link, in document order (one query: the rare page with ``<area>`` links)."""


def _select(
    tree: LexborHTMLParser,
) -> tuple[
    list[LexborNode], list[LexborNode], list[LexborNode], list[LexborNode], list[LexborNode]
]:
    """What ``parse_page`` reads of a tree, in document order, by kind: titles, bases with an
    ``href``, metas with a ``name`` and a ``content``, anchors (``a``, ``area``) and images.
    Anchors and images may include elements without ``href`` / ``src`` (the caller skips
    them), except beyond ``_MAX_REFERENCES`` (they must not count towards the cap).

    Elements looked up by name (``tags``), not by one CSS query: lexbor matches each selector
    of a query against each element, and a 6 KB page's query of six took 18-22 us against
    8 for this selection (`python bench/bench_parse.py --stages`)."""
    bases = [node for node in tree.tags("base") if "href" in node.attrs]
    metas = [node for node in tree.tags("meta") if "name" in (a := node.attrs) and "content" in a]
    anchors = tree.css(_ANCHORS) if tree.tags("area") else tree.tags("a")
    images = tree.tags("img")
    return (
        tree.tags("title"),
        bases,
        metas,
        _with(anchors, "href"),
        _with(images, "src"),
    )


def _with(nodes: list[LexborNode], name: str) -> list[LexborNode]:
    """``nodes``, or those with attribute ``name`` when there are more than the cap."""
    if len(nodes) <= _MAX_REFERENCES:
        return nodes
    return [node for node in nodes if name in node.attrs]


_MAX_REFERENCES = 5000


def parse_page(
    body: bytes, base_url: str, *, encoding: str = "utf-8", token: str = ""
) -> ParsedPage:
    """Title, outgoing links, image references, robots meta directives (for ``token``) and
    content fingerprint of an HTML page. ``body`` is UTF-8 (``reading.read_page`` decodes
    it); ``encoding`` is the page's own, which the query of a link is encoded in."""
    page = ParsedPage(encoding=encoding)
    cut = nesting_cut(body)
    if cut is not None:
        body, page.truncated = body[:cut], "depth"
    try:
        tree = LexborHTMLParser(body)
    except (ValueError, TypeError):  # selectolax raises on undecodable or absurd input
        page.fingerprint = unparsed_fingerprint(body)
        return page
    titles, bases, metas, anchors, images = _select(tree)
    if titles:
        page.title = titles[0].text(strip=True)[:500] or None
    base = base_url
    if bases:
        href = bases[0].attributes.get("href")
        if href:
            try:
                base = parse_url(encode_query(href.strip(), encoding), base_url).fetch_url
            except UrlError:
                page.bad_links += 1
    for node in metas:
        if meta_applies(node.attributes.get("name") or "", token):
            page.robots |= directives(node.attributes.get("content") or "")
    keys = _BaseKeys(base)
    resolved: dict[str, Link | None] = {}
    seen: set[str] = set()
    for node in anchors[:_MAX_REFERENCES]:
        # A dict of the attributes, not ``attrs``' lookups: its "rel", absent from almost
        # every anchor, costs lexbor a walk for ``attrs.get``: 0.47 -> 0.16 us an anchor.
        attributes = node.attributes
        href = attributes.get("href")
        if href:
            href = encode_query(href, encoding)
            link = _resolve_cached(href, keys, resolved, seen, page.links, page)
            rel = attributes.get("rel")
            if link is not None and rel and "nofollow" in rel.lower().split():
                page.nofollow.add(link.canonical)
    for href in feed_references(tree, body):  # feeds a page names in its <head>
        _resolve_cached(encode_query(href, encoding), keys, resolved, seen, page.links, page)
    for node in images[:_MAX_REFERENCES]:
        src = node.attrs.get("src")
        if src:
            _resolve_cached(encode_query(src, encoding), keys, resolved, seen, page.images, page)
    page.shell = shell_reason(tree, len(page.links))
    page.canonical = declared_in_markup(tree, base, make_link)
    # Last: the fingerprint removes boilerplate (navigation, footers...) from the tree.
    page.fingerprint = tree_fingerprint(tree)
    return page


def resolve_into(raw: str, base: str, seen: set[str], out: list[Link], page: ParsedPage) -> None:
    link = make_link(raw.strip(), base)
    if link is None:
        page.bad_links += 1
    elif link.canonical not in seen:
        seen.add(link.canonical)
        out.append(link)


def _resolve_cached(
    raw: str,
    keys: _BaseKeys,
    resolved: dict[str, Link | None],
    seen: set[str],
    out: list[Link],
    page: ParsedPage,
) -> Link | None:
    """``resolve_into``, looking each distinct reference of a page up once (menus, cards and
    footers repeat them). A bad reference still counts once per occurrence."""
    if raw in resolved:
        link = resolved[raw]
    else:
        link = resolved[raw] = keys.link(raw.strip())
    if link is None:
        page.bad_links += 1
    elif link.canonical not in seen:
        seen.add(link.canonical)
        out.append(link)
    return link


# -- links, canonicalised once per worker ---------------------------------------------------
#
# Navigation, footers and cards repeat on every page of a site, so a worker keeps the links it
# made in a bounded LRU cache. The cache must never change a result, so a reference is keyed
# on no more of its base than its result can depend on (WHATWG URL parsing, special schemes):
# - ``http://...`` and ``https://...`` name their own authority: keyed on themselves;
# - a path-absolute ``/x`` (not ``//x``, ``/\x`` or a tab or newline, which a parser removes,
#   before a second slash) takes only the base's scheme and authority, and both only as the
#   prefix of its URLs and pattern: what follows them (the path and query as fetched and as
#   canonicalised, the trap pattern's path and query, whether it is volatile) is the same
#   under every http(s) origin, so those tails are keyed on the reference alone and serve
#   every site that links ``/``, ``/about`` or ``/item/3`` (``_path_tails``);
# - anything else (``x``, ``../x``, ``?q``) on the whole base.
# Keyed forms are only used when the base itself is a valid http(s) URL (an invalid base makes
# every reference fail, absolute ones included).

LINK_CACHE_SIZE: Final = 32_768
"""Links a worker keeps (about 400 bytes each: some 13 MB)."""
_NOT_SECOND: Final = frozenset("/\\\t\n\r")


def make_link(raw: str, base: str | None) -> Link | None:
    """The ``Link`` of ``raw`` resolved against ``base`` (see ``parse_url``), its trap pattern
    included; None for a reference that is no crawlable URL."""
    try:
        url = parse_url(raw, base)
    except UrlError:
        return None
    canonical = url.canonical
    # The canonical authority holds no "/" and the path starts with one; the key has no "#".
    path, _, query = canonical[canonical.index("/", len(url.scheme) + 3) :].partition("?")
    key, host, volatile = pattern_of(url.host, path, query)
    return new_link((canonical, url.fetch_url, url.site, key, host, volatile))


canonical_link: Final = lru_cache(maxsize=LINK_CACHE_SIZE)(make_link)
"""``make_link``, cached: call it with the narrowest base ``_BaseKeys`` allows, so that equal
results share one entry. (Sitemaps, whose entries are seen once, call ``make_link``: 50,000
of them would evict every page's navigation.)"""


_TAIL_HOST: Final = "tail.invalid"
_TAIL_PREFIX: Final = f"http://{_TAIL_HOST}"


def _tails_of(raw: str) -> tuple[str, str, str, bool] | None:
    """What follows the origin in the ``Link`` of a path-absolute ``raw`` (see above): the
    canonical URL's, the fetch URL's and the pattern's tails, and whether it is volatile;
    None when ``raw`` is no crawlable reference (the caller then asks ``make_link``)."""
    target = plain_path_target(raw)
    if target is not None and len(_TAIL_PREFIX) + len(target) <= MAX_URL_LENGTH:
        # Most are plain: what ``make_link`` would make, without making a URL first. Every new
        # item, image and page of a site comes here once: "/item/7?ref=grid&pos=7" 8.1 -> 6.3
        # us, "/img/7.jpg" 5.1 -> 3.2 (`python bench/bench_parse.py`, cold).
        canonical = canonical_target(target)
        path, _, query = canonical.partition("?")
        pattern, _, volatile = pattern_of("", path, query)
        return canonical, target, pattern, volatile
    link = make_link(raw, f"{_TAIL_PREFIX}/")
    if link is None:
        return None
    start = len(_TAIL_PREFIX)
    tails = (link.canonical[start:], link.fetch_url[start:], link.pattern[len(_TAIL_HOST) :])
    return (*tails, link.volatile)


_path_tails: Final = lru_cache(maxsize=LINK_CACHE_SIZE)(_tails_of)


def clear_link_caches() -> None:
    """Forget every link this worker made, and every part of one it judged on the way (as
    a new worker would have)."""
    canonical_link.cache_clear()
    _path_tails.cache_clear()
    clear_url_caches()
    clear_pattern_caches()


class _BaseKeys:
    """The bases one page's references are cached under (see above)."""

    __slots__ = ("base", "host", "origin", "prefix", "site", "valid")

    def __init__(self, base: str) -> None:
        self.base = base
        try:
            parts = _ada.parse(base)
        except UnicodeEncodeError:
            parts = None
        special = parts is not None and parts.scheme_type in (_ada.SCHEME_HTTP, _ada.SCHEME_HTTPS)
        self.valid = special
        self.origin = (
            parts.href[: parts.target_start] + "/" if parts is not None and special else base
        )
        self.prefix = ""
        """``scheme://authority`` of the origin as ``parse_url`` writes it ("" if none)."""
        self.site = self.host = ""
        if special:
            try:
                origin = parse_url(self.origin)
            except UrlError:
                return
            fetch_url = origin.fetch_url
            self.prefix = fetch_url[: fetch_url.index("/", len(origin.scheme) + 3)]
            self.site, self.host = origin.site, origin.host

    def link(self, raw: str) -> Link | None:
        if self.valid:
            if raw.startswith(("http://", "https://")):
                return canonical_link(raw, None)
            if raw[:1] == "/" and raw[1:2] not in _NOT_SECOND:  # "" (a bare "/") is not in it
                tails = _path_tails(raw) if self.prefix else None
                # No tails, or too long after this origin: ``make_link`` decides, exactly.
                if tails is None or len(self.prefix) + len(tails[1]) > MAX_URL_LENGTH:
                    return canonical_link(raw, self.origin)
                canonical, fetch_url, pattern, volatile = tails
                prefix, host = self.prefix, self.host
                return new_link(
                    (
                        prefix + canonical,
                        prefix + fetch_url,
                        self.site,
                        host + pattern,
                        host,
                        volatile,
                    )
                )
        return canonical_link(raw, self.base)
