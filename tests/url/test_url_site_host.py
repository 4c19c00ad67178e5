"""The host of a site key: the key without its port, an IPv6 address without its brackets."""

from __future__ import annotations

import pytest

from courtier.url.host import host_of_site


@pytest.mark.parametrize(
    ("site", "host"),
    [
        ("a.test", "a.test"),
        ("a.test:8080", "a.test"),
        ("[::1]:8080", "::1"),
        ("[2001:db8::1]", "2001:db8::1"),
        ("2001:db8::1", "2001:db8::1"),  # a bare IPv6 address is all host
    ],
)
def test_the_host_of_a_site_key_drops_the_port_and_the_brackets(site: str, host: str) -> None:
    assert host_of_site(site) == host
