"""Content fingerprints that change when the content changes, and only then.

A page's fingerprint is the MD5 of its *content text*: what is left after removing everything
that changes on every fetch without the page's meaning changing. Rules, in order:

1. Drop whole elements that are never content: ``script``, ``style``, ``noscript``,
   ``template``, ``iframe``, ``svg``, ``canvas``, ``nav``, ``header``, ``footer``, ``aside``,
   ``form``, ``button``, ``select``, ``time``; elements whose ARIA role says navigation, banner,
   footer or sidebar; and ad or consent slots (``[data-ad-slot]``, ``[data-ad]``, an id
   or class with a token such as ``ad``, ``ads``, ``advert``, ``sponsored``, ``banner``,
   ``cookie``). The document's own ``html``, ``head`` and ``body`` elements are never dropped
   (a ``<body class="cookies-not-set">`` or ``<html hidden>`` says nothing about content).
2. Keep only text: comments, tags and every attribute vanish with the markup, so rotating
   ad ids, cache-busting query strings and CSRF tokens in attributes cannot matter.
3. Erase volatile tokens in the text: dates and times in the usual written forms, relative
   times ("5 minutes ago"), and long digit runs (Unix timestamps, view counters of 6+ digits).
4. Drop tokens left with no letter or digit (the punctuation around an erased date) and
   collapse whitespace; the title and the body text are joined and hashed with MD5.

Non-HTML bodies: text is normalised by rules 3 and 4; anything else is hashed as bytes.
An unparseable page never raises: it is hashed as bytes. MD5 is fine here: a fingerprint
detects change, it does not defend against anyone.

Cost: linear in the page. The dropped elements are removed in reverse document order (a node's
descendants before the node itself), so no node is touched after an ancestor was removed and
no ancestor chain is walked. ``tree_fingerprint`` works on a tree the caller already parsed
(``courtier.content.parse`` parses each page once, for links and fingerprint); it removes the
dropped elements from that tree, so call it last. Nesting depth is the caller's business:
lexbor's tree building is quadratic in it, and ``parse_page`` caps it before parsing.
"""

from __future__ import annotations

import codecs
import hashlib
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Final

import re2
from selectolax.lexbor import LexborHTMLParser, LexborNode

from courtier.runtime.ascii_regex import ascii_spelled

_DROPPED_TAGS: Final = (
    *("script", "style", "noscript", "template", "iframe", "object", "embed", "svg", "canvas"),
    *("nav", "header", "footer", "aside", "form", "button", "select", "time"),
)
_DROPPED_ROLES: Final = frozenset(
    {"navigation", "banner", "contentinfo", "complementary", "search", "dialog"}
)
_AD_ATTRIBUTES: Final = ("data-ad-slot", "data-ad", "data-ad-unit", "data-google-query-id")
_MARKED: Final = ", ".join(
    f"[{name}]" for name in ("role", "aria-hidden", "hidden", *_AD_ATTRIBUTES, "class", "id")
)
"""Elements with an attribute rule 1 reads: the dropped ones are among them."""
_RULE_ATTRIBUTES: Final = frozenset({"role", "aria-hidden", "hidden", *_AD_ATTRIBUTES})
"""The attributes rule 1 reads but ``class`` and ``id`` (most marked elements have none)."""
_STRUCTURE: Final = frozenset({"html", "head", "body"})
"""Never dropped: the document itself (removing the root is not even allowed)."""
_AD_TOKENS: Final = frozenset(
    [
        "ad",
        "ads",
        "adsbygoogle",
        "adv",
        "advert",
        "adverts",
        "advertisement",
        "adslot",
        "adunit",
        "sponsor",
        "sponsored",
        "promo",
        "banner",
        "cookie",
        "cookies",
        "consent",
        "gdpr",
        "newsletter",
        "share",
        "social",
        "related",
        "breadcrumb",
        "breadcrumbs",
        "sidebar",
        "menu",
        "navbar",
        "pagination",
    ]
)
_TOKEN_SPLIT: Final = re.compile(r"[\s_]+|(?<=[a-z])-(?=[a-z])")

