"""Thin, fast access to the ada URL parser (the WHATWG URL standard, in C++).

ada_url's Python ``URL`` class makes one FFI round trip per attribute and wraps every object
for garbage collection. On the hot path we call the C API directly: one parse, the serialised
``href``, the component offsets, the host and scheme types, then free — about three times
cheaper. Rules:

- Only special-scheme URLs reach our callers, so ``href`` is always ASCII (WHATWG serialises
  hosts as punycode and percent-encodes everything else).
- Offsets come from ada's ``url_components``; ``OMITTED`` marks an absent component.
- Nothing here decides policy: this module only reports what the WHATWG parser produced.
"""

from __future__ import annotations

from typing import Final, NamedTuple

from ada_url._ada_wrapper import ffi, lib

OMITTED: Final = 0xFFFFFFFF

# ada's scheme_type and host_type codes (see ada_url.SchemeType / HostType).
SCHEME_HTTP: Final = 0
SCHEME_HTTPS: Final = 2
HOST_DOMAIN: Final = 0
HOST_IPV4: Final = 1
HOST_IPV6: Final = 2


class AdaParts(NamedTuple):
    """What the WHATWG parser made of one input (a named tuple: built once per URL, cheaply)."""

    href: str
    scheme_type: int
    host_type: int
    hostname: str  # as serialised by WHATWG: IPv6 in brackets, domains may end in "."
    port: int | None  # None when absent or the scheme's default
    target_start: int  # offset of the path in href
    target_end: int  # offset of the fragment ("#") in href, or len(href)
    has_credentials: bool


def _text(value: object) -> str:
    length: int = value.length  # type: ignore[attr-defined]
    if not length:
        return ""
    return ffi.unpack(value.data, length).decode("utf-8")  # type: ignore[attr-defined,no-any-return]


def parse(raw: str, base: str | None = None) -> AdaParts | None:
    """Parse ``raw`` (resolved against ``base`` when given); None when WHATWG rejects it.

    Raises UnicodeEncodeError for strings that are not valid Unicode (lone surrogates).
    """
    raw_bytes = raw.encode("utf-8")
    if base is None:
        handle = lib.ada_parse(raw_bytes, len(raw_bytes))
    else:
        base_bytes = base.encode("utf-8")
        handle = lib.ada_parse_with_base(raw_bytes, len(raw_bytes), base_bytes, len(base_bytes))
    try:
        if not lib.ada_is_valid(handle):
            return None
        href = _text(lib.ada_get_href(handle))
        components = lib.ada_get_components(handle)
        hash_start = components.hash_start
        port = components.port
        hostname = _text(lib.ada_get_hostname(handle))
        return AdaParts(
            href,
            lib.ada_get_scheme_type(handle),
            _host_type(lib.ada_get_host_type(handle), hostname),
            hostname,
            None if port == OMITTED else port,
            components.pathname_start,
            len(href) if hash_start == OMITTED else hash_start,
            lib.ada_has_credentials(handle),
        )
    finally:
        lib.ada_free(handle)


def _host_type(reported: int, hostname: str) -> int:
    """ada 4.0 reports a host copied from the base (``/x`` against ``http://[::1]/``) as a
    domain: the serialised host says what it is (WHATWG serialises IPv6 in brackets, IPv4 as
    a dotted quad, and no domain ends in a numeric label)."""
    if reported != HOST_DOMAIN or not hostname:
        return reported
    if hostname[0] == "[":
        return HOST_IPV6
    if hostname.rpartition(".")[2].isdigit():
        return HOST_IPV4
    return reported
