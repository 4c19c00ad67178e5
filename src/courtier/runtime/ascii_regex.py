"""Patterns written for ``re`` run by RE2 on text whose characters (or digits) are ASCII.

RE2 scans a text once with an automaton where ``re`` tries a pattern at every position,
but its ``\\b``, ``\\w``, ``\\d`` and ``\\s`` are ASCII-only. On ASCII text (or on text
whose decimal digits are all ASCII, for a pattern whose only class is ``\\d``) a pattern
spelled with the ASCII characters ``re`` matches finds what ``re`` finds: the redaction's
phone candidates (``courtier.sinks.redact``: ``digits_all_ascii`` says when) and the content
fingerprint's volatile tokens on an ASCII stand-in of the page's text
(``courtier.frontier.fingerprint``: ``ascii_spelled``).
"""

from __future__ import annotations

from functools import cache
from typing import Final

_ASCII_DIGITS: Final = {"\\d": ("[0-9]", "0-9")}
# Unicode's \s on ASCII characters: re.ASCII's six, and the four separators \x1c-\x1f
# (str.isspace() is true for them).
_SPACES: Final = "\\t\\n\\x0b\\x0c\\r\\x1c-\\x1f "
_ASCII_TEXT: Final = {"\\s": (f"[{_SPACES}]", _SPACES)}
_UNSUPPORTED: Final = frozenset({"\\D", "\\S"})
"""Negated classes: inside a character class they cannot be spelled out."""
_ASCII_AND_CONTINUATIONS: Final = bytes(range(0xC0))
"""UTF-8 bytes that begin no multi-byte character (what is left of a text are lead bytes)."""


def ascii_spelled(pattern: str) -> str:
    """``pattern`` with ``\\d`` and ``\\s`` spelled as the ASCII characters ``re`` matches
    with them: for an engine whose ``\\b``, ``\\w``, ``\\d`` and ``\\s`` are ASCII-only
    (RE2; ``re`` under ``re.ASCII``) to find what ``pattern`` finds on ASCII text."""
    return _spelled(pattern, {**_ASCII_DIGITS, **_ASCII_TEXT})


def digits_all_ascii(text: str) -> bool:
    """Is every decimal digit of ``text`` (what ``\\d`` matches) an ASCII one?

    Exact when True, cautious when False: a character counts as a digit when the lead byte
    of its UTF-8 encoding begins some non-ASCII digit's. Linear at C speed (an encode and
    two byte deletions), about 5 us for a 6 KB page. It lets RE2 find the phone candidates
    of text that is not all ASCII: 21.6 us a simulated page against 46.5 us by ``re``, a
    simulated page's redaction 48.8 us against 62.4 with ``str.isascii`` in its place
    (`python bench/bench_runtime.py --micro`); too little to tell at crawl level."""
    if text.isascii():
        return True
    leads = text.encode("utf-8", "surrogatepass").translate(None, _ASCII_AND_CONTINUATIONS)
    return not leads.translate(None, _digit_free_leads())


@cache
def _digit_free_leads() -> bytes:
    """The lead bytes of 2- and 3-byte UTF-8 sequences none of which encodes a decimal digit,
    from this Python's Unicode data (4-byte leads are never listed: astral digits abound)."""
    free = bytearray()
    for lead in range(0xC2, 0xF0):
        if lead < 0xE0:
            low, size = (lead & 0x1F) << 6, 1 << 6
        else:
            low, size = (lead & 0x0F) << 12, 1 << 12
        if not any(chr(code).isdecimal() for code in range(low, low + size)):
            free.append(lead)
    return bytes(free)


def _spelled(pattern: str, spellings: dict[str, tuple[str, str]]) -> str:
    """``pattern`` with each escape in ``spellings`` replaced by its spelling outside a
    character class or inside one."""
    out: list[str] = []
    at, in_class = 0, False
    while at < len(pattern):
        char = pattern[at]
        if char == "\\":
            escape = pattern[at : at + 2]
            if escape in _UNSUPPORTED:
                raise ValueError(f"no ASCII spelling of {escape!r} in {pattern!r}")
            spelling = spellings.get(escape)
            out.append(escape if spelling is None else spelling[in_class])
            at += 2
            continue
        if char == "[" and not in_class:
            in_class = True
            out.append(char)
            at += 1
            # A "]" right after "[" or "[^" is a literal, not the end of the class.
            for literal in ("^", "]"):
                if pattern[at : at + 1] == literal:
                    out.append(literal)
                    at += 1
            continue
        if char == "]" and in_class:
            in_class = False
        out.append(char)
        at += 1
    return "".join(out)