_MONTHS: Final = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_WEEKDAY_NAMES: Final = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
_WEEKDAY_SHORT: Final = r"(?:mon|tue|wed|thu|fri|sat|sun)"
# Full names anywhere; three-letter forms only before a comma ("Mon, 30 Nov"): "sun", "sat"
# and "wed" are words too.
_WEEKDAYS: Final = rf"(?:{_WEEKDAY_NAMES}|{_WEEKDAY_SHORT}(?=,))"
_ZONES: Final = r"(?:utc|gmt|z|cet|cest|bst|est|edt|cst|cdt|mst|mdt|pst|pdt|ist|jst|aest)"
# Every alternative starts at a word boundary with a digit or one of these letters, then one of
# these prefixes (a month, a weekday, "a "/"an "/"one " before a time unit, "just now").
# Checking that first (a cheap guard, exact: it only rejects positions where no alternative can
# match) lets the engine skip most positions without trying each alternative: on a 100 KB
# page 3.4 times faster than no guard (1.6 times faster than the first letter alone), the
# same matches.
_VOLATILE_START: Final = (
    r"\b(?=[\dadfjmnostw])"
    r"(?=\d|a(?:pr|ug|n?\s)|dec|f(?:eb|ri)|j(?:an|u[nl]|ust\s)|m(?:a[ry]|on)|nov|o(?:ct|ne\s)"
    r"|s(?:ep|at|un)|t(?:ue|hu)|wed)"
)


def _volatile_alternatives(weekdays: str) -> str:
    return "|".join(
        [
            # 2026-11-30, 2026-11-30T06:08:25.123+00:00, 2026/11/30
            r"\b\d{4}[-/.]\d{1,2}[-/.]\d{1,2}(?:[t ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?"
            r"(?:z|[+-]\d{2}:?\d{2})?)?\b",
            # 30/11/2026, 11-30-26
            r"\b\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}\b",
            # 30 November 2026, November 30, 2026, Nov 30
            rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTHS}(?:,?\s+\d{{4}})?",
            rf"\b{_MONTHS}\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?\b",
            weekdays,
            # 06:08, 6:08:25 pm, 18h05
            rf"\b\d{{1,2}}:\d{{2}}(?::\d{{2}})?(?:\s*[ap]\.?m\.?)?(?:\s*{_ZONES})?\b",
            # 5 minutes ago, an hour ago, just now
            r"\b(?:\d+|an?|one|a few)\s+(?:second|sec|minute|min|hour|hr|day|week|month|year)s?"
            r"\s+ago\b",
            r"\bjust now\b",
            # Unix timestamps, counters: runs of six digits or more (with separators)
            r"\b\d{1,3}(?:[,.\u202f ]\d{3}){2,}\b|\b\d{6,}\b",
        ]
    )


_VOLATILE: Final = re.compile(
    _VOLATILE_START + "(?:" + _volatile_alternatives(r"\b" + _WEEKDAYS + r"\b") + ")",
    re.IGNORECASE,
)
"""The volatile tokens (rule 3), in any case: what ``erase_volatile`` erases."""

# -- erasing them fast ----------------------------------------------------------------------
#
# ``re`` tries the pattern at every position of the text (about 18 ns a character even with
# the guard above); RE2's automaton scans the text once: on simulated 6 KB pages erasing takes
# a fifth of the time, on a 100 KB page under half
# (`python bench/bench_parse.py --stages --page-bytes 100000`). RE2 is
# not ``re``, so it runs on a *stand-in* of the lower-cased text in which every character
# plays the role it plays for ``_VOLATILE``, spelled in ASCII, where RE2's ``\b`` is ``re``'s
# (ASCII word characters) and the pattern spells ``\d`` and ``\s`` as the characters ``re``
# matches with them:
# - ASCII characters stand for themselves; a non-ASCII decimal digit (``\d`` in ``re``) for
#   "0"; another word character for "x" (a letter no alternative holds); a space for
#   "\x1c" (``re``'s ``\s`` holds the separators 0x1c-0x1f), U+202F (a thousands separator
#   too) for "\x1d"; anything else for "#";
# - the pattern spells U+202F as "\x1d" and has no look-ahead (RE2 has none): a short
#   weekday takes its comma, which the erasure gives back (no other alternative can end in
#   one). With no guard it finds the same matches: the guard only skips positions where
#   nothing matches.
# Text holding a real "\x1d" (which would pass for U+202F) goes to ``re``, as does text whose
# lower-casing changes its length or holds "ı" or "ſ" (see ``erase_volatile``).

