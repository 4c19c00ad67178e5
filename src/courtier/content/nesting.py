"""The nesting pre-scan: how deep a page nests, estimated from its bytes before parsing.

lexbor, like the HTML standard's algorithm, looks through the stack of open elements for most
block start tags, so a page nested ``d`` deep costs ``O(nodes * d)`` to parse (100,000 nested
``<div>`` took two minutes). ``nesting_cut`` finds, in linear time, where a page first nests
deeper than ``MAX_DEPTH``; ``parse.parse_page`` parses only up to there.
"""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt

MAX_DEPTH: Final = 512
"""Element nesting past which a page is cut before parsing (browsers stop nesting at about
512 too)."""


# -- the nesting pre-scan -------------------------------------------------------------------
#
# Tags are counted, not parsed: every ``<name`` opens one level and every ``</name`` closes one
# (a closer with nothing open is ignored), except
# - elements that do not nest, or not at a cost: void elements (``br``, ``img``...), those
#   whose start tag closes an open one of their kind (``p``, ``li``, ``td``, ``tr``, ``option``,
#   ``a``, ``h1``...), and tables (lexbor's scope checks stop at a table cell, so deep tables
#   parse in linear time); for these both tags are ignored, so the estimate errs low, not high,
#   on sloppy markup;
# - comments, raw text elements (``script``, ``style``, ``textarea``, ``title``...: a minified
#   script's ``i<n`` is no tag) and ``svg`` and ``math`` elements, with everything inside them
#   (there ``<path/>`` closes itself, which HTML's ``<div/>`` does not);
# - a ``<`` inside another tag, in an attribute value (``onclick="if (i<n) ..."``).
# Everything is computed with numpy over the positions of ``<`` and ``>``, in blocks of a
# megabyte, with no Python loop over the tags: about 0.7 ms for a 100 KB page (lexbor's parse
# of it takes 2 ms), 35 ms for 20 MB of nested tags.

_NEVER_NESTING: Final = (
    "area", "base", "basefont", "bgsound", "br", "col", "embed", "frame", "hr", "image", "img",
    "input", "keygen", "link", "meta", "param", "source", "track", "wbr",  # void
    "p", "li", "dt", "dd", "option", "optgroup", "tr", "td", "th", "thead", "tbody", "tfoot",
    "colgroup", "caption", "rb", "rt", "rp", "rtc", "a", "nobr", "button", "form", "select",
    "h1", "h2", "h3", "h4", "h5", "h6",  # a start tag closes an open one of its kind
    "table",  # nests only inside a cell, and lexbor's scope checks stop at cells: no cost
    "html", "head", "body", "frameset",  # one each
)  # fmt: skip
_OPAQUE: Final = (
    "script", "style", "textarea", "title", "xmp", "noembed", "noframes", "iframe", "svg", "math",
)  # fmt: skip
_KEY_BYTES: Final = 8  # every name above fits in 8 bytes: one uint64 key per tag name
_BLOCK: Final = 1 << 20  # bytes scanned per numpy pass (bounds the scratch memory)
_LOWER: Final = np.uint64(0x2020202020202020)  # OR-ed into 8 bytes: lower-cases the letters
_LOW_BYTES: Final = np.array(
    [(1 << 64) - 1] + [(1 << (8 * length)) - 1 for length in range(1, _KEY_BYTES)],
    dtype=np.uint64,
)
"""Mask of a name's bytes by its length; a name of 8 bytes or more has "length" 0."""
# Bytes that end a tag name (whitespace, "/", ">"), as seen after OR-ing 0x20 into a byte.
_ENDS_NAME: Final = np.zeros(256, dtype=np.bool_)
_ENDS_NAME[[0x20 | b for b in b" \t\n\r\f/>"]] = True


def _key(name: str) -> int:
    return int.from_bytes(name.encode("ascii").ljust(_KEY_BYTES, b"\0"), "little")


