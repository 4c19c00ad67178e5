"""Pages that copy an earlier page of the run: exactly (the same main text) or nearly (their
SimHashes within ``near_distance`` bits), and pages that name another URL canonical.

Rules:
- The earlier URL is the original: a URL is indexed at its first sighting in the run, and a
  page is compared only with URLs first seen before it (a refresh of the original never
  becomes a copy of its copy).
- Exact first: an equal text digest (``text.PageText.digest``) is a duplicate, whatever the
  length; near-duplicates are looked for only in texts of ``MIN_NEAR_WORDS`` words or more
  (the SimHashes of a few words are too close by chance).
- Near-duplicates are found with the pigeonhole rule of Manku et al. (WWW 2007): two 64-bit
  SimHashes within ``d`` bits agree exactly on at least one of ``d + 1`` blocks, so each block
  is a table and only the texts sharing a block value are compared.
- The index is in memory, for one run, and bounded: past ``remember`` texts the oldest is
  forgotten (a resumed crawl starts empty; documents already written keep what they said).
- ``duplicate_fields``: a page whose declared canonical is another URL is that URL's
  duplicate (``duplicate: "canonical"``), whatever its text.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, Final

from courtier.content.parse import Link
from courtier.content.simhash import BITS, distance
from courtier.content.text import PageText

MIN_NEAR_WORDS: Final = 25


@dataclass(frozen=True, slots=True)
class Duplicate:
    of: str
    """The earlier URL (as fetched)."""
    exact: bool
    distance: int
    """Bits between the SimHashes (0 for an exact duplicate)."""


@dataclass(slots=True)
class _Entry:
    url: str
    digest: str
    simhash: int
    near: bool
    seq: int


class DuplicateIndex:
    def __init__(self, near_distance: int, remember: int) -> None:
        self.near_distance = near_distance
        self.remember = remember
        blocks = near_distance + 1
        width, extra = divmod(BITS, blocks)
        self._blocks: list[tuple[int, int]] = []  # (shift, mask) of each block
        shift = 0
        for i in range(blocks):
            bits = width + (i < extra)
            self._blocks.append((shift, (1 << bits) - 1))
            shift += bits
        self._tables: list[dict[int, list[_Entry]]] = [{} for _ in self._blocks]
        self._digests: dict[str, _Entry] = {}
        self._urls: dict[str, _Entry] = {}
        self._order: deque[_Entry] = deque()
        self._seq = 0

    def __len__(self) -> int:
        return len(self._urls)

    def see(self, url: str, text: PageText) -> Duplicate | None:
        """The earlier URL ``url``'s text copies, if any; ``url`` is remembered."""
        if self.remember <= 0 or not text.text:
            return None
        entry = self._urls.get(url)
        if entry is None:
            entry = self._add(url, text)
        elif entry.digest != text.digest or entry.simhash != text.simhash:
            self._drop(entry)
            entry = self._add(url, text, entry.seq)
        found = self._earlier(entry)
        while len(self._urls) > self.remember and self._order:
            self._drop(self._order.popleft())
        return found

    def _earlier(self, entry: _Entry) -> Duplicate | None:
        same = self._digests.get(entry.digest)
        if same is not None and same.seq < entry.seq:
            return Duplicate(same.url, True, 0)
        if not entry.near or not self.near_distance:
            return None
        best: _Entry | None = None
        best_distance = self.near_distance + 1
        for table, (shift, mask) in zip(self._tables, self._blocks, strict=True):
            for other in table.get((entry.simhash >> shift) & mask, ()):
                if other.seq >= entry.seq or not other.near:
                    continue
                bits = distance(entry.simhash, other.simhash)
                if bits < best_distance or (
                    bits == best_distance and best and other.seq < best.seq
                ):
                    best, best_distance = other, bits
        return None if best is None else Duplicate(best.url, False, best_distance)

    def _add(self, url: str, text: PageText, seq: int | None = None) -> _Entry:
        if seq is None:
            seq = self._seq = self._seq + 1
        near = len(text.text.split(None, MIN_NEAR_WORDS)) >= MIN_NEAR_WORDS
        entry = _Entry(url, text.digest, text.simhash, near, seq)
        self._urls[url] = entry
        first = self._digests.get(text.digest)
        if first is None or seq < first.seq:
            self._digests[text.digest] = entry
        if near:
            for table, (shift, mask) in zip(self._tables, self._blocks, strict=True):
                table.setdefault((text.simhash >> shift) & mask, []).append(entry)
        self._order.append(entry)
        return entry

    def _drop(self, entry: _Entry) -> None:
        if self._urls.get(entry.url) is not entry:
            return  # already replaced (a changed text) or forgotten
        del self._urls[entry.url]
        if self._digests.get(entry.digest) is entry:
            del self._digests[entry.digest]
        if entry.near:
            for table, (shift, mask) in zip(self._tables, self._blocks, strict=True):
                key = (entry.simhash >> shift) & mask
                bucket = table.get(key)
                if bucket is not None:
                    bucket.remove(entry)
                    if not bucket:
                        del table[key]


def duplicate_fields(
    canonical: Link | None, own_canonical: str, found: Duplicate | None
) -> dict[str, Any]:
    """The document's fields for a page's declared canonical and what ``DuplicateIndex``
    found: ``canonical`` (the URL the page names), ``duplicate_of`` with ``duplicate``
    ("canonical" or "exact"), ``near_duplicate_of`` with ``near_distance``."""
    fields: dict[str, Any] = {}
    if canonical is not None:
        fields["canonical"] = canonical.fetch_url
        if canonical.canonical != own_canonical:
            fields["duplicate_of"] = canonical.fetch_url
            fields["duplicate"] = "canonical"
    if found is not None:
        if found.exact:
            if "duplicate_of" not in fields:
                fields["duplicate_of"] = found.of
                fields["duplicate"] = "exact"
        else:
            fields["near_duplicate_of"] = found.of
            fields["near_distance"] = found.distance
    return fields
