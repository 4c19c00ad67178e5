"""Response header values as a hostile server may send them: a value, or None for "invalid".

Every function here takes any ``str`` (arbitrary Unicode: control characters, lone
surrogates from a ``surrogateescape`` decode, superscript or other non-ASCII digits, huge
numbers, ``NaN``/``inf`` text) and never raises. What a server sent is either read as the
RFC says or ignored; nothing is guessed. The rules:

- **Characters.** A control character (``%x00-1F``, ``%x7F``; HTAB only where the grammar
  allows whitespace) or a lone surrogate makes a value invalid. Non-ASCII text is accepted
  only where the grammar has ``obs-text`` (inside quoted strings and entity-tags, in a
  ``Location`` or ``Link`` target), never in tokens, numbers or dates.
- **Numbers** are ASCII digits only (``str.isdigit`` accepts ``"²"``, ``float`` does not, and
  ``float`` accepts ``"1e3"``, ``"inf"`` and ``"nan"``: none of them is delta-seconds).
- **Length.** A value longer than :data:`MAX_FIELD` characters is invalid (``link_header``
  gives ``[]``); ``etag`` allows :data:`MAX_ETAG`, ``location`` :data:`MAX_LOCATION`.
- ``retry_after_seconds`` (RFC 9110 10.2.3): ``1*DIGIT`` delta-seconds, or an HTTP-date
  (a date in the past gives 0.0). The result is a finite float >= 0; a delta too large for a
  float saturates at ``sys.float_info.max``. It is *not* clamped: the caller decides how long
  it is willing to wait (``courtier.politeness.backoff.parse_retry_after``).
- ``http_date`` (RFC 9110 5.6.7): IMF-fixdate, RFC 850 and asctime forms (read by
  ``email.utils``; a date without a zone is GMT, as every HTTP-date is) as a Unix timestamp.
- ``media_type`` (RFC 9110 8.3.1): ``type/subtype`` tokens, lowercased, then parameters with
  lowercased names, token or quoted-string values (unquoted); the first occurrence of a name
  wins, malformed parameters are skipped, a malformed type/subtype is invalid. The
  ``charset`` value is lowercased (charset names are case-insensitive, RFC 9110 8.3.2); other
  values keep their case (``boundary`` is case-sensitive). ``charset_of`` gives that charset.
- ``etag`` (RFC 9110 8.8.3): ``"opaque"`` or ``W/"opaque"``, returned exactly (stripped).
- ``cache_max_age`` (RFC 9111 5.2.2.1): the first ``max-age`` directive of Cache-Control;
  delta-seconds beyond 2**31 count as 2**31 (RFC 9111 1.2.2). ``s-maxage`` is not ``max-age``.
- ``location`` (RFC 9110 10.2.2): the stripped URI-reference; resolving it is the URL
  parser's job.
- ``link_header`` (RFC 8288): ``<URI-reference>`` plus parameters (names lowercased, ``rel``
  value lowercased: relation types compare case-insensitively), first occurrence of a
  parameter wins; a malformed link-value is skipped; at most :data:`MAX_LINKS` links.
"""

from __future__ import annotations

import math
import re
import sys
from datetime import UTC
from email.utils import parsedate_to_datetime

MAX_FIELD = 16 * 1024
"""Longest header value any parser here reads; a longer one is invalid."""
MAX_ETAG = 1024
MAX_LOCATION = 8192
MAX_LINKS = 100
"""``link_header`` returns at most this many links."""
MAX_PARAMS = 64
"""Parameters kept per media type or link; further ones are ignored."""
MAX_DELTA_SECONDS = 2**31
"""RFC 9111 1.2.2: a larger delta-seconds counts as this."""

_MAX_DATE = 128
_OWS = " \t"
_WHITESPACE = " \t\r\n\x0b\x0c"
_TCHAR = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_DIGITS = re.compile(r"[0-9]+")  # ASCII only (unlike \d, str.isdigit or int())
# HTTP's CTL (HTAB included) and lone surrogates, which no strict encoder accepts back.
_BAD = re.compile(r"[\x00-\x1f\x7f\ud800-\udfff]")
_BAD_BUT_TAB = re.compile(r"[\x00-\x08\x0a-\x1f\x7f\ud800-\udfff]")