def _special_table() -> tuple[np.uint64, npt.NDArray[np.uint64], npt.NDArray[np.bool_]]:
    """A collision-free multiplicative hash of the special names' keys into 4096 slots."""
    names = [(_key(n), False) for n in _NEVER_NESTING] + [(_key(n), True) for n in _OPAQUE]
    for multiplier in range(0x9E3779B97F4A7C15, 1 << 64, 0x2000000000000002):
        slots = {((key * multiplier) & ((1 << 64) - 1)) >> 52 for key, _ in names}
        if len(slots) == len(names):
            break
    else:  # pragma: no cover - the first multiplier already works
        raise AssertionError("no collision-free multiplier")
    keys = np.zeros(4096, dtype=np.uint64)  # 0 is no tag's key: a tag starts with a letter
    opaque = np.zeros(4096, dtype=np.bool_)
    for key, is_opaque in names:
        slot = ((key * multiplier) & ((1 << 64) - 1)) >> 52
        keys[slot], opaque[slot] = key, is_opaque
    return np.uint64(multiplier), keys, opaque


_HASH, _SPECIAL_KEYS, _SPECIAL_OPAQUE = _special_table()
_OPAQUE_NAMES: Final = {_key(n): n.encode() for n in _OPAQUE}


def nesting_cut(body: bytes, max_depth: int = MAX_DEPTH) -> int | None:
    """The offset of the tag at which ``body``'s estimated element nesting first goes past
    ``max_depth``, or None if it never does. Linear in ``len(body)``."""
    if len(body) <= 2 * max_depth or body.count(b"<") <= max_depth:
        return None  # each level takes a "<" (counting them: 2.5 us a 6 KB page, numpy's 15)
    scan = _NestingScan(body)
    for start in range(0, len(body), _BLOCK):
        cut = scan.block(start, min(start + _BLOCK, len(body)), max_depth)
        if cut is not None:
            return cut
    return None


