"""An operator's per-key limit (``[politeness.limits] overrides``): ``KEY => rate=R [burst=B]
[slot_width=W]`` replaces only the fields it names, over the key type's own limits."""

from __future__ import annotations

import re

import pytest

from courtier.politeness.gcra import KeyParams
from courtier.politeness.keys import DEFAULT_KEY_TYPE_PARAMS, KeyType, parse_override


def test_an_override_replaces_only_the_fields_it_names() -> None:
    site = DEFAULT_KEY_TYPE_PARAMS[KeyType.SITE].key_params()
    key, params = parse_override("site:example.org => rate=0.2")
    assert key == "site:example.org"
    assert params == KeyParams(5.0, site.burst, site.slot_width, weighted=False)


def test_every_field_can_be_set_with_spaces_or_commas() -> None:
    key, params = parse_override("origin:platform-a => rate=4, burst=2 slot_width=0.5")
    assert key == "origin:platform-a"
    assert params == KeyParams(0.25, 2.0, 0.5, weighted=True)


def test_the_key_is_read_in_lowercase_without_a_final_dot() -> None:
    key, _ = parse_override("  Site:Example.ORG.  =>rate=1")
    assert key == "site:example.org"


def test_the_key_types_given_are_the_base() -> None:
    types = dict(DEFAULT_KEY_TYPE_PARAMS)
    types[KeyType.ORIGIN] = types[KeyType.ORIGIN].__class__(rate=8.0, burst=3.0)
    _, params = parse_override("origin:platform-a => slot_width=0.25", types)
    assert params == KeyParams(0.125, 3.0, 0.25, weighted=True)


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ("site:example.org rate=1", "is not of the form 'KEY => rate=R [burst=B]'"),
        ("site:example.org => speed=1", "'speed=1' is not rate=, burst= or slot_width="),
        ("site:example.org => rate", "'rate' is not rate=, burst= or slot_width="),
        ("site:example.org =>", "sets nothing (rate=, burst= or slot_width=)"),
    ],
)
def test_a_rule_not_of_the_form_is_refused_saying_why(rule: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)) as e:
        parse_override(rule)
    assert repr(rule) in str(e.value)
