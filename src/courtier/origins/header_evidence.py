"""Header evidence: a fingerprint of how a site's server answers, from two ordinary responses.

The input is what a probe saw: the response to ``/`` and to a path that does not exist, each as
its status, header list (in wire order) and the SHA-256 of its body. The fingerprint is a pure
function of that and the host name.

Rules:
- A fingerprint is *distinctive* only when it carries something a platform chose: a header name
  outside the standard, security and generic-stack header sets (``X-Plinth-Tenant``), a cookie
  name outside the well-known framework and analytics ones, an ``X-Powered-By`` that names no
  common software stack (``PlinthSites``, not ``PHP/8.2`` or ``Express``), or a not-found page
  that does not name the host and is not a software stack's stock page (one page served for
  every tenant). What every install of a common stack sends (``Server: nginx``,
  ``X-Powered-By: PHP``, ``PHPSESSID``, ``X-AspNet-Version``, Apache's or nginx's stock 404)
  is shared by millions of unrelated servers and is never enough: behind a CDN edge it would
  merge strangers.
- Values that differ per tenant are dropped: the fingerprint keeps header *names*, cookie
  *names*, and the values of ``Server``, ``X-Powered-By`` and ``Via`` only.
- The signature (what two sites must share to be one platform) is a hash of the server stack
  (server product, ``X-Powered-By``, platform header and cookie names) and the not-found page's
  header order. A not-found page that does not name the host makes a fingerprint distinctive
  but is not part of the signature: one platform may serve several such pages.
- What only a CDN's edge writes (a vendor's header or value shape, ``courtier.origins.cdn``) is
  noted as ``cdn``; header names any cache adds (``Via``, ``X-Cache``, ``X-Served-By``) are
  neither a CDN's mark nor a platform's distinctive evidence.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from courtier.origins.cdn import cdn_header_name, headers_cdn_reason

# Headers every kind of server sends; their presence says nothing about a platform.
STANDARD_HEADERS: frozenset[str] = frozenset(
    {
        "accept-ranges",
        "access-control-allow-origin",
        "age",
        "allow",
        "alt-svc",
        "cache-control",
        "connection",
        "content-disposition",
        "content-encoding",
        "content-language",
        "content-length",
        "content-location",
        "content-security-policy",
        "content-security-policy-report-only",
        "content-type",
        "cross-origin-embedder-policy",
        "cross-origin-opener-policy",
        "cross-origin-resource-policy",
        "date",
        "etag",
        "expires",
        "keep-alive",
        "last-modified",
        "link",
        "location",
        "nel",
        "p3p",
        "permissions-policy",
        "pragma",
        "referrer-policy",
        "report-to",
        "retry-after",
        "server",
        "server-timing",
        "set-cookie",
        "strict-transport-security",
        "transfer-encoding",
        "upgrade",
        "vary",
        "via",
        "www-authenticate",
        "x-content-type-options",
        "x-dns-prefetch-control",
        "x-frame-options",
        "x-powered-by",
        "x-request-id",
        "x-ua-compatible",
        "x-xss-protection",
    }
)

# Cookie names used by frameworks and analytics everywhere: not a platform's choice.
GENERIC_COOKIES: frozenset[str] = frozenset(
    {
        "phpsessid",
        "jsessionid",
        "asp.net_sessionid",
        "aspsessionid",
        "sessionid",
        "session",
        "csrftoken",
        "_csrf",
        "connect.sid",
        "laravel_session",
        "xsrf-token",
        "_ga",
        "_gid",
        "__cf_bm",
        "__cfduid",
        "awsalb",
        "awsalbcors",
        "_session_id",
        "rack.session",
        "express.sid",
        "ci_session",
        "cakephp",
        "symfony",
        "arraffinity",
        "arraffinitysamesite",
        "wordpress_test_cookie",
        "_gat",
        "_fbp",
    }
)

# Cookie name prefixes of common stacks and load balancers (``BIGipServer<pool>``,
# ``wordpress_logged_in_<hash>``): the rest of the name varies per install.
GENERIC_COOKIE_PREFIXES: tuple[str, ...] = (
    "bigipserver",
    "wordpress_",
    "wp-settings",
    "wp_",
    "_ga_",
    "_hj",
    "ts0",
)


# Cookie names frameworks make from the app's own name or a hash: Rails' ``_<app>_session``,
# Drupal's ``SESS<hash>``/``SSESS<hash>``, ASP.NET Core's ``.AspNetCore.*`` (lowercase here).
_GENERIC_COOKIE_SHAPES = re.compile(r"^_[a-z0-9_]+_session$|^s?sess[0-9a-f]{16,}$|^\.aspnetcore\.")


def generic_cookie(name: str) -> bool:
    """Is this cookie name sent by every install of a common stack, CMS or analytics tag?"""
    return (
        name in GENERIC_COOKIES
        or name.startswith(GENERIC_COOKIE_PREFIXES)
        or bool(_GENERIC_COOKIE_SHAPES.match(name))
    )


# Headers that every install of a common software stack sends (CMSs, frameworks, app servers,
# caches in front of one server): not a platform's choice, so never distinctive.
GENERIC_STACK_HEADERS: frozenset[str] = frozenset(
    {
        "x-aspnet-version",
        "x-aspnetmvc-version",
        "x-sourcefiles",
        "x-runtime",
        "x-request-runtime",
        "x-pingback",
        "x-generator",
        "x-drupal-cache",
        "x-drupal-dynamic-cache",
        "x-litespeed-cache",
        "x-litespeed-cache-control",
        "x-turbo-charged-by",
        "x-mod-pagespeed",
        "x-page-speed",
        "x-varnish",
        "x-redirect-by",
        "x-nextjs-cache",
        "x-nextjs-prerender",
        "x-nextjs-stale-time",
        "x-middleware-rewrite",
        "x-backend-server",
        "x-upstream",
        "x-proxy-cache",
        "x-debug-token",
        "x-debug-token-link",
        "x-permitted-cross-domain-policies",
        "x-download-options",
        "x-robots-tag",
        "x-content-security-policy",
        "x-webkit-csp",
        "x-correlation-id",
        "x-trace-id",
        "x-response-time",
        "x-envoy-upstream-service-time",
        "x-b3-traceid",
        "traceparent",
        "origin-agent-cluster",
        "timing-allow-origin",
        "access-control-allow-credentials",
        "access-control-allow-headers",
        "access-control-allow-methods",
        "access-control-expose-headers",
        "access-control-max-age",
        "expect-ct",
        "feature-policy",
        "document-policy",
        "cross-origin-resource-policy",
    }
)

# ``X-Powered-By`` values (and ``Server`` products) of common stacks: every install sends them.
_GENERIC_POWERED_BY = re.compile(
    r"^\s*(php|asp\.net|express|next\.js|nuxt|servlet|jsp|jetty|tomcat|undertow|plesk\w*|"
    r"wordpress|w3 total cache|wp engine|phusion passenger|passenger|mono|zend|perl|python|"
    r"django|flask|laravel|symfony|craft cms|drupal|joomla|typo3|hhvm|openresty|nginx|apache|"
    r"kestrel|node\.js|koa|hapi|sails|meteor|ruby|rails|puma|unicorn|gunicorn|uvicorn|"
    r"waitress|litespeed|cherrypy|tornado|coldfusion|ocaml|dart|go|java|play|vert\.x)"
    r"(\b|[/ \d.]|$)",
    re.IGNORECASE,
)

# Phrases of the stock not-found pages software stacks serve out of the box (Apache, nginx,
# IIS, Express, Django, Rails, Caddy, Tomcat, Jetty, gunicorn, LiteSpeed, OpenResty...).
_STOCK_NOT_FOUND = re.compile(
    rb"(the requested url .{0,80}was not found on this server|<center>(nginx|openresty)"
    rb"|<hr><center>|cannot (get|post) /|the requested resource was not found on this server"
    rb"|the page you were looking for doesn't exist|http error 404|server error in '/' application"
    rb"|404 - file or directory not found|apache tomcat|powered by jetty|litespeed web server"
    rb"|<title>404 not found</title>|^\s*(404 )?not found\s*$|^\s*404 page not found\s*$"
    rb"|that page can(&rsquo;|&#8217;|\xe2\x80\x99|')t be found|page not found &#8211;)",
    re.IGNORECASE | re.DOTALL,
)
STOCK_PAGE_MAX_BYTES = 4096
"""Stock error pages are small; a bigger not-found page was made by somebody."""


def generic_powered_by(value: str) -> bool:
    """Does this ``X-Powered-By`` name a common stack (sent by every install of it)?"""
    return bool(_GENERIC_POWERED_BY.match(value))


def stock_not_found(body: bytes) -> bool:
    """Is this a software stack's stock not-found page (served alike by unrelated servers)?"""
    if not body.strip():
        return True  # an empty 404 is every stack's default somewhere
    return len(body) <= STOCK_PAGE_MAX_BYTES and bool(_STOCK_NOT_FOUND.search(body))