class _NestingScan:
    """The scan of one body, block by block, and the state carried between blocks."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        # Padded, so that reading a few bytes past any ``<`` stays inside the array; ``words``
        # is the (unaligned, overlapping) 8-byte word starting at each offset.
        self.bytes = np.frombuffer(body + b"\0" * (2 * _KEY_BYTES), dtype=np.uint8)
        self.words = np.ndarray(
            shape=(len(body) + _KEY_BYTES,), dtype="<u8", buffer=self.bytes, strides=(1,)
        )
        self.skip_until = 0  # end of the comment or opaque element being skipped
        self.depth = 0  # nesting at the end of the previous block

    def block(self, start: int, stop: int, max_depth: int) -> int | None:
        data = self.bytes
        block = data[start:stop]
        marks = np.flatnonzero((block | 2) == 0x3E) + start  # "<" (0x3C) and ">" (0x3E)
        is_lt = data[marks] == 0x3C
        lt = marks[is_lt]
        if self.depth + lt.size <= max_depth and stop == len(self.body):
            return None  # the last block, with too few tags left to go past max_depth
        if lt.size == 0:
            return None
        adjacent = is_lt.copy()  # no ">" between this "<" and the one before
        adjacent[1:] &= is_lt[:-1]
        adjacent[0] = False
        adjacent = adjacent[is_lt]
        after = data[lt + 1]
        closing = after == 0x2F  # "</"
        words = self.words[lt + 1 + closing] | _LOWER  # the name's first 8 bytes, lower-cased
        name_bytes = words.view(np.uint8).reshape(-1, _KEY_BYTES)
        letter = (name_bytes >= 0x61) & (name_bytes <= 0x7A)
        # A "<" after a tag's "<" with no ">" between is inside that tag, in an attribute value
        # such as onclick="if (i<n) ...": not a tag. (A "< " is text, it opens no tag.)
        adjacent[1:] &= letter[:-1, 0] | closing[:-1] | (after[:-1] == 0x21)
        tag = letter[:, 0] & ~adjacent
        length = np.argmin(letter | ((name_bytes >= 0x30) & (name_bytes <= 0x39)), axis=1)
        # Exact names: whitespace, "/" or ">" after them (not checked after 8 bytes).
        ended = _ENDS_NAME[(words >> (length.astype(np.uint64) << np.uint64(3))).astype(np.uint8)]
        keys = words & _LOW_BYTES[length]
        slot = (keys * _HASH) >> np.uint64(52)
        special = tag & (ended | (length == 0)) & (_SPECIAL_KEYS[slot] == keys)
        counted = tag & ~special
        opaque = special & _SPECIAL_OPAQUE[slot]
        openers = np.flatnonzero(opaque & ~closing)
        bang = np.flatnonzero(after == 0x21)  # "<!"
        bang = bang[(data[lt[bang] + 2] == 0x2D) & (data[lt[bang] + 3] == 0x2D)]  # "<!--"
        if bang.size or openers.size or self.skip_until > start:
            closers = np.flatnonzero(opaque & closing)
            counted &= ~self._hidden(lt, openers, closers, slot, keys, bang)
        step = counted.view(np.int8) - ((counted & closing).view(np.int8) << 1)  # +1, -1, 0
        # Nesting with closers that close nothing ignored: the running sum, floored at zero.
        total = np.cumsum(step, dtype=np.int64)
        total += self.depth
        depth = total - np.minimum(np.minimum.accumulate(total), 0)
        over = np.flatnonzero(depth > max_depth)
        if over.size:
            return int(lt[over[0]])
        self.depth = int(depth[-1])
        return None

    def _hidden(
        self,
        lt: npt.NDArray[np.intp],
        openers: npt.NDArray[np.intp],
        closers: npt.NDArray[np.intp],
        slot: npt.NDArray[np.uint64],
        keys: npt.NDArray[np.uint64],
        comments: npt.NDArray[np.intp],
    ) -> npt.NDArray[np.bool_]:
        """Which ``<`` are inside a comment or an opaque element.

        A range that starts inside an earlier one still counts, so ``<!-- <svg> -->`` hides
        up to the next ``</svg``: that errs low, and keeps it all vectorised."""
        # Each opener's end tag: the first closer of its name after it, found for all at once
        # by sorting the closers by (name, position).
        codes = np.sort((slot[closers].astype(np.int64) << 32) | closers)
        wanted = (slot[openers].astype(np.int64) << 32) | openers
        end_at = np.full(openers.size, -1, dtype=np.intp)
        if codes.size:
            after = np.searchsorted(codes, wanted)  # the first closer after it, by name
            found = codes[np.minimum(after, codes.size - 1)]
            # None of its name after it (only before): its end tag is in a later block.
            matched = (after < codes.size) & ((found >> 32) == (wanted >> 32))
            end_at[matched] = lt[found[matched] & 0xFFFFFFFF]
        starts = [lt[openers], lt[comments]]
        ends = [end_at, np.zeros(comments.size, dtype=np.intp)]
        if self.skip_until > int(lt[0]):
            starts.append(np.array([-1]))
            ends.append(np.array([self.skip_until]))
        for index in np.flatnonzero(end_at < 0).tolist():  # no end tag in this block
            at = int(starts[0][index])
            end_at[index] = self._end_tag(at, _OPAQUE_NAMES[int(keys[openers[index]])])
        for index, at in enumerate(starts[1].tolist()):  # a few per page
            ends[1][index] = self.body.find(b"-->", at + 2)  # "<!-->" is a whole comment
        first, last = np.concatenate(starts), np.concatenate(ends)
        if not first.size:  # only a range carried over, ended before this block's first "<"
            return np.zeros(lt.size, dtype=np.bool_)
        last[last < 0] = len(self.body)
        order = np.argsort(first, kind="stable")
        first, reach = first[order], np.maximum.accumulate(last[order])
        self.skip_until = max(self.skip_until, int(reach[-1]))
        # A ``<`` strictly after a start, and before the furthest end of the ranges so far.
        before = np.searchsorted(first, lt) - 1
        hidden: npt.NDArray[np.bool_] = (before >= 0) & (reach[np.maximum(before, 0)] > lt)
        return hidden

    def _end_tag(self, at: int, name: bytes) -> int:
        """Where the end tag of the element opened at ``at`` starts (-1: none). ``</script``,
        ``</SCRIPT``, ``</Script``; not ``</sCRIPT`` (hides too much: errs low)."""
        body = self.body
        found = body.find(b"</" + name, at + 1)
        bound = len(body) if found < 0 else found
        needle = b"</" + name[:1].upper()
        end = body.find(needle, at + 1, bound)
        while end >= 0:
            if body[end + 2 : end + 2 + len(name)].lower() == name:
                return end
            end = body.find(needle, end + 3, bound)
        return found
