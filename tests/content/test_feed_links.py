"""The feeds a page names in its ``<head>``: found whatever the case its markup is written in."""

from __future__ import annotations

import pytest
from selectolax.lexbor import LexborHTMLParser

from courtier.content.feed_links import feed_references


def _found(head: str) -> list[str]:
    body = f"<html><head>{head}</head><body><p>news</p></body></html>".encode()
    return feed_references(LexborHTMLParser(body), body)


@pytest.mark.parametrize(
    "kind",
    [
        "application/rss+xml",
        "application/RSS+XML",
        "Application/Atom+Xml",
        " APPLICATION/ATOM+XML ",
    ],
)
def test_a_feed_link_is_found_whatever_the_case_of_its_type(kind: str) -> None:
    assert _found(f'<link rel="alternate" type="{kind}" href="/feed.xml">') == ["/feed.xml"]


def test_rel_and_attribute_names_may_be_in_any_case_too() -> None:
    head = '<LINK REL="Alternate" TYPE="application/RSS+XML" HREF="/rss">'
    assert _found(head) == ["/rss"]


def test_only_rss_and_atom_alternates_with_an_href_are_feeds() -> None:
    head = (
        '<link rel="alternate" type="text/html" href="/fr/">'
        '<link rel="stylesheet" type="application/rss+xml" href="/style">'
        '<link rel="alternate" type="application/atom+xml">'
        '<link rel="alternate" type="application/xhtml+xml" href="/mobile">'
        '<link rel="alternate" type="application/atom+xml" href="/atom">'
    )
    assert _found(head) == ["/atom"]
