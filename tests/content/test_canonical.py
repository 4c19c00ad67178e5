"""Declared canonicals: markup and Link header, resolved, and what declares none."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from courtier.content import canonical
from courtier.content.parse import make_link
from courtier.content.reading import ReadContext, read_page
from courtier.sinks.redact import is_redacted

BASE = "http://a.test/dir/page?x=1"


def canonical_of(markup: str, *links: str) -> str | None:
    page = read_page(markup.encode(), BASE, ReadContext("text/html", link_headers=links))
    return None if page.canonical is None else page.canonical.fetch_url


def test_a_relative_canonical_in_markup_is_resolved():
    assert canonical_of('<link rel="canonical" href="../story/5">') == "http://a.test/story/5"


def test_rel_is_a_token_list_and_case_does_not_matter():
    assert canonical_of('<link rel="Alternate CANONICAL" href="/c">') == "http://a.test/c"
    assert canonical_of('<link rel="canonicalish" href="/c">') is None


def test_two_canonicals_that_disagree_declare_nothing():
    two = '<link rel="canonical" href="/a"><link rel="canonical" href="/b">'
    assert canonical_of(two) is None
    same = '<link rel="canonical" href="/a"><link rel="canonical" href="/a">'
    assert canonical_of(same) == "http://a.test/a"


def test_the_header_wins_over_the_markup():
    markup = '<link rel="canonical" href="/from-markup">'
    header = '</x>; rel="preload", <https://a.test/from-header>; rel="canonical"'
    assert canonical_of(markup, header) == "https://a.test/from-header"


def declared_in_headers(values: list[str], base: str) -> object:
    return canonical.declared_in_headers(values, base, make_link)


def test_header_forms():
    assert declared_in_headers(["</c>; rel=canonical"], BASE).fetch_url == "http://a.test/c"  # type: ignore[union-attr]
    assert declared_in_headers(['</c>; REL="next canonical"'], BASE) is not None
    assert declared_in_headers(['</c>; rel="next"'], BASE) is None


def test_a_broken_or_non_http_canonical_declares_nothing():
    assert canonical_of('<link rel="canonical" href="http://[broken/">') is None
    assert canonical_of('<link rel="canonical" href="mailto:a@b.test">') is None
    assert canonical_of('<link rel="canonical" href="">') is None
    assert canonical_of("", "<http://[broken/>; rel=canonical") is None


@given(st.text(max_size=200))
def test_any_link_header_is_read_without_error(value: str) -> None:
    found = canonical.declared_in_headers([value], BASE, make_link)
    assert found is None or found.fetch_url.startswith(("http://", "https://"))


def test_a_secret_in_a_header_canonical_is_redacted_and_never_fetched():
    key = "AIza" + "Sy" + "D" * 33
    found = canonical_of("", f"<https://a.test/p?key={key}>; rel=canonical")
    assert found is not None and key not in found and is_redacted(found)


def test_an_empty_target_declares_nothing_not_the_page_itself():
    assert canonical_of('<link rel="canonical" href="  ">') is None
    assert canonical_of("<p>x</p>", '< >; rel="canonical"') is None
    assert canonical_of("<p>x</p>", "<>; rel=canonical") is None
