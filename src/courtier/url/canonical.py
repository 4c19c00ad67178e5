"""Parsing a URL into what we fetch and what we deduplicate on.

One function, ``parse_url``, is the only way a URL enters Courtier (seeds, links, redirects,
frontier, horizon, limit keys). It gives two strings:

``fetch_url`` — what we request. The WHATWG serialisation of the URL as the page wrote it
(relative references resolved, dot segments resolved, unsafe characters percent-encoded, IDN
hosts in punycode, IPv4 spellings as dotted quads), with only these changes: the fragment is
removed (never sent), credentials are removed (a crawler never sends a password it found in a
link, and it would leak into logs), and the host is canonical (no trailing dot).

``canonical`` — the deduplication key: scheme, canonical host, non-default port, the path and
query normalised as ``courtier.url.query`` describes (escapes, sorted parameters, tracking and
session parameters removed), no fragment. ``parse_url(u.canonical).canonical == u.canonical``.

Only ``http`` and ``https`` are accepted. A fetch URL longer than ``MAX_URL_LENGTH`` is
rejected: servers refuse request lines over 8 KiB (Apache's default limit is 8190 bytes), and
such URLs are almost always traps.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from courtier.url import _ada
from courtier.url.errors import UrlError, shown
from courtier.url.host import canonical_host, finish_host, url_host
from courtier.url.query import canonical_path, canonical_query

MAX_URL_LENGTH: Final = 8192

DEFAULT_STRIP_PARAMS: Final[frozenset[str]] = frozenset(
    {
        # Campaign and click identifiers: they name the visit, not the page.
        "utm_*",
        "gclid",
        "gclsrc",
        "dclid",
        "gbraid",
        "wbraid",
        "fbclid",
        "msclkid",
        "yclid",
        "twclid",
        "ttclid",
        "igshid",
        "li_fat_id",
        "mc_cid",
        "mc_eid",
        "mkt_tok",
        "_ga",
        "_gl",
        "_hsenc",
        "_hsmi",
        # Session identifiers put in URLs by PHP, Java servlets, ColdFusion, osCommerce, ...
        "sessionid",
        "session_id",
        "sessid",
        "sid",
        "phpsessid",
        "jsessionid",
        "aspsessionid",
        "cfid",
        "cftoken",
        "oscsid",
        "zenid",
    }
)


@dataclass(frozen=True, slots=True)
class Url:
    """One parsed http(s) URL. Build it with ``parse_url``."""

    scheme: str  # "http" or "https"
    host: str  # canonical host; IPv6 without brackets
    port: int | None  # None when it is the scheme's default
    fetch_url: str  # what we request
    canonical: str  # the deduplication key

    @property
    def site(self) -> str:
        """The politeness key of the site: host, or host:port for a non-default port."""
        if self.port is None:
            return self.host
        return f"{url_host(self.host)}:{self.port}"

    @property
    def target(self) -> str:
        """Path and query of ``fetch_url``, as sent in the request line."""
        return self.fetch_url[self.fetch_url.index("/", len(self.scheme) + 3) :]


def parse_url(
    raw: str, base: str | None = None, *, strip_params: frozenset[str] = DEFAULT_STRIP_PARAMS
) -> Url:
    """Parse ``raw`` (a relative reference is resolved against ``base``) into a ``Url``.

    Raises UrlError, with a message saying what is wrong, for anything we cannot fetch.
    """
    plain = _plain(raw, base)
    if plain is not None:
        scheme, host, port, target = plain
    else:
        scheme, host, port, target = _whatwg(raw, base)
    authority = url_host(host) if port is None else f"{url_host(host)}:{port}"
    fetch_url = f"{scheme}://{authority}{target}"
    if len(fetch_url) > MAX_URL_LENGTH:
        raise UrlError(f"URL is {len(fetch_url)} characters long; the limit is {MAX_URL_LENGTH}")
    canonical = f"{scheme}://{authority}{canonical_target(target, strip_params)}"
    return Url(scheme, host, port, fetch_url, canonical)


def canonical_target(target: str, strip_params: frozenset[str] = DEFAULT_STRIP_PARAMS) -> str:
    """The canonical form of a fetch URL's path and query (what follows its authority)."""
    path, _, query = target.partition("?")
    path = canonical_path(path, strip_params)
    if query:
        if len(query) <= _CACHED_QUERY_CHARS:
            query = _cached_canonical_query(query, strip_params)
        else:
            query = canonical_query(query, strip_params)
        if query:
            return f"{path}?{query}"
    return path


