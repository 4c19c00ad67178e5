"""The ``[politeness.keys.<type>]`` tables: every field a key type's limits have is read
(rate, burst, slot width, weighted) and carried into its booking parameters, an unknown one
is refused by name, and a policy missing a key type says which."""

from __future__ import annotations

import pytest

from courtier.politeness.gcra import KeyParams
from courtier.politeness.keys import (
    DEFAULT_KEY_TYPE_PARAMS,
    KeyType,
    KeyTypeParams,
    LimitPolicy,
)


def test_a_key_types_limits_become_its_booking_parameters_field_for_field() -> None:
    params = KeyTypeParams(rate=2.0, burst=1.0, slot_width=0.25, weighted=False).key_params()
    assert params == KeyParams(0.5, 1.0, 0.25, weighted=False)


def test_every_setting_of_a_key_type_is_read_and_the_rest_kept() -> None:
    policy = LimitPolicy.from_config({"origin": {"burst": 2.0, "weighted": False}})
    base = DEFAULT_KEY_TYPE_PARAMS[KeyType.ORIGIN]
    assert policy.types[KeyType.ORIGIN] == KeyTypeParams(
        rate=base.rate, burst=2.0, slot_width=base.slot_width, weighted=False
    )
    assert policy.types[KeyType.SITE] == DEFAULT_KEY_TYPE_PARAMS[KeyType.SITE]


def test_unknown_settings_are_refused_by_name() -> None:
    with pytest.raises(ValueError) as refused:
        LimitPolicy.from_config({"site": {"speed": 1.0, "bursts": 2.0, "rate": 1.0}})
    assert str(refused.value) == "unknown settings for site keys: bursts, speed"


def test_a_policy_without_every_key_type_says_which_are_missing() -> None:
    only_sites = {KeyType.SITE: DEFAULT_KEY_TYPE_PARAMS[KeyType.SITE]}
    missing = ", ".join(t.value for t in KeyType if t is not KeyType.SITE)
    with pytest.raises(ValueError) as refused:
        LimitPolicy(types=only_sites)
    assert str(refused.value) == f"no limits configured for key types: {missing}"