def _clean(value: str, limit: int = MAX_FIELD, *, tab: bool = False) -> bool:
    """True when ``value`` is short enough and has no control character (HTAB allowed when
    ``tab``, for fields whose grammar has whitespace) or surrogate."""
    bad = _BAD_BUT_TAB if tab else _BAD
    return len(value) <= limit and bad.search(value) is None


def _delta_seconds(text: str) -> int | None:
    """RFC 9110 delta-seconds (``1*DIGIT``, ASCII) as an int, saturated at 2**1023."""
    if _DIGITS.fullmatch(text) is None:
        return None
    digits = text.lstrip("0") or "0"
    if len(digits) > 300:  # int() refuses > 4300 digits; far beyond any float anyway
        return 2**1023
    return int(digits)


def http_date(value: str | None) -> float | None:
    """An HTTP-date (Date, Last-Modified, Expires, Retry-After) as a Unix timestamp."""
    if value is None:
        return None
    text = value.strip(_OWS)
    if not text or len(text) > _MAX_DATE or not text.isascii() or not _clean(text, tab=True):
        return None
    try:
        when = parsedate_to_datetime(text)
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)  # asctime and "-0000": HTTP-dates are GMT
        stamp = when.timestamp()
    except Exception:  # email.utils raises several types on odd input; all mean "invalid"
        return None
    return stamp if -1e12 < stamp < 1e12 else None


def retry_after_seconds(value: str | None, now_wall: float) -> float | None:
    """Seconds to wait from a Retry-After value (delta-seconds or HTTP-date), unclamped.

    ``now_wall`` is the wall clock (``time.time()``) the HTTP-date form is measured against.
    A date in the past gives 0.0. The result is finite and >= 0, or None when invalid.
    """
    if value is None:
        return None
    text = value.strip(_OWS)
    delta = _delta_seconds(text)
    if delta is not None:
        return float(delta) if delta < 2**1000 else sys.float_info.max
    when = http_date(text)
    if when is None:
        return None
    wait = when - now_wall
    if not math.isfinite(wait):  # only a non-finite now_wall does this
        return None
    return max(0.0, wait)


def _quoted(text: str, i: int) -> tuple[str | None, int]:
    """The quoted-string starting at ``text[i] == '"'``: (unquoted value or None, next index)."""
    out: list[str] = []
    i += 1
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            return "".join(out), i + 1
        if ch == "\\":
            i += 1
            if i >= n:
                break
            ch = text[i]
        if (ch < " " and ch != "\t") or ch == "\x7f" or "\ud800" <= ch <= "\udfff":
            return None, i
        out.append(ch)
        i += 1
    return None, n  # unterminated


def _token(text: str, i: int) -> tuple[str, int]:
    start = i
    n = len(text)
    while i < n and text[i] in _TCHAR:
        i += 1
    return text[start:i], i


def _skip(text: str, i: int, chars: str) -> int:
    n = len(text)
    while i < n and text[i] in chars:
        i += 1
    return i


def _skip_to(text: str, i: int, stops: str) -> int:
    """Index of the next character in ``stops`` outside quoted strings (or len(text))."""
    n = len(text)
    while i < n:
        ch = text[i]
        if ch in stops:
            return i
        if ch == '"':
            _, i = _quoted(text, i)
            continue
        i += 1
    return n


def _params(text: str, i: int, *, in_list: bool, bare: bool) -> tuple[dict[str, str], int]:
    """``*( OWS ";" OWS [ name "=" value ] )`` from ``text[i]``; stops at the end, or at a
    top-level comma when ``in_list``. Malformed parameters are skipped; ``bare`` keeps a
    name without ``=`` (Link) with the value ``""``. Returns (params, index of the stop)."""
    params: dict[str, str] = {}
    stops = ";," if in_list else ";"
    n = len(text)
    while True:
        i = _skip(text, i, _OWS)
        if i >= n or (in_list and text[i] == ","):
            return params, i
        if text[i] != ";":  # junk where a parameter should start: skip it
            i = _skip_to(text, i, stops)
            continue
        i = _skip(text, i + 1, _OWS)
        name, i = _token(text, i)
        i = _skip(text, i, _OWS)
        value: str | None
        if i < n and text[i] == "=":
            i = _skip(text, i + 1, _OWS)
            if i < n and text[i] == '"':
                value, i = _quoted(text, i)
            else:
                value, i = _token(text, i)
                value = value or None
        else:
            value = "" if bare else None
        after = _skip(text, i, _OWS)
        if after < n and text[after] not in stops:
            value = None  # trailing junk: the parameter is malformed
            after = _skip_to(text, after, stops)
        i = after
        name = name.lower()
        if name and value is not None and name not in params and len(params) < MAX_PARAMS:
            params[name] = value