# A site's query strings repeat ("?page=2", every card's "?ref=grid&pos=3"): 1.5 us to
# canonicalise one, 0.09 to look it up (timeit, best of 5).

_CACHED_QUERY_CHARS: Final = 128
_cached_canonical_query: Final = lru_cache(maxsize=8192)(canonical_query)


def clear_url_caches() -> None:
    """Forget every base and query this process parsed (as a new one would have)."""
    _cached_canonical_query.cache_clear()
    _base_origin.cache_clear()


def _whatwg(raw: str, base: str | None) -> tuple[str, str, int | None, str]:
    """(scheme, canonical host, port, target) of ``raw`` as the WHATWG parser (ada) reads it."""
    try:
        parts = _ada.parse(raw, base)
    except UnicodeEncodeError:
        raise UrlError(f"URL {shown(raw)} is not valid Unicode") from None
    if parts is None:
        raise UrlError(diagnose_url(raw, base))
    href = parts.href
    if parts.scheme_type == _ada.SCHEME_HTTPS:
        scheme = "https"
    elif parts.scheme_type == _ada.SCHEME_HTTP:
        scheme = "http"
    else:
        raise UrlError(_unsupported_scheme(href[: href.index(":")]))
    host = finish_host(parts.hostname, parts.host_type)
    return scheme, host, parts.port, href[parts.target_start : parts.target_end]


# -- the plain fast path --------------------------------------------------------------------
#
# Most references on most pages are plain: an absolute http(s) URL with a lower-case ASCII
# host, or a path-absolute ``/x``, whose path and query hold only characters the WHATWG parser
# copies as they are. For those its answer is known without asking it: the scheme, the host
# (as written), the port (the default dropped), and the text up to the fragment as the target.
# Anything else, and anything doubtful, takes the WHATWG parser:
# - characters it escapes or treats specially (space, quotes, "<>^`{|}[]", "\\", tabs and
#   newlines, controls, anything not ASCII) are outside ``_PLAIN``;
# - dot segments ("/." and any "%2e" in the path) are resolved by it;
# - "//x" and "/\\x" name a host; "xn--" labels are validated by it; a host whose last label
#   does not start with a letter may be an IPv4 address; ports over 65535 are errors;
# - a base that is not a valid http(s) URL with a valid host (it fails every reference, or
#   resolves them differently).
# ``tests/url/test_url_plain_fast.py`` checks the fast path against the parser.

_PLAIN: Final = r"[A-Za-z0-9\-._~!$&()*+,;=:@/%?]"
_PLAIN_ABSOLUTE: Final = re.compile(
    rf"(https?)://((?:[a-z0-9-]+\.)*[a-z][a-z0-9-]*\.?)(?::([0-9]{{1,5}}))?(/{_PLAIN}*)?"
)
_PLAIN_PATH: Final = re.compile(rf"/(?!/){_PLAIN}*")
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}
_BASE_CACHE_SIZE: Final = 1024


def _plain(raw: str, base: str | None) -> tuple[str, str, int | None, str] | None:
    """(scheme, canonical host, port, target) of a plain reference, or None: ask WHATWG."""
    origin = None if base is None else _base_origin(base)
    if raw[:1] == "/":
        target = plain_path_target(raw) if origin is not None else None
        if origin is None or target is None:
            return None
        return (*origin, target)
    hash_at = raw.find("#")
    return _plain_absolute(raw if hash_at < 0 else raw[:hash_at], base, origin)