_NARROW_SPACE_STAND_IN: Final = "\x1d"


def _stand_in_pattern() -> str:
    weekdays = rf"\b(?:{_WEEKDAY_NAMES}\b|{_WEEKDAY_SHORT},)"
    pattern = ascii_spelled(f"(?:{_volatile_alternatives(weekdays)})")
    assert pattern.count(r"\u202f") == 1
    return pattern.replace(r"\u202f", r"\x1d")


def _compile_stand_in_pattern() -> re2._Regexp[bytes]:
    options = re2.Options()
    options.max_mem = 32 << 20  # room for the DFA: out of it, RE2 falls back to a slower NFA
    return re2.compile(_stand_in_pattern(), options)


_VOLATILE_STAND_IN: Final = _compile_stand_in_pattern()
_VOLATILE_LOWER: Final = re.compile(_VOLATILE.pattern)
"""``_VOLATILE`` for lower-cased text (see ``erase_volatile``), for ``re``."""


class _StandIns(dict[int, str]):
    """Code point -> its stand-in (see above), filled as characters are met."""

    def __missing__(self, code: int) -> str:
        char = chr(code)
        if char.isdecimal():
            stand_in = "0"
        elif char.isalnum() or char == "_":
            stand_in = "x"
        elif char == "\u202f":
            stand_in = _NARROW_SPACE_STAND_IN
        elif char.isspace():
            stand_in = "\x1c"
        else:
            stand_in = "#"
        if len(self) < _STAND_IN_CACHE:
            self[code] = stand_in
        return stand_in


_STAND_IN_CACHE: Final = 65_536
_stand_ins: Final = _StandIns()


def _stand_in_error(error: UnicodeError) -> tuple[str, int]:
    assert isinstance(error, UnicodeEncodeError)
    return error.object[error.start : error.end].translate(_stand_ins), error.end


codecs.register_error("courtier-stand-in", _stand_in_error)
_FOLDS_TO_ASCII: Final = ("\u0131", "\u017f")
_LOWER_CASED_UNLIKE_STAND_IN: Final = ("\u0130", "\u212a", *_FOLDS_TO_ASCII, _NARROW_SPACE_STAND_IN)
"""Characters whose stand-in, lower-cased, is not the stand-in of their lower case ("İ"
lower-cases to two characters, the Kelvin sign to "k"), and those ``erase_volatile`` hands
to ``re`` whatever the engine."""
_ASCII_PUNCTUATION_WORD: Final = re.compile(r" [\x00-\x08\x0e-\x1b!-/:-@\[-`{-\x7f]+(?= )")
"""A word of ASCII text with no isalnum() character, between single spaces: any ASCII
character but a letter, a digit or one ``str.split`` splits on (tab to carriage return,
the four separators 0x1c-0x1f, space)."""
_PUNCTUATION_WORD: Final = re.compile(r" (?:[^\w ]|_)+(?= )")
"""The same for any text: characters neither isalnum() nor a space (``str.split`` has
removed every other separator from between the single spaces)."""
_HTML_TYPES: Final = frozenset({"text/html", "application/xhtml+xml"})


def content_fingerprint(body: bytes, media_type: str | None) -> str:
    """The fingerprint of a fetched body, chosen by its media type (parameters ignored)."""
    kind = (media_type or "").split(";", 1)[0].strip().lower()
    if kind in _HTML_TYPES:
        return html_fingerprint(body)
    if kind.startswith("text/"):
        return _md5(normalise_text(body.decode("utf-8", errors="replace")))
    return hashlib.md5(body, usedforsecurity=False).hexdigest()


