"""Canonical hosts: one spelling of a host, one key.

Rules (in this order):

1. The WHATWG URL standard's host parser (ada) does the heavy lifting: ASCII lowercase, UTS-46
   mapping and IDNA to punycode (full-width and ideographic full stops are separators),
   percent-decoding, IPv4 in every form a browser accepts (dotted, octal, hex, 32-bit integer,
   short ``127.1``, mixed) to a dotted quad, and IPv6 to its compressed lowercase text.
2. On top of WHATWG, because a host here must also be a DNS name we can resolve and a key we
   can trust:
   - one trailing dot is removed (``example.com.`` and ``example.com`` are one site);
   - empty labels are rejected (``a..b``, ``example.com..``);
   - a label over 63 octets or a name over 253 octets is rejected (DNS limits);
   - an ``xn--`` label must decode as punycode to a non-ASCII label that encodes back to itself
     (UTS-46 validity); ada 4.0 passes undecodable ones through.
3. Zone identifiers (``fe80::1%eth0``) are rejected: they name an interface of this machine,
   not a host on the web.

IPv6 is returned without brackets. Its text is the WHATWG serialisation, which follows RFC 5952
section 4 (lowercase, leading zeros dropped, the longest run of two or more zero groups
compressed, the first on a tie) and equals Python's ``ipaddress`` text, so the SSRF guard and
the keys agree. IPv4-mapped addresses stay in hex (``::ffff:7f00:1``), as WHATWG and Python 3.11
write them; the address guard decodes embedded IPv4 itself.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Final

import idna

from courtier.url import _ada
from courtier.url.errors import UrlError, shown

MAX_NAME_OCTETS: Final = 253
MAX_LABEL_OCTETS: Final = 63
HOST_CACHE_SIZE: Final = 1 << 16

# Characters that end a host inside a URL; in a bare host they mean the caller passed a URL
# fragment (or an attack such as "evil.example/@good.example"), never a host.
_URL_DELIMITERS: Final = frozenset("/?#@\\")
# Only ASCII whitespace is trimmed: other spaces and controls are forbidden host code points.
_ASCII_WHITESPACE: Final = " \t\n\r\f"
_DIAGNOSIS_LIMIT: Final = 1024  # longer junk is not worth explaining label by label
_IPV4_PART: Final = re.compile(r"(?:0[xX][0-9a-fA-F]*|[0-9]+)")


def is_ipv6(host: str) -> bool:
    """True for a canonical host that is an IPv6 address (canonical domains never hold ':')."""
    return ":" in host


def is_ip_address(host: str) -> bool:
    """True for a canonical host that is an IPv4 or IPv6 address."""
    if ":" in host:
        return True
    last = host.rpartition(".")[2]
    return bool(last) and last.isdigit()  # canonical domains never end in a numeric label


def url_host(host: str) -> str:
    """The host as written inside a URL: IPv6 in brackets."""
    return f"[{host}]" if ":" in host else host


@lru_cache(maxsize=HOST_CACHE_SIZE)
def canonical_host(host: str) -> str:
    """The canonical form of ``host``; raises UrlError saying what is wrong with it.

    Accepts bracketed or bare IPv6, Unicode or punycode names, any IPv4 spelling, surrounding
    ASCII whitespace and a trailing dot. A port, path or credentials are errors: this takes a host.
    """
    text = host.strip(_ASCII_WHITESPACE)
    if not text:
        raise UrlError("empty host")
    if "://" in text:
        raise UrlError(f"{shown(host)} is a URL, not a host")
    if text[0] == "[" and text[-1] != "]":
        raise UrlError(f"{shown(host)} has text after the IPv6 address; a host has no port")
    delimiter = next((char for char in text if char in _URL_DELIMITERS), None)
    if delimiter is not None:
        raise UrlError(f"forbidden character {delimiter!r} in host {shown(host)}")
    # A bare IPv6 address gets its brackets; so does a host with a port (diagnosed below).
    bracketed = f"[{text}]" if text[0] != "[" and ":" in text else text
    try:
        parts = _ada.parse(f"http://{bracketed}/")
    except UnicodeEncodeError:
        raise UrlError(f"host {shown(host)} is not valid Unicode") from None
    if parts is None or parts.href[parts.target_start :] != "/" or parts.port is not None:
        raise UrlError(diagnose_host(text))
    return finish_host(parts.hostname, parts.host_type)


@lru_cache(maxsize=HOST_CACHE_SIZE)
def finish_host(whatwg_host: str, host_type: int) -> str:
    """Apply Courtier's rules on top of a host the WHATWG parser accepted (see module doc)."""
    if host_type == _ada.HOST_IPV6:
        return whatwg_host[1:-1]
    if host_type == _ada.HOST_IPV4:
        return whatwg_host
    name = whatwg_host[:-1] if whatwg_host.endswith(".") else whatwg_host
    _check_dns_name(name, whatwg_host)
    return name