def plain_path_target(raw: str) -> str | None:
    """The fetch target (path and query) of a plain path-absolute reference ``raw``, the same
    under every valid http(s) base, or None: not plain (ask ``parse_url``)."""
    hash_at = raw.find("#")
    head = raw if hash_at < 0 else raw[:hash_at]
    if head[:1] != "/" or _PLAIN_PATH.fullmatch(head) is None or _dot_segments(head):
        return None
    return head


def _plain_absolute(
    head: str, base: str | None, origin: tuple[str, str, int | None] | None
) -> tuple[str, str, int | None, str] | None:
    match = _PLAIN_ABSOLUTE.fullmatch(head)
    if match is None or (base is not None and origin is None):
        return None
    scheme, name, port_text, target = match.groups()
    if "xn--" in name or (target is not None and _dot_segments(target)):
        return None
    port = None
    if port_text is not None:
        port = int(port_text)
        if port > 65535:
            return None
        if port == _DEFAULT_PORTS[scheme]:
            port = None
    try:
        host = finish_host(name, _ada.HOST_DOMAIN)
    except UrlError:
        return None  # the parser says what is wrong
    return scheme, host, port, target or "/"


def _dot_segments(target: str) -> bool:
    path = target.partition("?")[0]
    return "/." in path or "%2e" in path or "%2E" in path


@lru_cache(maxsize=_BASE_CACHE_SIZE)
def _base_origin(base: str) -> tuple[str, str, int | None] | None:
    """(scheme, canonical host, port) of a valid http(s) base URL, or None."""
    try:
        scheme, host, port, _ = _whatwg(base, None)
    except UrlError:
        return None
    return scheme, host, port


def site_key(raw_url_or_host: str) -> str:
    """The site key of a URL (anything with "://"), a host, or a ``host:port`` authority.

    A bare ``host:port`` is read as an http authority, so ``:80`` is dropped as the default.
    """
    text = raw_url_or_host.strip()
    if "://" in text:
        return parse_url(text).site
    try:
        return canonical_host(text)
    except UrlError:
        if ":" not in text:
            raise
    return parse_url(f"http://{text}/").site


_SCHEME: Final = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
_C0_OR_SPACE: Final = "".join(chr(code) for code in range(0x21))


def _unsupported_scheme(scheme: str) -> str:
    return f"unsupported scheme {shown(scheme.lower(), 30)} (only http and https are crawled)"


def diagnose_url(raw: str, base: str | None) -> str:
    """A message saying why the WHATWG parser rejected ``raw`` (the slow, rare path)."""
    if base is not None and _ada.parse(base) is None:
        return f"invalid base URL {shown(base)}"
    text = raw.strip(_C0_OR_SPACE).replace("\t", "").replace("\n", "").replace("\r", "")
    scheme = _SCHEME.match(text)
    if scheme is None:
        if base is None:
            return f"relative URL {shown(raw)} and no base URL" if text else "empty URL"
        return f"invalid URL {shown(raw)} (relative to {shown(base)})"
    if scheme.group(1).lower() not in ("http", "https"):
        return _unsupported_scheme(scheme.group(1))
    rest = text[scheme.end() :].lstrip("/\\")
    authority = re.split(r"[/\\?#]", rest, maxsplit=1)[0].rpartition("@")[2]
    if authority.startswith("["):
        host, _, port_text = authority.partition("]")
        host += "]"
        port_text = port_text.removeprefix(":")
    else:
        host, _, port_text = authority.partition(":")
    if port_text and not (port_text.isdigit() and len(port_text) <= 5 and int(port_text) <= 65535):
        return f"invalid port {shown(port_text, 20)} in {shown(raw)}"
    if not host:
        return f"URL {shown(raw)} has no host"
    try:
        canonical_host(host)
    except UrlError as error:
        return str(error)
    return f"invalid URL {shown(raw)}"


__all__ = [
    "DEFAULT_STRIP_PARAMS",
    "MAX_URL_LENGTH",
    "Url",
    "canonical_target",
    "clear_url_caches",
    "parse_url",
    "plain_path_target",
    "site_key",
]