def media_type(value: str | None) -> tuple[str, dict[str, str]] | None:
    """Content-Type as (``type/subtype`` lowercased, parameters), or None when invalid."""
    if value is None or not _clean(value, tab=True):
        return None
    text = value.strip(_OWS)
    kind, i = _token(text, 0)
    if not kind or i >= len(text) or text[i] != "/":
        return None
    sub, i = _token(text, i + 1)
    if not sub:
        return None
    rest = _skip(text, i, _OWS)
    if rest < len(text) and text[rest] != ";":
        return None  # "text/html garbage", "text/html, text/plain"
    params, _ = _params(text, rest, in_list=False, bare=False)
    if "charset" in params:
        params["charset"] = params["charset"].lower()
    return f"{kind}/{sub}".lower(), params


def charset_of(content_type: str | None) -> str | None:
    """The charset a Content-Type names (lowercased token), or None."""
    parsed = media_type(content_type)
    if parsed is None:
        return None
    charset = parsed[1].get("charset", "")
    if not charset or any(ch not in _TCHAR for ch in charset):
        return None
    return charset


def etag(value: str | None) -> str | None:
    """A strong (``"x"``) or weak (``W/"x"``) entity-tag, exactly as sent, or None."""
    if value is None:
        return None
    text = value.strip(_OWS)
    if not _clean(text, MAX_ETAG):
        return None
    opaque = text[2:] if text.startswith("W/") else text
    if len(opaque) < 2 or opaque[0] != '"' or opaque[-1] != '"':
        return None
    inner = opaque[1:-1]
    # etagc = %x21 / %x23-7E / obs-text: no DQUOTE, no space, no control character.
    if '"' in inner or " " in inner:
        return None
    return text


def cache_max_age(cache_control: str | None) -> int | None:
    """Seconds of ``max-age`` in a Cache-Control value (first occurrence), or None."""
    if cache_control is None or not _clean(cache_control, tab=True):
        return None
    text = cache_control
    n = len(text)
    i = 0
    while i < n:
        i = _skip(text, i, _OWS + ",")
        name, i = _token(text, i)
        i = _skip(text, i, _OWS)
        argument: str | None = None
        if i < n and text[i] == "=":
            i = _skip(text, i + 1, _OWS)
            if i < n and text[i] == '"':
                argument, i = _quoted(text, i)
            else:
                argument, i = _token(text, i)
        end = _skip_to(text, i, ",")
        malformed = text[i:end].strip(_OWS) != ""
        if name.lower() == "max-age":
            if malformed or argument is None:
                return None
            seconds = _delta_seconds(argument)
            return None if seconds is None else min(seconds, MAX_DELTA_SECONDS)
        i = end if end > i else i + 1
    return None


def location(value: str | None) -> str | None:
    """The Location URI-reference, stripped; None when empty, overlong or with controls."""
    if value is None:
        return None
    text = value.strip(_WHITESPACE)
    if not text or not _clean(text, MAX_LOCATION):
        return None
    return text


def link_header(value: str | None) -> list[tuple[str, dict[str, str]]]:
    """Links of a Link header (RFC 8288) as (URI-reference, parameters); never raises."""
    links: list[tuple[str, dict[str, str]]] = []
    if value is None or len(value) > MAX_FIELD:
        return links
    text = value
    n = len(text)
    i = 0
    while i < n and len(links) < MAX_LINKS:
        i = _skip(text, i, _WHITESPACE + ",")
        if i >= n:
            break
        if text[i] != "<":
            i = _skip_to(text, i, ",")  # not a link-value: skip it
            continue
        close = text.find(">", i + 1)
        if close < 0:
            break
        target = text[i + 1 : close].strip(_OWS)
        params, i = _params(text, close + 1, in_list=True, bare=True)
        if not _clean(target, MAX_LOCATION):
            continue
        if "rel" in params:
            params["rel"] = params["rel"].lower()
        links.append((target, params))
    return links