def _check_dns_name(name: str, original: str) -> None:
    if not name:
        raise UrlError(f"host {shown(original)} has no name")
    if len(name) > MAX_NAME_OCTETS:
        raise UrlError(f"host name is {len(name)} octets long; the limit is {MAX_NAME_OCTETS}")
    for label in name.split("."):
        if not label:
            raise UrlError(f"empty label in host {shown(original)}")
        if len(label) > MAX_LABEL_OCTETS:
            raise UrlError(
                f"label {label[:20]!r}... is {len(label)} octets long; "
                f"the limit is {MAX_LABEL_OCTETS}"
            )
        if label.startswith("xn--"):
            _check_ace_label(label)


def _check_ace_label(label: str) -> None:
    """An ``xn--`` label must be punycode for a valid non-ASCII label (UTS-46 section 4,
    Processing, step 4): it must decode, and the decoded label must encode back to itself."""
    try:
        decoded = label[4:].encode("ascii").decode("punycode")
    except UnicodeError:
        raise UrlError(f"label {label!r} is not valid punycode") from None
    if not decoded or decoded.isascii():
        raise UrlError(f"label {label!r} does not encode a non-ASCII name")
    try:
        again = _ada.parse(f"http://{decoded}/")
    except UnicodeEncodeError:  # punycode can encode surrogate code points
        again = None
    if again is None or again.hostname != label:
        raise UrlError(f"label {label!r} decodes to {decoded!r}, which is not a valid IDNA label")


def diagnose_host(text: str) -> str:
    """A message saying why the WHATWG host parser rejected ``text`` (the slow, rare path)."""
    if not text:
        return "empty host"
    if ":" in text and "%" in text:
        return f"IPv6 zone identifiers are not allowed: {shown(text)}"
    if text.startswith("["):
        return f"invalid IPv6 address {shown(text)}"
    if text.count(":") == 1:  # an IPv6 address has at least two
        return f"{shown(text)} has a port; a host has none"
    if ":" in text:
        return f"invalid IPv6 address {shown(text)}"
    labels = text.rstrip(".").split(".")
    if _IPV4_PART.fullmatch(labels[-1]):
        return f"invalid IPv4 address {shown(text)} (a host ending in a number must be an address)"
    bad = next((char for char in text if char.isspace() or ord(char) < 0x20), None)
    if bad is not None:
        return f"forbidden character {bad!r} in host {shown(text)}"
    if len(text) > _DIAGNOSIS_LIMIT:
        return f"invalid host {shown(text)} ({len(text)} characters)"
    return f"invalid host {shown(text)}: {_idna_reason(text)}"


def _idna_reason(text: str) -> str:
    """The idna package's account of the problem, which names the offending code point."""
    try:
        idna.encode(text, uts46=True, transitional=False, std3_rules=False)
    except (idna.IDNAError, UnicodeError) as error:
        reason = str(error) or "IDNA processing failed"
        return reason if len(reason) <= 120 else reason[:120] + "…"
    return "forbidden code point or IDNA processing failed"


def host_of_site(site: str) -> str:
    """The host part of a site key (``host``, ``host:port`` or ``[v6]:port``)."""
    if site.startswith("["):
        return site[1 : site.index("]")]
    if site.count(":") == 1:
        return site.partition(":")[0]
    return site
