"""Which object-store bucket a URL addresses, from the provider table in ``stores``.

A URL is a store reference when its canonical host matches a row's host template and its path
matches one of that row's path templates (first row wins). Bucket and key are percent-decoded;
a bucket that is empty or not a plausible bucket name is no match. The port is ignored: stores
answer on their scheme's default port, and a URL on another port fails at connect time anyway.

Host matching is cached per canonical host; the per-URL work is one path regex.

A hostname alone (a CNAME target: ``store_name``) says less: the bucket when the name holds one
(virtual-hosted, or a row's fixed container), else the account that scopes the containers
(Azure, R2: the container is the first path segment), else nothing (a path-style endpoint:
reached by a CNAME, S3 and GCS take the request's Host for the bucket's name).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Final
from urllib.parse import unquote

from courtier.url.canonical import Url, parse_url
from courtier.url.host import HOST_CACHE_SIZE
from courtier.url.stores import STORE_ENDPOINTS, StoreEndpoint


@dataclass(frozen=True, slots=True)
class StoreRef:
    """An object in a bucket. ``bucket`` is ``account/container`` where accounts scope names."""

    provider: str
    bucket: str
    key: str  # the object key, percent-decoded; "" for the bucket itself
    region: str | None


@dataclass(frozen=True, slots=True)
class StoreName:
    """What an object store's endpoint name says without a path (``store_name``)."""

    provider: str
    bucket: str | None
    """The bucket the name holds (``img.s3.amazonaws.com``; a row's fixed container)."""
    account: str | None
    """The account scoping bucket names (Azure, R2), when the name holds one."""

    @property
    def per_path(self) -> bool:
        """An account's endpoint: the bucket is the container each request's path names."""
        return self.bucket is None and self.account is not None

    def bucket_behind(self, host: str, target: str = "/") -> str | None:
        """The bucket (as keyed: ``account/container`` where accounts scope names) that a
        request for ``target`` on ``host``, a name CNAMEd to this endpoint, reaches: the one
        the name holds; an account's container named by the path's first segment (None when
        the path names none); else ``host`` itself (a path-style endpoint: S3 and GCS serve
        the bucket named like the Host of a request reaching them by CNAME)."""
        if self.bucket is not None:
            return f"{self.account}/{self.bucket}" if self.account else self.bucket
        if self.account is None:
            return host
        container = unquote(target.partition("?")[0].lstrip("/").partition("/")[0])
        if not _BUCKET_NAME.fullmatch(container):
            return None
        return f"{self.account}/{container}"


_HOST_TOKENS: Final = {
    "bucket": r"[a-z0-9](?:[a-z0-9._-]*[a-z0-9])?",  # DNS labels; buckets may hold dots
    "account": r"[a-z0-9-]+",
}
_CAPTURED: Final = frozenset({"bucket", "account", "region"})
_PLACEHOLDER: Final = re.compile(r"\{(\w+)\}")
_BUCKET_NAME: Final = re.compile(r"\$?[A-Za-z0-9][A-Za-z0-9._-]{0,254}")


@dataclass(frozen=True, slots=True)
class _CompiledEndpoint:
    endpoint: StoreEndpoint
    host: re.Pattern[str]
    paths: tuple[re.Pattern[str], ...]


def _compile_host(endpoint: StoreEndpoint) -> re.Pattern[str]:
    tokens = {**_HOST_TOKENS, "region": endpoint.region_pattern, **dict(endpoint.tokens)}
    pieces = []
    for index, piece in enumerate(_PLACEHOLDER.split(endpoint.host)):
        if index % 2 == 0:
            pieces.append(re.escape(piece))
        elif piece in _CAPTURED:
            pieces.append(f"(?P<{piece}>{tokens[piece]})")
        else:
            pieces.append(f"(?:{tokens[piece]})")
    return re.compile("".join(pieces))


