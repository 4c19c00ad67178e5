"""Patterns spelled in ASCII for RE2: the same matches on the texts they are made for."""

from __future__ import annotations

import re
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from courtier.frontier.fingerprint import _VOLATILE
from courtier.runtime.ascii_regex import _spelled, ascii_spelled, digits_all_ascii
from courtier.sinks.redact import _CANDIDATE

NON_ASCII_DIGITS = [chr(c) for c in range(0x80, sys.maxunicode + 1) if chr(c).isdecimal()]


def spans(pattern: re.Pattern[str], text: str) -> list[tuple[int, int]]:
    return [m.span() for m in pattern.finditer(text)]


def ascii_twin(pattern: str) -> re.Pattern[str]:
    """``pattern`` as an engine with ASCII classes reads its ``ascii_spelled`` form."""
    return re.compile(ascii_spelled(pattern), re.ASCII)


@pytest.mark.parametrize(
    ("pattern", "spelled"),
    [
        (r"\d+", "[0-9]+"),
        (r"[+(\d][\d .]", "[+(0-9][0-9 .]"),
        (r"[]\d]", "[]0-9]"),  # a "]" first in a class is a literal
        (r"[^]\d]x\d", "[^]0-9]x[0-9]"),
        (r"\\d", r"\\d"),  # an escaped backslash, then a letter
        (r"[\]\d]", r"[\]0-9]"),
        (r"\b\w\d", r"\b\w[0-9]"),
    ],
)
def test_digits_are_spelled_inside_and_outside_classes(pattern: str, spelled: str) -> None:
    assert _spelled(pattern, {"\\d": ("[0-9]", "0-9")}) == spelled
    re.compile(spelled)


def test_what_cannot_be_spelled_is_refused() -> None:
    with pytest.raises(ValueError, match="no ASCII spelling"):
        ascii_spelled(r"[\D]")
    with pytest.raises(ValueError, match="no ASCII spelling"):
        ascii_spelled(r"\S+")


def test_unicode_and_ascii_spaces_agree_in_the_twin() -> None:
    twin = ascii_twin(r"a\sb")
    for code in range(128):
        text = f"a{chr(code)}b"
        assert bool(re.fullmatch(r"a\sb", text)) == bool(twin.fullmatch(text)), hex(code)


def test_every_non_ascii_digit_is_noticed() -> None:
    assert len(NON_ASCII_DIGITS) > 600
    for digit in NON_ASCII_DIGITS:
        assert not digits_all_ascii(f"call 555 {digit}"), hex(ord(digit))


@pytest.mark.parametrize(
    "text",
    [
        "plain ascii 0123456789",
        "caf\u00e9 \u00b2 \u00b9 \u00bd",  # Latin-1 (superscripts are digits to isdigit, not \d)
        "\u201cquoted\u201d \u2014 \u20ac5 \u2026",
        "\u041c\u043e\u0441\u043a\u0432\u0430 \u03b1\u03b2\u03b3 \u05e9\u05dc\u05d5\u05dd",
        "\u6771\u4eac \u3042 \ud55c",
    ],
)
def test_texts_without_non_ascii_digits_pass(text: str) -> None:
    assert digits_all_ascii(text)


def test_astral_characters_are_taken_cautiously() -> None:
    assert not digits_all_ascii("smile \U0001f600")  # an emoji shares a lead byte with digits
    assert not digits_all_ascii("\U0001d7ce")  # a mathematical bold zero


_DIGITS_ELSEWHERE = "\u0663\uff11\u0967"
_TEXT = st.text(
    alphabet=st.sampled_from(
        "0123456789+()-./ :,ampdecjanmonsutgz\u00a0\u202f\x1c\x1d\x1f\t\n_x\u00e9\u201c"
        + _DIGITS_ELSEWHERE
    ),
    max_size=80,
)


@settings(max_examples=400, deadline=None)
@given(_TEXT)
def test_the_ascii_candidate_pattern_finds_what_the_pattern_finds(text: str) -> None:
    """Where ``digits_all_ascii`` lets RE2 look for phone candidates, ``\\d`` spelled ``0-9``
    finds what it finds."""
    if not digits_all_ascii(text):
        assert any(c in text for c in _DIGITS_ELSEWHERE)
        return
    twin = re.compile(ascii_spelled(_CANDIDATE))
    assert spans(twin, text) == spans(re.compile(_CANDIDATE), text)


@settings(max_examples=400, deadline=None)
@given(_TEXT)
def test_volatile_twin_finds_what_the_pattern_finds(text: str) -> None:
    text = text.lower()
    if text.isascii():
        assert spans(ascii_twin(_VOLATILE.pattern), text) == spans(
            re.compile(_VOLATILE.pattern), text
        )


@pytest.mark.parametrize(
    "text",
    [
        "updated 18:05 gmt, 30 november 2026; 5 minutes ago\x1cago 2026-11-30t06:08:25z",
        "mon, 30 nov 12:00\x1d pm cet 1,234,567 just now an\x1fhour ago",
        "tel +44 20 7946 0958 or (555) 123-4567 on 30/11/2026",
    ],
)
def test_twins_agree_on_crafted_text(text: str) -> None:
    assert spans(ascii_twin(_VOLATILE.pattern), text) == spans(re.compile(_VOLATILE.pattern), text)
    candidates = re.compile(ascii_spelled(_CANDIDATE))
    assert spans(candidates, text) == spans(re.compile(_CANDIDATE), text)
