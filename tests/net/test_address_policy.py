"""The address policy, driven by the table in address_cases.txt, plus its edges."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import NamedTuple

import pytest

from courtier.net.policy import AddressPolicy, Verdict, is_local_name, parse_allowed_network
from courtier.net.ranges import IPV4_BLOCKED, IPV6_BLOCKED, IPV6_EMBEDDINGS

CASES_FILE = Path(__file__).with_name("address_cases.txt")


class AddressCase(NamedTuple):
    address: str
    allowed: bool
    reason: str
    allow: tuple[str, ...]


def load_cases() -> list[AddressCase]:
    cases = []
    for line in CASES_FILE.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        address, verdict, reason, *rest = line.split()
        assert verdict in ("allow", "refuse"), line
        allow: tuple[str, ...] = ()
        if rest:
            assert rest[0].startswith("allow="), line
            allow = tuple(rest[0].removeprefix("allow=").split(","))
        cases.append(AddressCase(address, verdict == "allow", reason, allow))
    return cases


CASES = load_cases()


def test_table_has_both_verdicts_and_enough_rows() -> None:
    assert len(CASES) >= 150
    assert {case.allowed for case in CASES} == {True, False}


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.address}|{','.join(c.allow)}")
def test_address_verdict_matches_table(case: AddressCase) -> None:
    verdict = AddressPolicy(case.allow).check(case.address)
    assert (verdict.allowed, verdict.reason) == (case.allowed, case.reason), verdict.detail


@pytest.mark.parametrize("case", [c for c in CASES if c.reason != "invalid-host"])
def test_address_objects_and_text_are_judged_alike(case: AddressCase) -> None:
    policy = AddressPolicy(case.allow)
    assert policy.check(ipaddress.ip_address(case.address)) == policy.check(case.address)


def test_refusal_detail_names_the_block_and_its_source() -> None:
    verdict = AddressPolicy().check("169.254.169.254")
    assert "169.254.0.0/16" in verdict.detail
    assert "RFC 3927" in verdict.detail


def test_embedded_refusal_detail_names_the_embedded_address() -> None:
    verdict = AddressPolicy().check("2001:0:4136:e378:8000:63bf:80ff:fffe")
    assert "Teredo client 127.0.0.1" in verdict.detail


def test_allowed_verdict_is_ok_with_an_explanation() -> None:
    assert AddressPolicy().check("8.8.8.8") == Verdict(
        True, "ok", "8.8.8.8 is not in any special-purpose block"
    )


def test_every_address_in_an_embedding_prefix_of_a_loopback_ipv4_is_refused() -> None:
    loopback = ipaddress.IPv4Address("127.0.0.1")
    policy = AddressPolicy()
    for prefix in IPV6_EMBEDDINGS:
        if prefix.embedding.value in ("6to4", "teredo"):
            continue  # not a last-32-bits layout; covered by the table
        address = ipaddress.IPv6Address(int(prefix.network.network_address) | int(loopback))
        verdict = policy.check(address)
        assert not verdict.allowed
        assert verdict.reason.endswith(":loopback"), (address, verdict)


@pytest.mark.parametrize("block", IPV4_BLOCKED + IPV6_BLOCKED, ids=lambda b: str(b.network))
def test_first_and_last_address_of_every_listed_block_is_refused(block: object) -> None:
    network = block.network  # type: ignore[attr-defined]
    policy = AddressPolicy()
    for address in (network.network_address, network.broadcast_address):
        assert not policy.check(address).allowed, address


@pytest.mark.parametrize("block", IPV4_BLOCKED + IPV6_BLOCKED, ids=lambda b: str(b.network))
def test_every_listed_block_cites_a_source(block: object) -> None:
    source = block.source  # type: ignore[attr-defined]
    assert "IANA" in source and "RFC" in source


@pytest.mark.parametrize(
    "spec", ["127.0.0.1/8", "10.0.0.0/33", "localhost", "", "0x7f.0.0.0/8", "::1/129"]
)
def test_malformed_allow_list_entry_is_a_clear_error(spec: str) -> None:
    with pytest.raises(ValueError, match="CIDR"):
        AddressPolicy([spec])


def test_allow_list_accepts_network_objects_and_single_addresses() -> None:
    policy = AddressPolicy([ipaddress.ip_network("127.0.0.0/8"), "::1"])
    assert policy.allow == (ipaddress.ip_network("127.0.0.0/8"), ipaddress.ip_network("::1/128"))
    assert parse_allowed_network(" 10.0.0.0/8 ") == ipaddress.ip_network("10.0.0.0/8")


@pytest.mark.parametrize(
    "host",
    [
        "localhost",
        "LOCALHOST",
        "localhost.",
        "foo.localhost",
        "a.b.localhost",
        "localhost.localdomain",
        "printer.local",
        "router.home.arpa",
        "metadata.google.internal",
        "duckduckgogg42xjoc72x3sjasowoarfbgcmvfimaftt6twagswzczad.onion",
        "nothing.invalid",
        "intranet",
        "metadata",
    ],
)
def test_special_use_local_names_are_local(host: str) -> None:
    assert is_local_name(host)


@pytest.mark.parametrize(
    "host",
    ["site.test", "example.com", "localhost.example.com", "mylocal.example", "internal.test"],
)
def test_public_and_simulated_names_are_not_local(host: str) -> None:
    assert not is_local_name(host)
