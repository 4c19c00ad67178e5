"""Builders of site facts for the clusterer's unit tests (no DNS, no sockets)."""

from __future__ import annotations

from courtier.origins.cluster import SiteFacts
from courtier.origins.dns_evidence import DnsFacts
from courtier.origins.header_evidence import HeaderFingerprint, header_fingerprint, probe_response
from courtier.origins.tls_evidence import TlsFacts


def site(
    host: str,
    *addresses: str,
    cname: tuple[str, ...] = (),
    ptr: dict[str, tuple[str, ...]] | None = None,
    headers: HeaderFingerprint | None = None,
    tls: TlsFacts | None = None,
    ttl: float = 300.0,
) -> SiteFacts:
    return SiteFacts(host, DnsFacts(host, cname, tuple(addresses), ptr or {}, ttl), headers, tls)


def failed(host: str, error: str = "nxdomain: the name does not exist") -> SiteFacts:
    return SiteFacts(host, DnsFacts(host, error=error))


def fingerprint(
    host: str,
    *extra: tuple[str, str],
    server: str = "nginx",
    not_found: bytes | None = None,
) -> HeaderFingerprint:
    """The fingerprint of a site answering with ``Server`` and ``extra`` headers.

    The not-found page names the host unless ``not_found`` gives a shared one.
    """
    headers = [("Content-Type", "text/html"), ("Server", server), *extra]
    body = not_found if not_found is not None else f"<p>Not found on {host}</p>".encode()
    home = probe_response(200, headers, f"<h1>{host}</h1>".encode(), host)
    missing = probe_response(404, headers, body, host)
    result = header_fingerprint(home, missing)
    assert result is not None
    return result


def plinth(host: str, label: str | None = None) -> HeaderFingerprint:
    """A tenant of a header-only platform: platform header, cookie, shared 404 page."""
    return fingerprint(
        host,
        ("X-Powered-By", "PlinthSites"),
        ("X-Plinth-Tenant", label or host.split(".")[0]),
        ("Set-Cookie", f"plinth_sid={abs(hash(host)) % 10**8}; Path=/"),
        server="Plinth/2.3",
        not_found=b"<h1>Page not found</h1><p>Powered by Plinth.</p>",
    )


# Server products of unrelated stacks, none of them distinctive.
SERVERS = ("nginx", "Apache", "Caddy", "gunicorn", "Microsoft-IIS/10.0", "LiteSpeed")


def marked(host: str, n: int, server: str | None = None) -> HeaderFingerprint:
    """An answer through a CDN's edge: a ray id of the CDN's shape (``n`` + 1 in hex), a
    generic stack behind it (the ``n``-th of ``SERVERS`` unless ``server`` names one)."""
    ray = ("CF-Ray", f"{n + 1:016x}-FRA")
    return fingerprint(host, ray, server=server or SERVERS[n % len(SERVERS)])


def branded(host: str, n: int) -> HeaderFingerprint:
    """A tenant of one platform answering through a CDN's edge (its own header and cookie)."""
    return fingerprint(
        host,
        ("CF-Ray", f"{n + 100:016x}-FRA"),
        ("X-Brand-Tenant", str(n)),
        ("Set-Cookie", f"brand_sid={n}"),
        server="nginx",
    )