def html_fingerprint(html: str | bytes) -> str:
    """The MD5 hex digest of an HTML page's content text (see the module rules)."""
    text = html_content_text(html)
    if text is None:
        return unparsed_fingerprint(html)
    return _md5(text)


def tree_fingerprint(tree: LexborHTMLParser) -> str:
    """``html_fingerprint`` of the page ``tree`` was parsed from, without parsing it again.

    Removes the dropped elements from ``tree``: read anything else from it first."""
    return _md5(tree_content_text(tree))


def unparsed_fingerprint(html: str | bytes) -> str:
    """The fingerprint of a page the parser refused: the MD5 of its bytes."""
    raw = html.encode("utf-8", errors="replace") if isinstance(html, str) else html
    return hashlib.md5(raw, usedforsecurity=False).hexdigest()


def html_content_text(html: str | bytes) -> str | None:
    """The normalised text a fingerprint hashes, or None if the page cannot be parsed."""
    try:
        tree = LexborHTMLParser(html)
    except (ValueError, TypeError):  # selectolax raises on undecodable or absurd input
        return None
    return tree_content_text(tree)


def tree_content_text(tree: LexborHTMLParser) -> str:
    """The normalised content text of a parsed page; removes the dropped elements from ``tree``."""
    # A pass per dropped tag, then one for the attributes, each removing in reverse document
    # order; each query runs on what the passes before it left, so it never returns a node
    # inside a removed subtree. Looking elements up by name and matching attribute values
    # here, not by a selector of every rule: a CSS query costs lexbor a match of each of its
    # selectors against each element, and this one (26 of them, then ids and classes) took
    # 57 of a 6 KB page's 106 us in the fingerprint against ~35 now
    # (`python bench/bench_parse.py --stages`).
    for name in _DROPPED_TAGS:
        _remove(tree.tags(name))
    _remove([n for n in tree.css(_MARKED) if n.tag not in _STRUCTURE and _is_dropped(n)])
    titles = tree.tags("title")
    parts = [titles[0].text() if titles else ""]
    if tree.body is not None:
        parts.append(tree.body.text(separator=" "))
    return normalise_text(" ".join(parts))


def normalise_text(text: str) -> str:
    """Erase volatile tokens, then the punctuation they leave stranded, and collapse spaces."""
    # "Updated 18:05 GMT." and "Updated 5 minutes ago" must agree: drop bare punctuation,
    # i.e. every word without an isalnum() character ([^\W_] is exactly one). One regex pass
    # over the words joined by single spaces (split and join are the fastest way there: one
    # pass of a look-around regex over the text took twice as long, re.sub(r"\s+") three
    # times): 77 -> 58 us an ASCII page, and against a test of each word, 181 -> 136 us for
    # 5.8 KB of Cyrillic text.
    erased = erase_volatile(text)
    words = f" {' '.join(erased.split())} "
    if erased.isascii():
        return _ASCII_PUNCTUATION_WORD.sub("", words)[1:-1]
    return _PUNCTUATION_WORD.sub("", words)[1:-1]


def erase_volatile(text: str) -> str:
    """``text`` with every volatile token (rule 3) replaced by a space."""
    if any(c in text for c in _LOWER_CASED_UNLIKE_STAND_IN):
        return _erase_special_cases(text)
    if text.isascii():
        stand_in = text.lower().encode("ascii")
    elif (len(text.encode("utf-8", "surrogatepass")) - len(text)) * _RE2_SHARE > len(text):
        return _erased(text, [match.span() for match in _VOLATILE_LOWER.finditer(text.lower())])
    else:
        # Most non-ASCII text holds a few such characters (a "©", a "’"), which make all of
        # it a string of wider characters that lower() walks one by one. The stand-in of the
        # text, lower-cased as bytes, is that of the lower-cased text (a test checks every
        # character): erasing takes half the time (6 KB 31-34 -> 18-21 us, 100 KB 614 -> 324).
        stand_in = text.encode("ascii", "courtier-stand-in").lower()
    return _erased(text, _stand_in_spans(stand_in))


