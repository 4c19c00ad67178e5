"""SimHash (Charikar 2002) of a text, for near-duplicate detection across URLs.

Features are the text's word 3-shingles (words: runs of letters and digits of the lower-cased
UTF-8, any non-ASCII byte counting as a letter); bit ``i`` of the SimHash is set when more
than half the shingles' 64-bit hashes have it set. An edited word changes three features
of hundreds, so texts that share most shingles get SimHashes a few bits apart: Manku, Jain and
Das Sarma (WWW 2007) found 3 bits of 64 the right threshold for web pages, which is ``[parse]
near_distance``'s default. (Byte shingles, cheaper to cut, moved too many bits: an edited word
changes a few dozen of them.)

A word's hash is a tabulation-style hash: the XOR of its bytes' hashes, each byte hashed with
its position in the word by splitmix64's finaliser; a shingle's mixes its three words'. All of
it is numpy over the text's bytes, with no Python loop over words or shingles: about 100 us
for a 5 KB text (`python bench/bench_text.py`). Stable across processes and runs (no
``hash``), so workers agree.
"""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt

BITS: Final = 64
_U64 = npt.NDArray[np.uint64]
_ROWS: Final = 255
"""Feature rows summed at once as packed bytes: a byte's count never passes 255."""
_SEPARATOR: Final = np.array([b < 128 and not chr(b).isalnum() for b in range(256)], dtype=np.bool_)
"""ASCII bytes that are neither letters nor digits end a word; UTF-8 bytes of other
characters are part of one."""


def _mix(x: _U64) -> _U64:
    """splitmix64's finaliser: every input bit moves every output bit (uint64 wraps; numpy
    warns on overflow of scalars only)."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def word_hashes(text: str) -> _U64:
    """A 64-bit hash of each word of ``text``, in order."""
    data = np.frombuffer(text.lower().encode("utf-8", "surrogatepass"), np.uint8)
    separator = _SEPARATOR[data]
    letters = np.flatnonzero(~separator)
    if not len(letters):
        return np.zeros(0, np.uint64)
    # A word starts at a letter after a separator (or at the start): its first letter's
    # index in ``letters``.
    starts = np.flatnonzero(np.diff(letters, prepend=-2) != 1)
    position = np.arange(len(letters)) - np.repeat(starts, np.diff(starts, append=len(letters)))
    keyed = data[letters].astype(np.uint64) | (position.astype(np.uint64) << np.uint64(8))
    return np.bitwise_xor.reduceat(_mix(keyed), starts)


def simhash(text: str) -> int:
    """The 64-bit SimHash of ``text`` (0 for a text with no words)."""
    words = word_hashes(text)
    if not len(words):
        return 0
    if len(words) >= 3:
        features = _mix(
            words[:-2] ^ _mix(words[1:-1] ^ np.uint64(1)) ^ _mix(words[2:] ^ np.uint64(2))
        )
    else:
        features = _mix(words)
    bits = np.unpackbits(features.view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
    # Sum the 0/1 bytes eight at a time as uint64 words, at most 255 rows per block.
    rows = -(-len(bits) // _ROWS) * _ROWS
    padded = np.zeros((rows, BITS), np.uint8)
    padded[: len(bits)] = bits
    blocks = padded.view(np.uint64).reshape(-1, _ROWS, BITS // 8).sum(axis=1, dtype=np.uint64)
    counts = blocks.view(np.uint8).reshape(-1, BITS).sum(axis=0, dtype=np.int64)
    # Byte j, bit k of a little-endian uint64 is bit 8j + k: ``counts`` is in bit order.
    set_bits = counts * 2 > len(features)
    return int.from_bytes(np.packbits(set_bits, bitorder="little").tobytes(), "little")


def distance(a: int, b: int) -> int:
    """Hamming distance of two SimHashes."""
    return (a ^ b).bit_count()
