"""Scope that fits real sites: which URLs of the seed are crawled, which hosts join it.

Rules (pure; ``discovery`` applies them):
- **Patterns** (``[scope] include``/``exclude``, regular expressions searched in the whole
  URL): a URL of a seed site matching an exclude pattern is not crawled; when include
  patterns are given, only URLs matching one are. Seed roots are always crawled.
- **One owner, one clock**: ``www.example.org`` and ``example.org`` (same port) are one site
  owner; when both are in the seed, both book on the bare host's ``site:`` key
  (``site_owner``), so the owner sees one request at a time, start to start, whichever host
  it goes to; unless origin inference places them on two origins, two servers that keep a
  clock each (``lanes.site.booked_site_key``).
- **Redirects into the same registrable domain** (``[scope] adopt_redirects``): a seed site
  redirecting to another host of its registrable domain (bare <-> ``www.``, ``shop.`` of the
  same domain; ``http`` <-> ``https`` is the same site already) brings that host into the
  seed. A seed redirecting anywhere else is reported once, with its target.
- **Subdomains** (``[scope] subdomains``, off by default): a linked host under a seed host
  (``blog.example.org`` under ``example.org`` or ``www.example.org``) joins the seed.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from courtier.config import ScopeSection
from courtier.url import UrlError, host_of_site, is_ip_address, registrable_domain


def _split(site: str) -> tuple[str, str]:
    """(host, ":port" or "") of a site key."""
    host = host_of_site(site)
    return host, site[len(host) :] if site.startswith(host) else ""


def site_owner(site: str, scope: Collection[str]) -> str:
    """The site whose ``site:`` clock ``site`` books on: the bare host for a ``www.`` host
    whose bare host is in ``scope``, else ``site`` itself."""
    if site.startswith("www.") and site[4:] in scope:
        return site[4:]
    return site


def same_domain(site: str, other: str) -> bool:
    """Do two sites' hosts share a registrable domain (never true of address literals)?"""
    host, _port = _split(site)
    other_host, _other_port = _split(other)
    if is_ip_address(host) or is_ip_address(other_host):
        return False
    try:
        domain = registrable_domain(host)
        return domain is not None and domain == registrable_domain(other_host)
    except UrlError:
        return False


def parent_in_scope(site: str, scope: Collection[str]) -> str | None:
    """The seed site ``site``'s host lies under (same port), or None."""
    host, port = _split(site)
    if is_ip_address(host):
        return None
    labels = host.split(".")
    for start in range(1, len(labels) - 1):
        parent = ".".join(labels[start:])
        for candidate in (f"{parent}{port}", f"www.{parent}{port}"):
            if candidate in scope:
                return candidate
    return None


class ScopeRules:
    def __init__(self, settings: ScopeSection) -> None:
        self.settings = settings
        self._include = [re.compile(p) for p in settings.include]
        self._exclude = [re.compile(p) for p in settings.exclude]

    def allows(self, url: str) -> bool:
        """May this URL of a seed site be crawled (the patterns)?"""
        if any(p.search(url) for p in self._exclude):
            return False
        return not self._include or any(p.search(url) for p in self._include)

    def adopts_redirect(self, source: str, target: str) -> bool:
        return self.settings.adopt_redirects and source != target and same_domain(source, target)

    def adopts_subdomain(self, site: str, scope: Collection[str]) -> str | None:
        """The seed site whose subdomain ``site`` is, when subdomains join the seed."""
        return parent_in_scope(site, scope) if self.settings.subdomains else None