# Varies from one response to the next: kept out of the header order.
_VOLATILE = frozenset({"retry-after", "age", "set-cookie", "date", "content-length"})


@dataclass(frozen=True, slots=True)
class ProbeResponse:
    """One response as a probe saw it: status, headers in wire order, SHA-256 of the body."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body_sha256: str
    body_names_host: bool = False  # the body contains the host name
    body_stock: bool = False  # a software stack's stock error page (shared by strangers)


@dataclass(frozen=True, slots=True)
class HeaderFingerprint:
    server: str | None
    powered_by: str | None
    via: str | None
    cookie_names: tuple[str, ...]
    platform_headers: tuple[str, ...]
    not_found_hash: str | None  # only when the page does not name the host
    header_order: tuple[str, ...]
    cdn: str | None
    """What in the answers only a CDN's edge writes (``cdn.headers_cdn_reason``), or None."""

    @property
    def product(self) -> str | None:
        """The server product (``nginx`` of ``nginx/1.24.0``), lowercase; None if unnamed."""
        return _product(self.server) or None if self.server else None

    @property
    def distinctive(self) -> bool:
        return bool(
            self.platform_headers
            or self.cookie_names
            or (self.powered_by and not generic_powered_by(self.powered_by))
            or self.not_found_hash is not None
        )

    @property
    def signature(self) -> str | None:
        """What two sites must share to be called one platform; None if not distinctive.

        The server stack (server product, ``X-Powered-By``, platform header and cookie names)
        and the not-found page's header order. The not-found page itself is left out: one
        platform may serve several (per path type, per service), so it only makes a
        fingerprint distinctive.
        """
        if not self.distinctive:
            return None
        parts = (
            _product(self.server or ""),
            self.powered_by or "",
            ",".join(self.platform_headers),
            ",".join(self.cookie_names),
            ",".join(self.header_order),
        )
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]

    @property
    def chosen_marks(self) -> frozenset[str]:
        """What the platform behind these answers chose: its header names, cookie names and
        an ``X-Powered-By`` naming no common stack. Two answers sharing none of them and each
        with some come from different backends; the header order and server version, which
        vary with the page and the front that answered, never tell backends apart."""
        marks = {f"header {h}" for h in self.platform_headers}
        marks.update(f"cookie {c}" for c in self.cookie_names)
        if self.powered_by and not generic_powered_by(self.powered_by):
            marks.add(f"x-powered-by {self.powered_by.strip().lower()}")
        return frozenset(marks)

    @property
    def backend_marks(self) -> frozenset[str]:
        """``chosen_marks`` and the not-found page's hash when it is a platform's own: sites
        sharing any of these are one backend (a platform may serve several 404 pages, so a
        different one alone never tells two backends apart)."""
        if self.not_found_hash is None:
            return self.chosen_marks
        return self.chosen_marks | {f"404 {self.not_found_hash}"}

    def describe(self) -> str:
        bits = [f"Server: {self.server}"] if self.server else []
        if self.powered_by:
            bits.append(f"X-Powered-By: {self.powered_by}")
        if self.platform_headers:
            bits.append("headers " + ", ".join(self.platform_headers))
        if self.cookie_names:
            bits.append("cookies " + ", ".join(self.cookie_names))
        if self.not_found_hash:
            bits.append(f"404 page {self.not_found_hash[:12]}")
        return "; ".join(bits) or "no distinctive headers"

    def conflicts_with(self, other: HeaderFingerprint) -> bool:
        """Both name their server software and the names differ: different server stacks."""
        return bool(
            self.server and other.server and _product(self.server) != _product(other.server)
        )


