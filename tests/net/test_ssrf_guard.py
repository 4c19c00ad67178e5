"""The guard: literals without DNS, local names refused, every resolved address judged."""

from __future__ import annotations

import logging

import pytest
from loopback_dns import LoopbackDnsServer

from courtier.net.guard import Guard, Resolution
from courtier.net.policy import AddressPolicy
from courtier.net.resolve import DnsResolver, ResolveError, StaticResolver

SIMULATED_WEB = ("127.0.0.0/8", "::1/128")


class RecordingResolver:
    """Answers from a table and remembers every name it was asked for."""

    def __init__(self, table: dict[str, tuple[str, ...]]) -> None:
        self.table = table
        self.asked: list[str] = []

    async def resolve(self, host: str) -> tuple[str, ...]:
        self.asked.append(host)
        if host not in self.table:
            raise ResolveError("nxdomain", f"{host} unknown")
        return self.table[host]


class BrokenResolver:
    async def resolve(self, host: str) -> tuple[str, ...]:
        raise RuntimeError("resolver bug")


def guard_with(table: dict[str, tuple[str, ...]], allow: tuple[str, ...] = ()) -> Guard:
    return Guard(AddressPolicy(allow), RecordingResolver(table))


async def test_ip_literal_is_judged_without_dns() -> None:
    resolver = RecordingResolver({})
    resolution = await Guard(AddressPolicy(), resolver).resolve("127.0.0.1")
    assert resolution == Resolution(
        "127.0.0.1", ("127.0.0.1",), False, "loopback", resolution.detail
    )
    assert resolver.asked == []


async def test_bracketed_ipv6_literal_is_judged_without_dns() -> None:
    resolver = RecordingResolver({})
    resolution = await Guard(AddressPolicy(), resolver).resolve("[::ffff:a9fe:a9fe]")
    assert (resolution.reason, resolution.addresses) == (
        "ipv4-mapped:link-local",
        ("::ffff:a9fe:a9fe",),
    )
    assert resolver.asked == []


@pytest.mark.parametrize("host", ["localhost", "api.localhost", "nas.local", "intranet"])
async def test_local_name_is_refused_without_dns(host: str) -> None:
    resolver = RecordingResolver({host: ("93.184.215.14",)})
    resolution = await Guard(AddressPolicy(SIMULATED_WEB), resolver).resolve(host)
    assert not resolution.allowed
    assert resolution.reason in ("localhost-name", "local-name")
    assert resolution.addresses == ()
    assert resolver.asked == []


@pytest.mark.parametrize("host", ["0177.0.0.1", "0x7f.1", "2130706433", "1.2.3.0x4"])
async def test_non_canonical_ipv4_spelling_is_refused_without_dns(host: str) -> None:
    resolver = RecordingResolver({})
    resolution = await Guard(AddressPolicy(), resolver).resolve(host)
    assert (resolution.allowed, resolution.reason) == (False, "invalid-host")
    assert resolver.asked == []


@pytest.mark.parametrize("host", ["a..b.test", "a" * 64 + ".test", "x" * 250 + ".test", "a b.test"])
async def test_malformed_name_is_refused_without_dns(host: str) -> None:
    resolver = RecordingResolver({})
    resolution = await Guard(AddressPolicy(), resolver).resolve(host)
    assert (resolution.allowed, resolution.reason) == (False, "invalid-host")
    assert resolver.asked == []


async def test_name_with_only_public_addresses_is_allowed() -> None:
    guard = guard_with({"public.test": ("93.184.215.14", "2606:4700::6810:84e5")})
    resolution = await guard.resolve("public.test")
    assert (resolution.allowed, resolution.reason) == (True, "ok")
    assert resolution.addresses == ("93.184.215.14", "2606:4700::6810:84e5")


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ("10.0.0.7", "private"),
        ("127.0.0.1", "loopback"),
        ("::ffff:7f00:1", "ipv4-mapped:loopback"),
        ("fd00::1", "unique-local"),
        ("169.254.169.254", "link-local"),
    ],
)
async def test_any_blocked_address_refuses_the_host(bad: str, reason: str) -> None:
    for addresses in (("93.184.215.14", bad), (bad, "93.184.215.14")):
        resolution = await guard_with({"mixed.test": addresses}).resolve("mixed.test")
        assert (resolution.allowed, resolution.reason) == (False, reason)
        assert resolution.addresses == addresses
        assert bad in resolution.detail


