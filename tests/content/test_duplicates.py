"""Duplicates across URLs: exact and near, the earlier URL named, memory bounded."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from courtier.content.duplicates import Duplicate, DuplicateIndex, duplicate_fields
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


_LONG = " ".join(f"w{n}" for n in range(30))  # enough words to be compared nearly
_SHORT = "home news"


def _page(digest: str, simhash_value: int, long: bool) -> PageText:
    body = f"{_LONG if long else _SHORT} {digest}"
    return PageText(body, body, "en", 1.0, simhash_value, digest)


@st.composite
def _pages(draw: st.DrawFn) -> tuple[int, list[tuple[str, int, bool]]]:
    """Pages seen in turn: copies of an earlier page, near copies (a few bits flipped) or
    new ones; long enough to be compared nearly, or not."""
    near_distance = draw(st.integers(0, 6))
    pages: list[tuple[str, int, bool]] = []
    for n in range(draw(st.integers(1, 12))):
        kind = draw(st.sampled_from(["new", "copy", "near"])) if pages else "new"
        long = draw(st.booleans())
        if kind == "copy":
            digest, value, _ = pages[draw(st.integers(0, len(pages) - 1))]
        elif kind == "near":
            _, value, _ = pages[draw(st.integers(0, len(pages) - 1))]
            for bit in draw(st.lists(st.integers(0, 63), max_size=near_distance + 2)):
                value ^= 1 << bit
            digest = f"d{n}"
        else:
            digest, value = f"d{n}", draw(st.integers(0, (1 << 64) - 1))
        pages.append((digest, value, long))
    return near_distance, pages


@settings(deadline=None, max_examples=60)
@given(_pages())
def test_each_page_names_the_earliest_exact_copy_else_the_closest_earlier_near_one(drawn):
    """Against a look at every earlier page: an exact copy first (the earliest), else the
    nearest SimHash within the distance among pages long enough (on a tie, the earliest)."""
    near_distance, pages = drawn
    index = DuplicateIndex(near_distance, 100)
    for n, (digest, value, long) in enumerate(pages):
        found = index.see(f"http://a.test/{n}", _page(digest, value, long))
        earlier = [(m, page) for m, page in enumerate(pages[:n])]
        same = [m for m, (d, _, _) in earlier if d == digest]
        if same:
            assert found == Duplicate(f"http://a.test/{same[0]}", True, 0)
            continue
        near = sorted(
            (distance(value, v), m)
            for m, (_, v, other_long) in earlier
            if long and other_long and distance(value, v) <= near_distance and near_distance
        )
        if near:
            bits, m = near[0]
            assert found == Duplicate(f"http://a.test/{m}", False, bits)
        else:
            assert found is None


def test_the_document_fields_of_an_exact_and_a_near_copy():
    assert duplicate_fields(None, "http://b.test/1", Duplicate("http://a.test/1", True, 0)) == {
        "duplicate_of": "http://a.test/1",
        "duplicate": "exact",
    }
    assert duplicate_fields(None, "http://b.test/1", Duplicate("http://a.test/1", False, 2)) == {
        "near_duplicate_of": "http://a.test/1",
        "near_distance": 2,
    }
    # A declared canonical elsewhere names the duplicate first; an exact copy does not undo it.
    canonical = make_link("/story/5", "http://b.test/item/5")
    assert duplicate_fields(
        canonical, "http://b.test/item/5", Duplicate("http://a.test/1", True, 0)
    ) == {
        "canonical": "http://b.test/story/5",
        "duplicate_of": "http://b.test/story/5",
        "duplicate": "canonical",
    }


def test_an_empty_text_or_a_zero_bound_remembers_nothing():
    assert DuplicateIndex(3, 100).see("http://a.test/", PageText("", "", None, 0.0, 0, "e")) is None
    index = DuplicateIndex(3, 0)
    page = text_of(article(30))
    assert index.see("http://a.test/1", page) is None
    assert index.see("http://b.test/1", page) is None
    assert len(index) == 0
    one = DuplicateIndex(3, 1)
    one.see("http://a.test/1", page)
    assert one.see("http://b.test/1", page) == Duplicate("http://a.test/1", True, 0)


def test_a_near_copy_is_found_however_its_differing_bits_are_spread():
    """The pigeonhole rule: ``d`` differing bits leave one of ``d + 1`` blocks equal,
    wherever they fall (here spread evenly, one in each of ``d`` equal parts, and packed)."""
    for d in range(1, 7):
        for spread in (64 // d, 64 // (d + 1), 1):
            index = DuplicateIndex(d, 100)
            original = 0x0123_4567_89AB_CDEF
            copy = original
            for i in range(d):
                copy ^= 1 << (i * spread)
            index.see("http://a.test/1", _page("d1", original, True))
            found = index.see("http://b.test/1", _page("d2", copy, True))
            assert found == Duplicate("http://a.test/1", False, d), (d, spread)


def _blocks_of(d: int) -> list[int]:
    """Where each of the ``d + 1`` blocks of 64 bits starts (the widest first)."""
    width, extra = divmod(64, d + 1)
    starts, at = [], 0
    for i in range(d + 1):
        starts.append(at)
        at += width + (i < extra)
    return starts


def test_a_near_copy_differing_at_the_first_bit_of_each_other_block_is_found():
    for d in range(1, 7):
        index = DuplicateIndex(d, 100)
        original = 0x0123_4567_89AB_CDEF
        copy = original
        for start in _blocks_of(d)[1:]:
            copy ^= 1 << start
        index.see("http://a.test/1", _page("d1", original, True))
        assert index.see("http://b.test/1", _page("d2", copy, True)) == Duplicate(
            "http://a.test/1", False, d
        ), d


def test_a_copy_one_bit_past_the_distance_is_no_near_copy():
    index = DuplicateIndex(3, 100)
    index.see("http://a.test/1", _page("d1", 0, True))
    assert index.see("http://b.test/1", _page("d2", 0b1111, True)) is None  # one block, 4 bits


def test_the_nearest_earlier_page_is_named_whichever_block_finds_it_first():
    # Four blocks of 16 bits: the farther page agrees with the query on the last block only,
    # the nearer one on the first three.
    query = 0
    farther = (1 << 0) | (1 << 16) | (1 << 32)  # 3 bits away
    nearer = 1 << 48  # 1 bit away
    index = DuplicateIndex(3, 100)
    index.see("http://a.test/far", _page("d1", farther, True))
    index.see("http://a.test/near", _page("d2", nearer, True))
    assert index.see("http://b.test/q", _page("d3", query, True)) == Duplicate(
        "http://a.test/near", False, 1
    )


def test_twenty_five_words_are_enough_to_be_compared_nearly():
    def words(n: int, last: str) -> PageText:
        body = " ".join([*(f"w{i}" for i in range(n - 1)), last])
        return PageText(body, body, "en", 1.0, 1 << n, body)

    for n, near in ((25, True), (24, False)):
        index = DuplicateIndex(3, 100)
        index.see("http://a.test/1", words(n, "a"))
        found = index.see("http://b.test/1", words(n, "b"))  # the same SimHash, another text
        assert (found == Duplicate("http://a.test/1", False, 0)) is near, n


def test_forgetting_a_page_keeps_the_others_that_share_its_blocks():
    index = DuplicateIndex(1, 2)  # two blocks of 32 bits; two pages remembered
    low = 0x0000_0000_1234_5678
    index.see("http://a.test/x", _page("d1", low | (1 << 40), True))
    index.see("http://a.test/y", _page("d2", low | (1 << 50), True))  # y shares x's low block
    index.see("http://a.test/z", _page("d3", 0xFFFF_0000_0000_0000, True))  # x is forgotten
    # A page one bit from y in its high block: only the low block, which x shared, finds y.
    found = index.see("http://b.test/q", _page("d4", low | (1 << 50) | (1 << 33), True))
    assert found == Duplicate("http://a.test/y", False, 1)


def test_two_empty_texts_are_no_copies_of_each_other():
    index = DuplicateIndex(3, 100)
    empty = PageText("", "", None, 0.0, 0, "e")
    assert index.see("http://a.test/1", empty) is None
    assert index.see("http://b.test/1", empty) is None


def test_a_refetch_with_a_new_text_but_the_same_simhash_is_indexed_by_its_new_text():
    index = DuplicateIndex(3, 100)
    index.see("http://a.test/1", _page("old", 42, True))
    index.see("http://a.test/1", _page("new", 42, True))
    assert index.see("http://b.test/1", _page("new", 42, True)) == Duplicate(
        "http://a.test/1", True, 0
    )


def test_seeing_a_page_again_unchanged_does_not_make_it_newer():
    """The oldest is forgotten first: by when it was first seen, not last seen."""
    index = DuplicateIndex(0, 2)
    index.see("http://a.test/1", _page("a", 1, False))
    index.see("http://a.test/2", _page("b", 2, False))
    index.see("http://a.test/1", _page("a", 1, False))
    index.see("http://a.test/3", _page("c", 3, False))
    assert index.see("http://b.test/1", _page("a", 1, False)) is None  # /1 was forgotten
    assert index.see("http://b.test/3", _page("c", 3, False)) == Duplicate(
        "http://a.test/3", True, 0
    )
