"""Page parsing, run in worker processes so it never holds the fetch loop.

``parse_page`` is top-level and picklable. It returns plain data (links already
canonicalised, counts of what was skipped) and touches no metrics or stores: the parent
records what it returns.

Hostile pages. Each page is parsed once (links, images, title and the content fingerprint all
come from one lexbor tree), and everything after the parse is linear in the tree. The parse
itself is not: lexbor, like the HTML standard's algorithm, looks through the stack of open
elements for most block start tags (``div``, ``ul``, ``section``..., "is there a ``p`` in button
scope?"), so a page nested ``d`` deep costs ``O(nodes * d)``: 100,000 nested ``<div>`` (500 KB)
took two minutes. So before parsing, ``nesting_cut`` estimates the nesting with a linear scan of
the bytes, and a page that nests deeper than ``MAX_DEPTH`` (browsers stop nesting at about
512 too) is parsed only up to the tag that goes past it: ``ParsedPage.truncated`` says
``"depth"``. The time budget of the parse pool (``courtier.pipeline.parse_pool``) is the
backstop for whatever the estimate misses.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache, partial
from typing import Final, NamedTuple

import numpy as np
import numpy.typing as npt
from selectolax.lexbor import LexborHTMLParser

from courtier.frontier.fingerprint import tree_fingerprint, unparsed_fingerprint
from courtier.frontier.sitemaps import SitemapError, SitemapKind, parse_sitemap
from courtier.frontier.traps import pattern_of
from courtier.net.spool import Body, body_bytes
from courtier.pipeline.decode import encode_query
from courtier.politeness.robots_meta import directives, meta_applies
from courtier.sinks.redact import redact_url
from courtier.url import Url, UrlError, _ada, parse_url


class Link(NamedTuple):
    """A canonicalised reference, with what the event loop needs of it precomputed.

    A named tuple, not a dataclass: pages carry hundreds of links across the process
    boundary, and a tuple pickles and unpickles several times faster."""

    canonical: str
    fetch_url: str
    site: str
    pattern: str = ""
    """Key of its crawler-trap pattern under the default ``TrapPolicy`` (``traps.pattern_of``);
    "" when not computed (the loop computes it)."""
    pattern_host: str = ""
    volatile: bool = False

    def url(self) -> Url:
        """The ``Url`` this link was made from (what ``parse_url(fetch_url)`` gives), rebuilt
        from its fields without parsing."""
        scheme = self.fetch_url[: self.fetch_url.index(":")]
        site = self.site
        if site[:1] == "[" or site.count(":") == 1:  # host:port, [v6]:port
            host, _, port = site.rpartition(":")
            return Url(scheme, host.strip("[]"), int(port), self.fetch_url, self.canonical)
        return Url(scheme, site, None, self.fetch_url, self.canonical)


_new_link: Final = partial(tuple.__new__, Link)
"""Builds a ``Link`` from a plain tuple of its fields in C (``Link._make`` runs Python)."""


@dataclass(slots=True)
class ParsedPage:
    title: str | None = None
    links: list[Link] = field(default_factory=list)
    images: list[Link] = field(default_factory=list)
    bad_links: int = 0
    """References that are not crawlable http(s) URLs (other schemes, malformed hosts)."""
    fingerprint: str | None = None
    """Boilerplate-stripped content fingerprint (adaptive refresh compares it)."""
    truncated: str | None = None
    """Why only a prefix of the body was parsed, or None: ``"depth"`` when the page nests
    deeper than ``MAX_DEPTH`` (links, title and fingerprint come from the prefix)."""
    robots: frozenset[str] = frozenset()
    """Robots directives of its meta tags and X-Robots-Tag (``politeness.robots_meta``)."""
    nofollow: set[str] = field(default_factory=set)
    """Canonical URLs of links marked ``rel="nofollow"``."""
    encoding: str = "utf-8"
    encoding_source: str = "utf-8"
    """How the encoding was found (``reading.read_page``): bom, header, meta, detected..."""
    payload: bytes | None = None
    """The body with secrets and personal data redacted (None: nothing was)."""
    redactions: dict[str, int] = field(default_factory=dict)

    def __reduce__(self) -> tuple[Callable[..., ParsedPage], tuple[object, ...]]:
        # Links travel as plain tuples (pickled in C) and become Links again on arrival.
        return _rebuild_page, (
            self.title,
            list(map(tuple, self.links)),
            list(map(tuple, self.images)),
            self.bad_links,
            self.fingerprint,
            self.truncated,
            self.robots,
            self.nofollow,
            self.encoding,
            self.encoding_source,
            self.payload,
            self.redactions,
        )


def _rebuild_page(
    title: str | None,
    links: list[tuple[object, ...]],
    images: list[tuple[object, ...]],
    *rest: object,
) -> ParsedPage:
    page = ParsedPage(title, list(map(_new_link, links)), list(map(_new_link, images)))
    (
        page.bad_links,
        page.fingerprint,
        page.truncated,
        page.robots,
        page.nofollow,
        page.encoding,
        page.encoding_source,
        page.payload,
        page.redactions,
    ) = rest  # type: ignore[assignment]
    return page


_LINK_SELECTOR = "a[href], area[href]"
_MAX_REFERENCES = 5000
_MAX_SITEMAP_LINKS = 50_000  # the sitemaps protocol's own limit per file

MAX_DEPTH: Final = 512
"""Element nesting past which a page is cut before parsing (see the module docstring)."""


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
    title = tree.css_first("title")
    if title is not None:
        page.title = title.text(strip=True)[:500] or None
    base = base_url
    base_node = tree.css_first("base[href]")
    if base_node is not None:
        href = base_node.attributes.get("href")
        if href:
            try:
                base = parse_url(encode_query(href.strip(), encoding), base_url).fetch_url
            except UrlError:
                page.bad_links += 1
    for node in tree.css("meta[name][content]"):
        if meta_applies(node.attributes.get("name") or "", token):
            page.robots |= directives(node.attributes.get("content") or "")
    keys = _BaseKeys(base)
    resolved: dict[str, Link | None] = {}
    seen: set[str] = set()
    for node in tree.css(_LINK_SELECTOR)[:_MAX_REFERENCES]:
        attributes = node.attributes
        href = attributes.get("href")
        if href:
            href = encode_query(href, encoding)
            link = _resolve_cached(href, keys, resolved, seen, page.links, page)
            rel = attributes.get("rel")
            if link is not None and rel and "nofollow" in rel.lower().split():
                page.nofollow.add(link.canonical)
    for node in tree.css("img[src]")[:_MAX_REFERENCES]:
        src = node.attributes.get("src")
        if src:
            _resolve_cached(encode_query(src, encoding), keys, resolved, seen, page.images, page)
    # Last: the fingerprint removes boilerplate (navigation, footers...) from the tree.
    page.fingerprint = tree_fingerprint(tree)
    return page


def _resolve(raw: str, base: str, seen: set[str], out: list[Link], page: ParsedPage) -> None:
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
    """``_resolve``, looking each distinct reference of a page up once (menus, cards and
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
#   before a second slash) takes only the base's scheme and authority: keyed on those;
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
    return _new_link((canonical, url.fetch_url, url.site, key, host, volatile))


canonical_link: Final = lru_cache(maxsize=LINK_CACHE_SIZE)(make_link)
"""``make_link``, cached: call it with the narrowest base ``_BaseKeys`` allows, so that equal
results share one entry. (Sitemaps, whose entries are seen once, call ``make_link``: 50,000
of them would evict every page's navigation.)"""


class _BaseKeys:
    """The bases one page's references are cached under (see above)."""

    __slots__ = ("base", "origin", "valid")

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

    def link(self, raw: str) -> Link | None:
        if self.valid:
            if raw.startswith(("http://", "https://")):
                return canonical_link(raw, None)
            if raw[:1] == "/" and raw[1:2] not in _NOT_SECOND:  # "" (a bare "/") is not in it
                return canonical_link(raw, self.origin)
        return canonical_link(raw, self.base)


# -- the nesting pre-scan -------------------------------------------------------------------
#
# Tags are counted, not parsed: every ``<name`` opens one level and every ``</name`` closes one
# (a closer with nothing open is ignored), except
# - elements that do not nest, or not at a cost: void elements (``br``, ``img``...), those
#   whose start tag closes an open one of their kind (``p``, ``li``, ``td``, ``tr``, ``option``,
#   ``a``, ``h1``...), and tables (lexbor's scope checks stop at a table cell, so deep tables
#   parse in linear time); for these both tags are ignored, so the estimate errs low, not high,
#   on sloppy markup;
# - comments, raw text elements (``script``, ``style``, ``textarea``, ``title``...: a minified
#   script's ``i<n`` is no tag) and ``svg`` and ``math`` elements, with everything inside them
#   (there ``<path/>`` closes itself, which HTML's ``<div/>`` does not);
# - a ``<`` inside another tag, in an attribute value (``onclick="if (i<n) ..."``).
# Everything is computed with numpy over the positions of ``<`` and ``>``, in blocks of a
# megabyte, with no Python loop over the tags: about 0.7 ms for a 100 KB page (lexbor's parse
# of it takes 2 ms), 35 ms for 20 MB of nested tags.

_NEVER_NESTING: Final = (
    "area", "base", "basefont", "bgsound", "br", "col", "embed", "frame", "hr", "image", "img",
    "input", "keygen", "link", "meta", "param", "source", "track", "wbr",  # void
    "p", "li", "dt", "dd", "option", "optgroup", "tr", "td", "th", "thead", "tbody", "tfoot",
    "colgroup", "caption", "rb", "rt", "rp", "rtc", "a", "nobr", "button", "form", "select",
    "h1", "h2", "h3", "h4", "h5", "h6",  # a start tag closes an open one of its kind
    "table",  # nests only inside a cell, and lexbor's scope checks stop at cells: no cost
    "html", "head", "body", "frameset",  # one each
)  # fmt: skip
_OPAQUE: Final = (
    "script", "style", "textarea", "title", "xmp", "noembed", "noframes", "iframe", "svg", "math",
)  # fmt: skip
_KEY_BYTES: Final = 8  # every name above fits in 8 bytes: one uint64 key per tag name
_BLOCK: Final = 1 << 20  # bytes scanned per numpy pass (bounds the scratch memory)
_LOWER: Final = np.uint64(0x2020202020202020)  # OR-ed into 8 bytes: lower-cases the letters
_LOW_BYTES: Final = np.array(
    [(1 << 64) - 1] + [(1 << (8 * length)) - 1 for length in range(1, _KEY_BYTES)],
    dtype=np.uint64,
)
"""Mask of a name's bytes by its length; a name of 8 bytes or more has "length" 0."""
# Bytes that end a tag name (whitespace, "/", ">"), as seen after OR-ing 0x20 into a byte.
_ENDS_NAME: Final = np.zeros(256, dtype=np.bool_)
_ENDS_NAME[[0x20 | b for b in b" \t\n\r\f/>"]] = True


def _key(name: str) -> int:
    return int.from_bytes(name.encode("ascii").ljust(_KEY_BYTES, b"\0"), "little")


def _special_table() -> tuple[np.uint64, npt.NDArray[np.uint64], npt.NDArray[np.bool_]]:
    """A collision-free multiplicative hash of the special names' keys into 4096 slots."""
    names = [(_key(n), False) for n in _NEVER_NESTING] + [(_key(n), True) for n in _OPAQUE]
    for multiplier in range(0x9E3779B97F4A7C15, 1 << 64, 0x2000000000000002):
        slots = {((key * multiplier) & ((1 << 64) - 1)) >> 52 for key, _ in names}
        if len(slots) == len(names):
            break
    else:  # pragma: no cover - the first multiplier already works
        raise AssertionError("no collision-free multiplier")
    keys = np.zeros(4096, dtype=np.uint64)  # 0 is no tag's key: a tag starts with a letter
    opaque = np.zeros(4096, dtype=np.bool_)
    for key, is_opaque in names:
        slot = ((key * multiplier) & ((1 << 64) - 1)) >> 52
        keys[slot], opaque[slot] = key, is_opaque
    return np.uint64(multiplier), keys, opaque


_HASH, _SPECIAL_KEYS, _SPECIAL_OPAQUE = _special_table()
_OPAQUE_NAMES: Final = {_key(n): n.encode() for n in _OPAQUE}


def nesting_cut(body: bytes, max_depth: int = MAX_DEPTH) -> int | None:
    """The offset of the tag at which ``body``'s estimated element nesting first goes past
    ``max_depth``, or None if it never does. Linear in ``len(body)``."""
    if len(body) <= 2 * max_depth:  # a tag takes two bytes at least
        return None
    scan = _NestingScan(body)
    for start in range(0, len(body), _BLOCK):
        cut = scan.block(start, min(start + _BLOCK, len(body)), max_depth)
        if cut is not None:
            return cut
    return None


class _NestingScan:
    """The scan of one body, block by block, and the state carried between blocks."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        # Padded, so that reading a few bytes past any ``<`` stays inside the array; ``words``
        # is the (unaligned, overlapping) 8-byte word starting at each offset.
        self.bytes = np.frombuffer(body + b"\0" * (2 * _KEY_BYTES), dtype=np.uint8)
        self.words = np.ndarray(
            shape=(len(body) + _KEY_BYTES,), dtype="<u8", buffer=self.bytes, strides=(1,)
        )
        self.skip_until = 0  # end of the comment or opaque element being skipped
        self.depth = 0  # nesting at the end of the previous block

    def block(self, start: int, stop: int, max_depth: int) -> int | None:
        data = self.bytes
        block = data[start:stop]
        marks = np.flatnonzero((block | 2) == 0x3E) + start  # "<" (0x3C) and ">" (0x3E)
        is_lt = data[marks] == 0x3C
        lt = marks[is_lt]
        if self.depth + lt.size <= max_depth and stop == len(self.body):
            return None  # the last block, with too few tags left to go past max_depth
        if lt.size == 0:
            return None
        adjacent = is_lt.copy()  # no ">" between this "<" and the one before
        adjacent[1:] &= is_lt[:-1]
        adjacent[0] = False
        adjacent = adjacent[is_lt]
        after = data[lt + 1]
        closing = after == 0x2F  # "</"
        words = self.words[lt + 1 + closing] | _LOWER  # the name's first 8 bytes, lower-cased
        name_bytes = words.view(np.uint8).reshape(-1, _KEY_BYTES)
        letter = (name_bytes >= 0x61) & (name_bytes <= 0x7A)
        # A "<" after a tag's "<" with no ">" between is inside that tag, in an attribute value
        # such as onclick="if (i<n) ...": not a tag. (A "< " is text, it opens no tag.)
        adjacent[1:] &= letter[:-1, 0] | closing[:-1] | (after[:-1] == 0x21)
        tag = letter[:, 0] & ~adjacent
        length = np.argmin(letter | ((name_bytes >= 0x30) & (name_bytes <= 0x39)), axis=1)
        # Exact names: whitespace, "/" or ">" after them (not checked after 8 bytes).
        ended = _ENDS_NAME[(words >> (length.astype(np.uint64) << np.uint64(3))).astype(np.uint8)]
        keys = words & _LOW_BYTES[length]
        slot = (keys * _HASH) >> np.uint64(52)
        special = tag & (ended | (length == 0)) & (_SPECIAL_KEYS[slot] == keys)
        counted = tag & ~special
        opaque = special & _SPECIAL_OPAQUE[slot]
        openers = np.flatnonzero(opaque & ~closing)
        bang = np.flatnonzero(after == 0x21)  # "<!"
        bang = bang[(data[lt[bang] + 2] == 0x2D) & (data[lt[bang] + 3] == 0x2D)]  # "<!--"
        if bang.size or openers.size or self.skip_until > start:
            closers = np.flatnonzero(opaque & closing)
            counted &= ~self._hidden(lt, openers, closers, slot, keys, bang)
        step = counted.view(np.int8) - ((counted & closing).view(np.int8) << 1)  # +1, -1, 0
        # Nesting with closers that close nothing ignored: the running sum, floored at zero.
        total = np.cumsum(step, dtype=np.int64)
        total += self.depth
        depth = total - np.minimum(np.minimum.accumulate(total), 0)
        over = np.flatnonzero(depth > max_depth)
        if over.size:
            return int(lt[over[0]])
        self.depth = int(depth[-1])
        return None

    def _hidden(
        self,
        lt: npt.NDArray[np.intp],
        openers: npt.NDArray[np.intp],
        closers: npt.NDArray[np.intp],
        slot: npt.NDArray[np.uint64],
        keys: npt.NDArray[np.uint64],
        comments: npt.NDArray[np.intp],
    ) -> npt.NDArray[np.bool_]:
        """Which ``<`` are inside a comment or an opaque element.

        A range that starts inside an earlier one still counts, so ``<!-- <svg> -->`` hides
        up to the next ``</svg``: that errs low, and keeps it all vectorised."""
        # Each opener's end tag: the first closer of its name after it, found for all at once
        # by sorting the closers by (name, position).
        codes = np.sort((slot[closers].astype(np.int64) << 32) | closers)
        wanted = (slot[openers].astype(np.int64) << 32) | openers
        end_at = np.full(openers.size, -1, dtype=np.intp)
        if codes.size:
            found = codes[np.minimum(np.searchsorted(codes, wanted), codes.size - 1)]
            matched = (found >> 32) == (wanted >> 32)
            end_at[matched] = lt[found[matched] & 0xFFFFFFFF]
        starts = [lt[openers], lt[comments]]
        ends = [end_at, np.zeros(comments.size, dtype=np.intp)]
        if self.skip_until > int(lt[0]):
            starts.append(np.array([-1]))
            ends.append(np.array([self.skip_until]))
        for index in np.flatnonzero(end_at < 0).tolist():  # no end tag in this block
            at = int(starts[0][index])
            end_at[index] = self._end_tag(at, _OPAQUE_NAMES[int(keys[openers[index]])])
        for index, at in enumerate(starts[1].tolist()):  # a few per page
            ends[1][index] = self.body.find(b"-->", at + 2)  # "<!-->" is a whole comment
        first, last = np.concatenate(starts), np.concatenate(ends)
        last[last < 0] = len(self.body)
        order = np.argsort(first, kind="stable")
        first, reach = first[order], np.maximum.accumulate(last[order])
        self.skip_until = max(self.skip_until, int(reach[-1]))
        # A ``<`` strictly after a start, and before the furthest end of the ranges so far.
        before = np.searchsorted(first, lt) - 1
        hidden: npt.NDArray[np.bool_] = (before >= 0) & (reach[np.maximum(before, 0)] > lt)
        return hidden

    def _end_tag(self, at: int, name: bytes) -> int:
        """Where the end tag of the element opened at ``at`` starts (-1: none). ``</script``,
        ``</SCRIPT``, ``</Script``; not ``</sCRIPT`` (hides too much: errs low)."""
        body = self.body
        found = body.find(b"</" + name, at + 1)
        bound = len(body) if found < 0 else found
        needle = b"</" + name[:1].upper()
        end = body.find(needle, at + 1, bound)
        while end >= 0:
            if body[end + 2 : end + 2 + len(name)].lower() == name:
                return end
            end = body.find(needle, end + 3, bound)
        return found


@dataclass(slots=True)
class ParsedSitemap:
    index: bool = False
    """A sitemap index: its links are further sitemaps."""
    links: list[Link] = field(default_factory=list)
    bad_links: int = 0
    error: str | None = None
    """Why the sitemap could not be read to the end (what was read is still in ``links``)."""
    lastmod: dict[str, float] = field(default_factory=dict)
    """Canonical URL -> the ``<lastmod>`` its entry gives (Unix time)."""

    def __reduce__(self) -> tuple[Callable[..., ParsedSitemap], tuple[object, ...]]:
        links = list(map(tuple, self.links))  # as ParsedPage's: up to 50,000 of them
        return _rebuild_sitemap, (self.index, links, self.bad_links, self.error, self.lastmod)


def _rebuild_sitemap(
    index: bool,
    links: list[tuple[object, ...]],
    bad_links: int,
    error: str | None,
    lastmod: dict[str, float],
) -> ParsedSitemap:
    return ParsedSitemap(index, list(map(_new_link, links)), bad_links, error, lastmod)


def parse_sitemap_links(content: Body, base_url: str) -> ParsedSitemap:
    """The URLs a sitemap (or sitemap index, gzip or not) lists, canonicalised."""
    result = ParsedSitemap()
    try:
        sitemap = parse_sitemap(body_bytes(content))
    except SitemapError as exc:
        sitemap, result.error = exc.partial, str(exc)[:300]
    result.index = sitemap.kind is SitemapKind.INDEX
    seen: set[str] = set()
    placeholder = ParsedPage()
    for entry in sitemap.entries[:_MAX_SITEMAP_LINKS]:
        if ("@" in entry.loc or "%40" in entry.loc) and redact_url(entry.loc).changed:
            placeholder.bad_links += 1  # an address in a URL: never fetched, never stored
            continue
        found = len(result.links)
        _resolve(entry.loc, base_url, seen, result.links, placeholder)
        if entry.lastmod is not None and len(result.links) > found:
            result.lastmod[result.links[-1].canonical] = entry.lastmod
    result.bad_links = placeholder.bad_links + sitemap.skipped
    return result
