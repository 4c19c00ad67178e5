"""SimHash values: the same for the same text in every process, run and version."""

from __future__ import annotations

import numpy as np
import pytest

from courtier.content.simhash import simhash, word_hashes


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("river", 0x5ED634E1FA9814A6),  # one word: its hash
        ("river bridge", 0x4E0410C080081406),  # two words: the bits both have
        ("river bridge mayor", 0x23F9D1480BC2F25B),  # one shingle
        ("river bridge mayor garden", 0x018880400902F218),
        ("   abc def ghi", 0xEA550CBBCBD8D96C),  # separators before the first word
        ("Über größe Straße 2026", 0x2218103405805220),
        ("a\ud800b c d", 0x397CDA3F849BBBF6),  # a lone surrogate is part of a word
        (" ".join(f"word{n % 97} x{n % 13}" for n in range(400)), 0x481B6AC9958AF4D2),
    ],
)
def test_simhash_values_stay_the_same_across_processes_runs_and_versions(
    text: str, value: int
) -> None:
    """Workers of a fleet, and documents written by earlier runs, compare SimHashes made
    elsewhere: a value once written must be the one every later version computes."""
    assert simhash(text) == value


def test_word_hashes_are_64_bit_even_for_a_text_without_words() -> None:
    assert word_hashes("... --- !!!").dtype == np.uint64
    assert word_hashes("... --- !!!").size == 0
    assert [int(h) for h in word_hashes("River bridge")] == [
        0xD2A7DC148F95A7AD,
        0x71D36489E412F712,
    ]
