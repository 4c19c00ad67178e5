"""Properties: an IPv4 address gets the same verdict however IPv6 wraps it."""

from __future__ import annotations

import ipaddress

from hypothesis import given
from hypothesis import strategies as st

from courtier.net.policy import AddressPolicy

POLICY = AddressPolicy()
PUBLIC_TEREDO_SERVER = int(ipaddress.IPv4Address("65.54.227.120"))

ipv4s = st.builds(ipaddress.IPv4Address, st.integers(min_value=0, max_value=2**32 - 1))


def wrapped(prefix: str, low_bits: int) -> ipaddress.IPv6Address:
    return ipaddress.IPv6Address(int(ipaddress.IPv6Address(prefix)) | low_bits)


@given(ipv4s)
def test_ipv4_mapped_form_gets_the_ipv4_verdict(ipv4: ipaddress.IPv4Address) -> None:
    inner = POLICY.check(ipv4)
    outer = POLICY.check(wrapped("::ffff:0:0", int(ipv4)))
    assert outer.allowed == inner.allowed
    assert outer.reason == ("ok" if inner.allowed else f"ipv4-mapped:{inner.reason}")


@given(ipv4s)
def test_nat64_form_gets_the_ipv4_verdict(ipv4: ipaddress.IPv4Address) -> None:
    inner = POLICY.check(ipv4)
    outer = POLICY.check(wrapped("64:ff9b::", int(ipv4)))
    assert outer.allowed == inner.allowed
    assert outer.reason == ("ok" if inner.allowed else f"nat64:{inner.reason}")


@given(ipv4s, st.integers(min_value=0, max_value=2**80 - 1))
def test_6to4_form_gets_the_ipv4_verdict(ipv4: ipaddress.IPv4Address, suffix: int) -> None:
    inner = POLICY.check(ipv4)
    outer = POLICY.check(wrapped("2002::", (int(ipv4) << 80) | suffix))
    assert outer.allowed == inner.allowed


@given(ipv4s, st.integers(min_value=0, max_value=2**32 - 1))
def test_teredo_form_gets_the_client_verdict(ipv4: ipaddress.IPv4Address, flags: int) -> None:
    inner = POLICY.check(ipv4)
    obfuscated_client = int(ipv4) ^ 0xFFFF_FFFF
    outer = POLICY.check(
        wrapped("2001::", (PUBLIC_TEREDO_SERVER << 64) | (flags << 32) | obfuscated_client)
    )
    assert outer.allowed == inner.allowed


@given(ipv4s)
def test_deprecated_and_local_embeddings_are_never_allowed(ipv4: ipaddress.IPv4Address) -> None:
    for prefix in ("::", "::ffff:0:0:0", "64:ff9b:1::"):
        address = wrapped(prefix, int(ipv4))
        if address in (ipaddress.IPv6Address("::"), ipaddress.IPv6Address("::1")):
            continue
        assert not POLICY.check(address).allowed