def _compile_path(template: str) -> re.Pattern[str]:
    optional_key = template.endswith("/{key}") and template != "/{key}"
    head = template.removesuffix("/{key}") if optional_key else template
    pattern = re.escape(head)
    pattern = pattern.replace(re.escape("{bucket}"), "(?P<bucket>[^/]+)")
    pattern = pattern.replace(re.escape("{key}"), "(?P<key>.*)")
    if optional_key:
        pattern += "(?:/(?P<key>.*))?"
    return re.compile(pattern)


def _compile(endpoint: StoreEndpoint) -> _CompiledEndpoint:
    paths = endpoint.paths
    if not paths:
        paths = ("/{key}",) if "{bucket}" in endpoint.host else ("/{bucket}/{key}",)
    return _CompiledEndpoint(endpoint, _compile_host(endpoint), tuple(map(_compile_path, paths)))


_COMPILED: Final = tuple(_compile(endpoint) for endpoint in STORE_ENDPOINTS)


@lru_cache(maxsize=HOST_CACHE_SIZE)
def _host_matches(host: str) -> tuple[tuple[_CompiledEndpoint, dict[str, str]], ...]:
    matches = []
    for compiled in _COMPILED:
        found = compiled.host.fullmatch(host)
        if found is not None:
            matches.append((compiled, found.groupdict()))
    return tuple(matches)


def object_store(url: str | Url) -> StoreRef | None:
    """The bucket and key ``url`` addresses, or None when it is not an object-store URL.

    A string is parsed with ``parse_url`` first (and raises UrlError if invalid).
    """
    global _last_answer
    last = _last_answer
    if last[0] is url:  # asked again for the same parsed URL: media kind, then its keys
        return last[1]
    match = match_store_endpoint(url)
    answer = None if match is None else match[1]
    if isinstance(url, Url):
        _last_answer = (url, answer)  # one tuple: swapped whole, never seen half-made
    return answer


_last_answer: tuple[Url | None, StoreRef | None] = (None, None)
"""The last ``Url`` asked about and its answer (a ``Url`` never changes; holding it keeps its
identity from being reused)."""


def store_name(host: str) -> StoreName | None:
    """The object store whose endpoint ``host`` (canonical) is, or None: the first row whose
    host template matches and whose paths can name a bucket in the usual places (the host, a
    fixed container, or ``/{bucket}/...``; not an API-only or ``/file/{bucket}`` endpoint)."""
    for compiled, groups in _host_matches(host):
        endpoint = compiled.endpoint
        bucket = endpoint.container or groups.get("bucket")
        if bucket is None and endpoint.paths and "/{bucket}/{key}" not in endpoint.paths:
            continue
        if bucket is not None and not _BUCKET_NAME.fullmatch(bucket):
            continue
        return StoreName(endpoint.provider, bucket, groups.get("account"))
    return None


def match_store_endpoint(url: str | Url) -> tuple[StoreEndpoint, StoreRef] | None:
    """Like ``object_store``, also naming the table row that matched (for debugging, tests)."""
    parsed = parse_url(url) if isinstance(url, str) else url
    candidates = _host_matches(parsed.host)
    if not candidates:
        return None
    path = parsed.target.partition("?")[0]
    for compiled, host_groups in candidates:
        for path_pattern in compiled.paths:
            found = path_pattern.fullmatch(path)
            if found is None:
                continue
            reference = _reference(compiled.endpoint, host_groups, found.groupdict())
            if reference is not None:
                return compiled.endpoint, reference
    return None


def _reference(
    endpoint: StoreEndpoint, host_groups: dict[str, str], path_groups: dict[str, str | None]
) -> StoreRef | None:
    bucket = (
        endpoint.container or host_groups.get("bucket") or unquote(path_groups.get("bucket") or "")
    )
    if not _BUCKET_NAME.fullmatch(bucket):
        return None
    account = host_groups.get("account")
    return StoreRef(
        provider=endpoint.provider,
        bucket=f"{account}/{bucket}" if account else bucket,
        key=unquote(path_groups.get("key") or ""),
        region=host_groups.get("region") or endpoint.region,
    )