async def test_allow_list_lets_the_simulated_web_through() -> None:
    guard = guard_with({"site.test": ("127.0.0.10", "::1")}, allow=SIMULATED_WEB)
    resolution = await guard.resolve("site.test")
    assert (resolution.allowed, resolution.reason) == (True, "allow-listed")


async def test_allow_list_for_ipv4_does_not_cover_ipv6_loopback() -> None:
    guard = guard_with({"site.test": ("127.0.0.10", "::1")}, allow=("127.0.0.0/8",))
    resolution = await guard.resolve("site.test")
    assert (resolution.allowed, resolution.reason) == (False, "loopback")


@pytest.mark.parametrize(
    ("error_code"), ["nxdomain", "no-address", "timeout", "dns-error", "invalid-host"]
)
async def test_resolve_error_becomes_a_refusal_with_its_code(error_code: str) -> None:
    class FailingResolver:
        async def resolve(self, host: str) -> tuple[str, ...]:
            raise ResolveError(error_code, "failed")

    resolution = await Guard(AddressPolicy(), FailingResolver()).resolve("site.test")
    assert resolution == Resolution("site.test", (), False, error_code, "failed")


async def test_broken_resolver_is_a_refusal_not_an_exception() -> None:
    resolution = await Guard(AddressPolicy(), BrokenResolver()).resolve("site.test")
    assert (resolution.allowed, resolution.reason) == (False, "dns-error")
    assert "resolver bug" in resolution.detail


async def test_resolver_returning_nothing_is_no_address() -> None:
    resolution = await guard_with({"site.test": ()}).resolve("site.test")
    assert (resolution.allowed, resolution.reason) == (False, "no-address")


async def test_resolver_returning_garbage_text_is_refused() -> None:
    resolution = await guard_with({"site.test": ("93.184.215.14", "1.2.3")}).resolve("site.test")
    assert (resolution.allowed, resolution.reason) == (False, "invalid-host")


async def test_refusal_is_logged_with_its_reason(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="courtier.net.guard")
    await guard_with({"canary.test": ("169.254.169.254",)}).resolve("canary.test")
    [record] = [r for r in caplog.records if r.name == "courtier.net.guard"]
    assert "canary.test" in record.getMessage()
    assert "link-local" in record.getMessage()


async def test_allowed_host_is_not_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="courtier.net.guard")
    await guard_with({"public.test": ("93.184.215.14",)}).resolve("public.test")
    assert [r for r in caplog.records if r.name == "courtier.net.guard"] == []


async def test_guard_over_real_dns_refuses_the_canary_and_allows_the_simulated_web(
    dns_server: LoopbackDnsServer,
) -> None:
    guard = Guard(AddressPolicy(SIMULATED_WEB), DnsResolver(dns_server.address, timeout=2.0))
    canary = await guard.resolve("canary.test")
    site = await guard.resolve("site.test")
    mapped = await guard.resolve("mapped.test")
    missing = await guard.resolve("nowhere.test")
    assert (canary.allowed, canary.reason) == (False, "link-local")
    assert (site.allowed, site.reason, site.addresses) == (
        True,
        "allow-listed",
        ("127.0.0.10", "::1"),
    )
    assert (mapped.allowed, mapped.addresses) == (True, ("::ffff:7f00:1",))
    assert (missing.allowed, missing.reason) == (False, "nxdomain")


async def test_guard_over_real_dns_refuses_a_name_mixing_public_and_private(
    dns_server: LoopbackDnsServer,
) -> None:
    guard = Guard(AddressPolicy(SIMULATED_WEB), DnsResolver(dns_server.address, timeout=2.0))
    resolution = await guard.resolve("mixed.test")
    assert (resolution.allowed, resolution.reason) == (False, "private")
    assert resolution.addresses == ("93.184.215.14", "10.0.0.7")


async def test_static_resolver_fits_the_guard() -> None:
    guard = Guard(AddressPolicy(), StaticResolver({"public.test": ["93.184.215.14"]}))
    assert (await guard.resolve("public.test")).allowed
