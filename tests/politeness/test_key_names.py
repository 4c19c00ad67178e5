"""Limit keys read and written as ``<type>:<name>``: a site with a port keeps its port, an
unknown type or a missing colon is refused saying what is known."""

from __future__ import annotations

import pytest

from courtier.politeness.keys import KeyType, LimitKey, origin_key, site_key


def test_site_and_origin_key_texts_parse_back_to_their_keys() -> None:
    assert site_key("a.test:8080") == "site:a.test:8080"
    assert origin_key("cname:p.platform.test") == "origin:cname:p.platform.test"
    assert LimitKey.parse(site_key("a.test:8080")) == LimitKey(KeyType.SITE, "a.test:8080")
    origin = LimitKey.parse(origin_key("cname:p.platform.test"))
    assert origin == LimitKey(KeyType.ORIGIN, "cname:p.platform.test")
    assert str(origin) == "origin:cname:p.platform.test"


def test_an_unknown_key_type_is_refused_listing_the_known_ones() -> None:
    known = ", ".join(t.value for t in KeyType)
    with pytest.raises(ValueError) as refused:
        LimitKey.parse("region:eu")
    assert str(refused.value) == f"unknown limit key type in 'region:eu' (known: {known})"


def test_a_key_without_a_name_is_refused() -> None:
    with pytest.raises(ValueError, match="is not of the form <type>:<name>"):
        LimitKey.parse("site")
    with pytest.raises(ValueError, match="needs a name without spaces"):
        LimitKey.parse("site:")