def _erase_special_cases(text: str) -> str:
    """``erase_volatile`` of text holding one of ``_LOWER_CASED_UNLIKE_STAND_IN``."""
    lowered = text.lower()
    if (
        len(lowered) != len(text)
        or any(c in text for c in _FOLDS_TO_ASCII)
        or _NARROW_SPACE_STAND_IN in text
    ):
        return _VOLATILE.sub(" ", text)
    if lowered.isascii():
        spans = _stand_in_spans(lowered.encode("ascii"))
    elif (len(lowered.encode("utf-8", "surrogatepass")) - len(lowered)) * _RE2_SHARE > len(text):
        spans = [match.span() for match in _VOLATILE_LOWER.finditer(lowered)]
    else:
        spans = _stand_in_spans(lowered.encode("ascii", "courtier-stand-in"))
    return _erased(text, spans)


def _erased(text: str, spans: list[tuple[int, int]]) -> str:
    parts: list[str] = []
    done = 0
    for start, end in spans:
        parts += (text[done:start], " ")
        done = end
    parts.append(text[done:])
    return "".join(parts)


_RE2_SHARE: Final = 32
"""Text with non-ASCII characters in more than 1/32 of its UTF-8 bytes goes to ``re``: each
run of them costs a call of the stand-in error handler (~0.7 us), ``re`` ~40 ns a character
(a Cyrillic page's text: 4.2 ms against 0.8 ms)."""
_COMMA: Final = ord(",")


def _stand_in_spans(stand_in: bytes) -> list[tuple[int, int]]:
    """Where ``_VOLATILE`` matches in the text ``stand_in`` stands in for."""
    spans = []
    for match in _VOLATILE_STAND_IN.finditer(stand_in):
        start, end = match.span()
        if stand_in[end - 1] == _COMMA:  # a short weekday took its comma
            end -= 1
        spans.append((start, end))
    return spans


def _remove(nodes: Sequence[LexborNode]) -> None:
    """Remove ``nodes`` (in document order, as ``css`` returns them) with their subtrees.

    Last first: a node's descendants come after it in document order, so they are removed
    before it and nothing is touched after an ancestor was removed (some selectolax versions
    free a removed subtree; touching a node in it would read freed memory). No ancestor walks:
    linear in the nodes removed, however deep they are nested."""
    for node in reversed(nodes):
        node.decompose()


def _is_dropped(node: LexborNode) -> bool:
    """Does an attribute of ``node`` drop it (rule 1; values compared as CSS compares them:
    exactly, case and all)?"""
    attributes = node.attributes
    if not _RULE_ATTRIBUTES.isdisjoint(attributes) and (
        attributes.get("role") in _DROPPED_ROLES
        or attributes.get("aria-hidden") == "true"
        or "hidden" in attributes
        or any(name in attributes for name in _AD_ATTRIBUTES)
    ):
        return True
    return _is_ad_slot(attributes.get("class"), attributes.get("id"))


def _is_ad_slot(classes: str | None, element_id: str | None) -> bool:
    for value in (classes, element_id):
        if value and (
            _has_ad_token(value) if len(value) <= _CACHED_VALUE_CHARS else _ad_token_in(value)
        ):
            return True
    return False


def _ad_token_in(value: str) -> bool:
    return any(t in _AD_TOKENS for t in _TOKEN_SPLIT.split(value.lower()))


# Class and id values repeat (every card of a grid, every page of a site): decide each once.
_CACHED_VALUE_CHARS: Final = 200
_has_ad_token: Final = lru_cache(maxsize=8192)(_ad_token_in)


def _md5(text: str) -> str:
    return hashlib.md5(text.encode("utf-8"), usedforsecurity=False).hexdigest()
