"""Duplicates across URLs: exact and near, the earlier URL named, memory bounded."""

from __future__ import annotations

import random

from courtier.content.duplicates import DuplicateIndex, duplicate_fields
from courtier.content.parse import make_link
from courtier.content.simhash import distance, simhash
from courtier.content.text import PageText

WORDS = ("river", "bridge", "mayor", "garden", "market", "library", "school", "road")


def text_of(words: list[str]) -> PageText:
    body = " ".join(words)
    return PageText(body, body, "en", 1.0, simhash(body), str(hash(body)))


def article(seed: int, n: int = 400) -> list[str]:
    rng = random.Random(seed)
    return [rng.choice(WORDS) + str(rng.randrange(50)) for _ in range(n)]


def test_an_exact_copy_names_the_earlier_url():
    index = DuplicateIndex(3, 100)
    words = article(1)
    assert index.see("http://a.test/1", text_of(words)) is None
    found = index.see("http://b.test/1", text_of(words))
    assert found is not None and (found.of, found.exact) == ("http://a.test/1", True)


def test_a_near_copy_is_found_within_the_distance_and_another_text_is_not():
    index = DuplicateIndex(3, 100)
    words = article(2)
    near = [*words[:100], "lantern", *words[101:]]
    assert distance(simhash(" ".join(words)), simhash(" ".join(near))) <= 3
    index.see("http://a.test/1", text_of(words))
    found = index.see("http://b.test/1", text_of(near))
    assert found is not None and not found.exact and found.of == "http://a.test/1"
    assert index.see("http://c.test/1", text_of(article(3))) is None


def test_distance_zero_finds_exact_copies_only():
    index = DuplicateIndex(0, 100)
    words = article(4)
    index.see("http://a.test/1", text_of(words))
    assert index.see("http://b.test/1", text_of([*words[:100], "lantern", *words[101:]])) is None


def test_a_refresh_of_the_original_is_no_copy_of_its_copy():
    index = DuplicateIndex(3, 100)
    words = article(5)
    index.see("http://a.test/1", text_of(words))
    index.see("http://b.test/1", text_of(words))
    assert index.see("http://a.test/1", text_of(words)) is None


def test_short_texts_are_compared_exactly_only():
    index = DuplicateIndex(3, 100)
    index.see("http://a.test/1", text_of(["home", "news"]))
    assert index.see("http://b.test/1", text_of(["home", "newz"])) is None


def test_the_index_forgets_the_oldest_past_its_bound():
    index = DuplicateIndex(3, 2)
    for i in range(5):
        index.see(f"http://a.test/{i}", text_of(article(10 + i)))
    assert len(index) == 2
    assert index.see("http://b.test/0", text_of(article(10))) is None  # forgotten
    assert index.see("http://b.test/4", text_of(article(14))) is not None


def test_a_declared_canonical_elsewhere_makes_the_page_its_duplicate():
    canonical = make_link("/story/5", "http://a.test/item/5")
    fields = duplicate_fields(canonical, "http://a.test/item/5", None)
    assert fields == {
        "canonical": "http://a.test/story/5",
        "duplicate_of": "http://a.test/story/5",
        "duplicate": "canonical",
    }
    assert duplicate_fields(canonical, "http://a.test/story/5", None) == {
        "canonical": "http://a.test/story/5"
    }


def test_a_changed_refresh_of_the_original_is_no_copy_of_its_own_copy():
    """The copy is refreshed first and shows the original's new text; the original's refresh
    then brings that text too: the original stays the original, the copy stays the copy."""
    index = DuplicateIndex(3, 100)
    old, new = article(20), article(21)
    assert index.see("http://a.test/1", text_of(old)) is None
    assert index.see("http://b.test/1", text_of(old)) is not None
    found = index.see("http://b.test/1", text_of(new))
    assert found is None  # nothing earlier holds the new text yet
    assert index.see("http://a.test/1", text_of(new)) is None
    found = index.see("http://b.test/1", text_of(new))
    assert found is not None and (found.of, found.exact) == ("http://a.test/1", True)


def test_a_changed_refresh_of_the_original_is_no_near_copy_of_its_own_copy():
    index = DuplicateIndex(3, 100)
    old, new = article(22), article(23)
    edited = [*new[:100], "lantern", *new[101:]]
    assert distance(simhash(" ".join(new)), simhash(" ".join(edited))) <= 3
    index.see("http://a.test/1", text_of(old))
    index.see("http://b.test/1", text_of(old))
    assert index.see("http://b.test/1", text_of(edited)) is None
    assert index.see("http://a.test/1", text_of(new)) is None
    found = index.see("http://b.test/1", text_of(edited))
    assert found is not None and (found.of, found.exact) == ("http://a.test/1", False)
