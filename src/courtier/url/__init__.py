"""URL and host canonicalisation: one host, one key.

Everything that keys on a URL or a host (seeds, frontier, horizon, limit keys, origin map)
goes through this package and nothing else. See docs/url.md for the canonical forms.
"""

from courtier.url.canonical import (
    DEFAULT_STRIP_PARAMS,
    MAX_URL_LENGTH,
    Url,
    canonical_target,
    clear_url_caches,
    parse_url,
    plain_path_target,
    site_key,
)
from courtier.url.errors import UrlError
from courtier.url.explain import Explanation, explain
from courtier.url.host import canonical_host, host_of_site, is_ip_address, is_ipv6, url_host
from courtier.url.objectstore import StoreName, StoreRef, object_store, store_name
from courtier.url.psl import registrable_domain
from courtier.url.stores import STORE_ENDPOINTS, StoreEndpoint

__all__ = [
    "DEFAULT_STRIP_PARAMS",
    "MAX_URL_LENGTH",
    "STORE_ENDPOINTS",
    "Explanation",
    "StoreEndpoint",
    "StoreName",
    "StoreRef",
    "Url",
    "UrlError",
    "canonical_host",
    "canonical_target",
    "clear_url_caches",
    "explain",
    "host_of_site",
    "is_ip_address",
    "is_ipv6",
    "object_store",
    "parse_url",
    "plain_path_target",
    "registrable_domain",
    "site_key",
    "store_name",
    "url_host",
]
