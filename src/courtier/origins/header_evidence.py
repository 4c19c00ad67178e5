"""Header evidence: a fingerprint of how a site's server answers, from two ordinary responses.

The input is what a probe saw: the response to ``/`` and to a path that does not exist, each as
its status, header list (in wire order) and the SHA-256 of its body. The fingerprint is a pure
function of that and the host name.

Rules:
- A fingerprint is *distinctive* only when it carries something a platform chose: a header name
  outside the standard and security header sets (``X-Plinth-Tenant``), a cookie name outside the
  well-known framework and analytics ones, an ``X-Powered-By``, or a not-found page that does not
  name the host (one page served for every tenant). ``Server: nginx`` alone is shared by millions
  of unrelated servers and is never enough.
- Values that differ per tenant are dropped: the fingerprint keeps header *names*, cookie
  *names*, and the values of ``Server``, ``X-Powered-By`` and ``Via`` only.
- The signature (what two sites must share to be one platform) is a hash of the server stack
  (server product, ``X-Powered-By``, platform header and cookie names) and the not-found page's
  header order. A not-found page that does not name the host makes a fingerprint distinctive
  but is not part of the signature: one platform may serve several such pages.
- CDN edges are recognised from these headers too (``courtier.origins.cdn``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from courtier.origins.cdn import CDN_HEADER_NAMES, headers_cdn_reason

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
    }
)

# Varies from one response to the next: kept out of the header order.
_VOLATILE = frozenset({"retry-after", "age", "set-cookie", "date", "content-length"})


@dataclass(frozen=True, slots=True)
class ProbeResponse:
    """One response as a probe saw it: status, headers in wire order, SHA-256 of the body."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body_sha256: str
    body_names_host: bool = False  # the body contains the host name


@dataclass(frozen=True, slots=True)
class HeaderFingerprint:
    server: str | None
    powered_by: str | None
    via: str | None
    cookie_names: tuple[str, ...]
    platform_headers: tuple[str, ...]
    not_found_hash: str | None  # only when the page does not name the host
    header_order: tuple[str, ...]
    cdn: str | None  # why the responses look like a CDN edge's, or None

    @property
    def distinctive(self) -> bool:
        return bool(
            self.platform_headers
            or self.cookie_names
            or self.powered_by
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
    """Build a ``ProbeResponse``, noting whether the body names the host (then it is not shared)."""
    names_host = host.lower().encode() in body.lower()
    return ProbeResponse(status, tuple(headers), body_sha256(body), names_host)


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
                if cookie and cookie not in GENERIC_COOKIES:
                    cookies.add(cookie)
            elif lower not in STANDARD_HEADERS and lower not in CDN_HEADER_NAMES:
                platform.add(lower)
    not_found_hash = None
    order_source = responses[-1]
    if missing is not None and missing.status == 404 and not missing.body_names_host:
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
