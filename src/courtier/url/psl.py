"""Registrable domains from the Public Suffix List, offline.

The list ships inside the ``publicsuffixlist`` package (it is never downloaded at run time; a
new list arrives with a new package version). We use the whole list, private section included,
as browsers do: ``bucket.s3.amazonaws.com`` and ``user.github.io`` are their own registrable
domains, because different people control them.

An IP address has no registrable domain, nor does a host that is itself a public suffix
(``com``, ``github.io``) or a single label (``localhost``).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Final

from publicsuffixlist import PublicSuffixList

from courtier.url.host import HOST_CACHE_SIZE, canonical_host, is_ip_address

_LIST_CACHE: Final = 1


@lru_cache(maxsize=_LIST_CACHE)
def _suffix_list() -> PublicSuffixList:
    # Loaded on first use: parsing the list costs tens of milliseconds at import otherwise.
    return PublicSuffixList(only_icann=False)


@lru_cache(maxsize=HOST_CACHE_SIZE)
def registrable_domain(host: str) -> str | None:
    """The registrable domain ("eTLD+1") of ``host`` in canonical form, or None.

    ``host`` may be any spelling ``canonical_host`` accepts; raises UrlError if it is invalid.
    """
    name = canonical_host(host)
    if is_ip_address(name):
        return None
    domain: str | None = _suffix_list().privatesuffix(name)
    return domain
