"""Page-level robots directives, as Google and Bing document them and sites write them:
``<meta name="robots">`` for every crawler, ``<meta name=TOKEN>`` for us, ``X-Robots-Tag``
values with or without a crawler's name in front."""

from __future__ import annotations

from courtier.politeness.robots_meta import (
    NOFOLLOW,
    NOINDEX,
    directives,
    header_directives,
    meta_applies,
)


def test_directives_are_comma_separated_case_insensitive_and_none_means_both() -> None:
    assert directives(" NoFollow ,noindex") == {NOFOLLOW, NOINDEX}
    assert directives("none") == {NOFOLLOW, NOINDEX}
    assert directives("NONE") == {NOFOLLOW, NOINDEX}
    assert directives("noarchive, nosnippet, noimageindex") == {
        "noarchive",
        "nosnippet",
        "noimageindex",
    }


def test_all_unknown_and_valued_directives_add_nothing() -> None:
    assert directives("all") == frozenset()
    assert directives("index, follow, bogus") == frozenset()
    assert directives("max-snippet: 20, unavailable_after: 2030-01-01") == frozenset()
    assert directives("noindex: whatever") == {NOINDEX}


def test_meta_robots_speaks_to_all_and_our_token_to_us_alone() -> None:
    assert meta_applies(" Robots ", "courtier")
    assert meta_applies("COURTIER", "Courtier")
    assert not meta_applies("googlebot", "courtier")
    assert not meta_applies("", "")  # no token: an empty name is nobody's


def test_a_header_without_a_crawler_name_applies_to_every_crawler() -> None:
    assert header_directives(["noindex", "nofollow"], "courtier") == {NOINDEX, NOFOLLOW}
    assert header_directives(["noindex, nofollow"], "") == {NOINDEX, NOFOLLOW}


def test_a_header_naming_a_crawler_applies_only_when_it_names_us() -> None:
    assert header_directives(["googlebot: nofollow"], "courtier") == frozenset()
    assert header_directives(["Courtier: nofollow"], "courtier") == {NOFOLLOW}
    assert header_directives(["courtier: nofollow", "noindex"], "COURTIER") == {
        NOFOLLOW,
        NOINDEX,
    }
    # Without a token of our own, a named crawler's line is never ours.
    assert header_directives(["courtier: nofollow"], "") == frozenset()


def test_a_directive_with_a_value_or_a_list_is_not_a_crawler_name() -> None:
    assert header_directives(["unavailable_after: 25 Jun 2010 15:00:00 PST"], "x") == frozenset()
    assert header_directives(["noindex: x"], "x") == {NOINDEX}
    # A list before the colon is directives, not a name (a comma or a space in it).
    assert header_directives(["nofollow, max-snippet: 20"], "x") == {NOFOLLOW}
    assert header_directives(["noindex nofollow: 1"], "x") == frozenset()