def _product(server: str) -> str:
    return server.split("/", 1)[0].strip().lower()


def _cookie_name(value: str) -> str:
    return value.split(";", 1)[0].split("=", 1)[0].strip().lower()


def body_sha256(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def probe_response(
    status: int, headers: Sequence[tuple[str, str]], body: bytes, host: str
) -> ProbeResponse:
    """Build a ``ProbeResponse``, noting whether the body names the host (then it is not shared)
    and whether it is a software stack's stock page (then strangers share it)."""
    names_host = host.lower().encode() in body.lower()
    return ProbeResponse(
        status, tuple(headers), body_sha256(body), names_host, stock_not_found(body)
    )


def header_fingerprint(
    home: ProbeResponse | None, missing: ProbeResponse | None
) -> HeaderFingerprint | None:
    """The fingerprint of a site from its ``/`` and not-found responses (either may be absent)."""
    responses = [r for r in (home, missing) if r is not None]
    if not responses:
        return None
    first: dict[str, str] = {}
    cookies: set[str] = set()
    platform: set[str] = set()
    for response in responses:
        for name, value in response.headers:
            lower = name.lower()
            first.setdefault(lower, value.strip())
            if lower == "set-cookie":
                cookie = _cookie_name(value)
                if cookie and not generic_cookie(cookie):
                    cookies.add(cookie)
            elif (
                lower not in STANDARD_HEADERS
                and not cdn_header_name(lower)
                and lower not in GENERIC_STACK_HEADERS
            ):
                platform.add(lower)
    not_found_hash = None
    order_source = responses[-1]
    if (
        missing is not None
        and missing.status == 404
        and not missing.body_names_host
        and not missing.body_stock
    ):
        not_found_hash = missing.body_sha256
    all_headers = [h for r in responses for h in r.headers]
    return HeaderFingerprint(
        server=first.get("server"),
        powered_by=first.get("x-powered-by"),
        via=first.get("via"),
        cookie_names=tuple(sorted(cookies)),
        platform_headers=tuple(sorted(platform)),
        not_found_hash=not_found_hash,
        header_order=_order(order_source.headers),
        cdn=headers_cdn_reason(all_headers),
    )


def _order(headers: Sequence[tuple[str, str]]) -> tuple[str, ...]:
    names = (name.lower() for name, _ in headers)
    return tuple(dict.fromkeys(n for n in names if n not in _VOLATILE))
