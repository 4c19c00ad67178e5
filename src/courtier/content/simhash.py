"""SimHash (Charikar 2002) of a text, for near-duplicate detection across URLs.

Features are word 3-shingles of the lower-cased text (a text of one or two words: its
words), each hashed to 64 bits; bit ``i`` of the SimHash is set when more than half the
features have it set. Texts that share most shingles get SimHashes a few bits apart: Manku,
Jain and Das Sarma (WWW 2007) found 3 bits of 64 the right threshold for web pages, which is
``[parse] near_distance``'s default.

A word's hash is BLAKE2b (stable across processes, unlike ``hash``), cached per worker: pages
of one language share most of their words. A shingle's hash mixes its three words' hashes
with splitmix64's finaliser, and the bit counting is numpy's, so a page costs no Python loop
over its shingles.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from typing import Final

import numpy as np
import numpy.typing as npt

BITS: Final = 64
_WORD: Final = re.compile(r"\w+")
_U64 = npt.NDArray[np.uint64]


@lru_cache(maxsize=1 << 16)
def _word_hash(word: str) -> int:
    digest = hashlib.blake2b(word.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def _mix(x: _U64) -> _U64:
    """splitmix64's finaliser: every input bit moves every output bit (uint64 wraps)."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def simhash(text: str) -> int:
    """The 64-bit SimHash of ``text`` (0 for a text with no words)."""
    words = _WORD.findall(text.lower())
    if not words:
        return 0
    hashes = np.fromiter(map(_word_hash, words), dtype=np.uint64, count=len(words))
    if len(hashes) >= 3:
        # Array arithmetic wraps silently (numpy warns on overflow of scalars only).
        features = _mix(
            hashes[:-2] ^ _mix(hashes[1:-1] ^ np.uint64(1)) ^ _mix(hashes[2:] ^ np.uint64(2))
        )
    else:
        features = hashes
    bits = np.unpackbits(features.view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
    counts = bits.sum(axis=0, dtype=np.int64)
    # Byte j, bit k of a little-endian uint64 is bit 8j + k: ``counts`` is in bit order.
    set_bits = counts * 2 > len(features)
    return int.from_bytes(np.packbits(set_bits, bitorder="little").tobytes(), "little")


def distance(a: int, b: int) -> int:
    """Hamming distance of two SimHashes."""
    return (a ^ b).bit_count()
