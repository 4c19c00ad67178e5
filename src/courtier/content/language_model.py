"""CLD2, Chromium's compact language detector (``pycld2``), in the worker, offline.

Its tables are compiled into the extension (a 14 MB shared object in the wheel): there is
nothing to download, unpack or read at run time, and a call on a page's 320 characters
costs about 12 us of C (``bench/bench_language.py``). ``detect`` is CLD2 on plain text:
whether CLD2 calls its answer reliable, and the languages it found, each with the share of
the text's bytes it holds (up to three, most first), in the codes ``identify`` names:
CLD2's few old ones mended (``iw`` Hebrew, ``jw`` Javanese), Traditional Chinese read as
Chinese, and its "unknown", its script-only answers (``xx-``) and its joke languages
(Klingon, Pig Latin) no language.

CLD2 refuses text that is not interchange-valid UTF-8: C0 and C1 controls other than tab,
newline, form feed and carriage return, noncharacters, and lone surrogates (which Python
will not even encode). Such a text is read again with them blanked, so the common case
pays no scan for them.
"""

from __future__ import annotations

import re
from types import MappingProxyType
from typing import Final, NamedTuple

import pycld2  # type: ignore[import-untyped]  # a C extension without type information

__all__ = ["LANGUAGES", "Detection", "detect", "load_model"]

_CODES: Final = MappingProxyType({"iw": "he", "jw": "jv", "zh-Hant": "zh"})
_NOT_LANGUAGES: Final = frozenset({"un", "tlh", "zzp"})  # unknown, Klingon, Pig Latin


def _code(cld2_code: str) -> str | None:
    if cld2_code in _NOT_LANGUAGES or cld2_code.startswith("xx-"):
        return None
    return _CODES.get(cld2_code, cld2_code)


_LANGUAGE_OF: Final[dict[str, str | None]] = {code: _code(code) for _, code in pycld2.LANGUAGES}
LANGUAGES: Final = frozenset(
    code
    for name, cld2_code in pycld2.LANGUAGES
    if name in pycld2.DETECTED_LANGUAGES and (code := _code(cld2_code)) is not None
)
"""Every code ``detect`` can give: 160 languages."""

_NONCHARACTERS = "".join(
    f"\\U{plane + 0xFFFE:08x}\\U{plane + 0xFFFF:08x}" for plane in range(0, 0x110000, 0x10000)
)
_INVALID: Final = re.compile(
    f"[\\x00-\\x08\\x0b\\x0e-\\x1f\\x7f-\\x9f\\ud800-\\udfff\\ufdd0-\\ufdef{_NONCHARACTERS}]"
)
"""What CLD2 refuses (tried on every code point)."""


class Detection(NamedTuple):
    reliable: bool
    """CLD2 calls its first language reliable: it holds most of the text, well ahead of any
    other (and it is a language, not CLD2's "unknown")."""
    languages: tuple[tuple[str, float], ...]
    """(code, share of the text's bytes), most first; the bytes of no language (numbers,
    punctuation, names CLD2 does not place) count for none of them."""


def detect(text: str, *, best_effort: bool = False) -> Detection:
    """CLD2's answer on ``text``; ``best_effort`` asks for a guess even where CLD2 finds the
    text too short to tell (its guess is then English as often as anything: see
    ``content/language.py``)."""
    try:
        reliable, _, details = pycld2.detect(text, isPlainText=True, bestEffort=best_effort)
    except (pycld2.error, UnicodeEncodeError):
        text = _INVALID.sub(" ", text)
        reliable, _, details = pycld2.detect(text, isPlainText=True, bestEffort=best_effort)
    languages = tuple(
        (code, percent / 100)
        for _, cld2_code, percent, _ in details
        if percent and (code := _LANGUAGE_OF.get(cld2_code, cld2_code)) is not None
    )
    first = _LANGUAGE_OF.get(details[0][1], details[0][1])
    sure = bool(reliable) and bool(languages) and first == languages[0][0]
    return Detection(sure, languages)


def load_model() -> None:
    """Make the model ready now (a parse worker's warm-up): CLD2's tables come with the
    extension, so this imports it and reads one text, paging in what a first page reads."""
    detect("A first text to read, in the worker's warm-up.")
