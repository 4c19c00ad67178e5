"""Canonical path and query text for the deduplication key.

Input is already WHATWG-serialised by ada (dot segments resolved, non-ASCII and unsafe
characters percent-encoded). On top of that, for the key only:

- Percent-encoding is normalised as RFC 3986 §6.2.2 allows: escapes of unreserved characters
  (``A-Z a-z 0-9 - . _ ~``) are decoded, every other escape gets uppercase hex. Nothing else is
  decoded: ``%2F`` and ``/`` or ``%26`` and ``&`` mean different things to servers.
- Query parameters whose name is on the strip list are removed; the rest are sorted by name,
  stably, so repeated names keep their order (``a=2&a=1`` is not ``a=1&a=2``). Empty pieces
  (``&&``) are dropped; ``a`` and ``a=`` stay distinct.
- Path parameters (``;jsessionid=...``) whose name is on the strip list are removed too.
- Names match the strip list case-insensitively, after escape normalisation. An entry ending
  in ``*`` is a prefix: ``utm_*`` strips ``utm_source``, ``utm_medium``, ...
"""

from __future__ import annotations

import re
from functools import lru_cache
from operator import itemgetter
from typing import Final

_UNRESERVED: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_ESCAPE: Final = re.compile(r"%[0-9A-Fa-f]{2}")
_HEX: Final = "0123456789abcdefABCDEF"


def _escape_table() -> dict[str, str]:
    table: dict[str, str] = {}
    for high in _HEX:
        for low in _HEX:
            escape = f"%{high}{low}"
            char = chr(int(high + low, 16))
            table[escape] = char if char in _UNRESERVED else escape.upper()
    return table


_ESCAPES: Final = _escape_table()


def _normal_escape(match: re.Match[str]) -> str:
    return _ESCAPES[match.group()]


def normalise_escapes(text: str) -> str:
    """Decode escapes of unreserved characters; uppercase the hex of the others."""
    if "%" not in text:
        return text
    return _ESCAPE.sub(_normal_escape, text)


@lru_cache(maxsize=64)
def _strip_rules(strip_params: frozenset[str]) -> tuple[frozenset[str], tuple[str, ...]]:
    exact = frozenset(name.lower() for name in strip_params if not name.endswith("*"))
    prefixes = tuple(name[:-1].lower() for name in strip_params if name.endswith("*"))
    return exact, prefixes


def _is_stripped(name: str, exact: frozenset[str], prefixes: tuple[str, ...]) -> bool:
    lowered = name.lower()
    return lowered in exact or (bool(prefixes) and lowered.startswith(prefixes))


def canonical_path(path: str, strip_params: frozenset[str]) -> str:
    """The path with escapes normalised and stripped ``;name=value`` parameters removed."""
    path = normalise_escapes(path)
    if ";" not in path:
        return path
    exact, prefixes = _strip_rules(strip_params)
    segments = []
    for segment in path.split("/"):
        if ";" in segment:
            head, *params = segment.split(";")
            kept = [p for p in params if not _is_stripped(p.partition("=")[0], exact, prefixes)]
            stripped = ";".join([head, *kept])
            # "/.;jsessionid=x/" must not turn into a dot segment a parser would then resolve.
            segment = segment if stripped in (".", "..") else stripped
        segments.append(segment)
    return "/".join(segments)


def canonical_query(query: str, strip_params: frozenset[str]) -> str:
    """The query (without "?") normalised, filtered and stably sorted by parameter name."""
    if not query:
        return ""
    exact, prefixes = _strip_rules(strip_params)
    named: list[tuple[str, str]] = []
    for piece in normalise_escapes(query).split("&"):
        if not piece:
            continue
        name = piece.partition("=")[0]
        if _is_stripped(name, exact, prefixes):
            continue
        named.append((name, piece))
    if len(named) > 1:
        named.sort(key=itemgetter(0))
    return "&".join(piece for _, piece in named)
