"""DnsResolver against a DNS server of our own on 127.0.0.1 (never anything else)."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable
from typing import Any

import pytest
from loopback_dns import LoopbackDnsServer

from courtier.net.resolve import DnsResolver, ResolveError, StaticResolver, parse_nameserver


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def resolver_for(
    server: LoopbackDnsServer,
    *,
    clock: Callable[[], float] = time.monotonic,
    timeout: float = 2.0,
    **limits: Any,
) -> DnsResolver:
    return DnsResolver(server.address, timeout=timeout, clock=clock, **limits)


async def resolve_error(resolver: DnsResolver | StaticResolver, host: str) -> ResolveError:
    with pytest.raises(ResolveError) as caught:
        await resolver.resolve(host)
    return caught.value


def closed_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_a_addresses_come_before_aaaa_addresses(dns_server: LoopbackDnsServer) -> None:
    assert await resolver_for(dns_server).resolve("site.test") == ("127.0.0.10", "::1")


async def test_host_is_matched_case_insensitively_and_without_trailing_dot(
    dns_server: LoopbackDnsServer,
) -> None:
    assert await resolver_for(dns_server).resolve("Site.TEST.") == ("127.0.0.10", "::1")


async def test_cname_chain_is_followed_to_the_addresses(dns_server: LoopbackDnsServer) -> None:
    assert await resolver_for(dns_server).resolve("alias.test") == ("127.0.0.10", "::1")


async def test_name_with_only_aaaa_records_resolves(dns_server: LoopbackDnsServer) -> None:
    assert await resolver_for(dns_server).resolve("v6only.test") == ("::1",)


async def test_addresses_come_back_in_canonical_text(dns_server: LoopbackDnsServer) -> None:
    assert await resolver_for(dns_server).resolve("mapped.test") == ("::ffff:7f00:1",)


async def test_nonexistent_name_is_nxdomain(dns_server: LoopbackDnsServer) -> None:
    error = await resolve_error(resolver_for(dns_server), "nowhere.test")
    assert error.code == "nxdomain"


async def test_name_without_address_records_is_no_address(dns_server: LoopbackDnsServer) -> None:
    error = await resolve_error(resolver_for(dns_server), "empty.test")
    assert error.code == "no-address"


async def test_server_failure_is_dns_error(dns_server: LoopbackDnsServer) -> None:
    dns_server.behaviour.servfail.add("site.test")
    error = await resolve_error(resolver_for(dns_server), "site.test")
    assert error.code == "dns-error"


async def test_silent_nameserver_times_out_within_the_timeout(
    dns_server: LoopbackDnsServer,
) -> None:
    dns_server.behaviour.silent.add("site.test")
    started = time.monotonic()
    error = await resolve_error(resolver_for(dns_server, timeout=0.3), "site.test")
    assert error.code == "timeout"
    assert time.monotonic() - started < 2.0


async def test_loopback_port_with_no_server_is_a_timeout() -> None:
    resolver = DnsResolver(f"127.0.0.1:{closed_loopback_port()}", timeout=0.3)
    error = await resolve_error(resolver, "site.test")
    assert error.code == "timeout"


async def test_garbage_response_is_a_resolve_error_not_a_crash(
    dns_server: LoopbackDnsServer,
) -> None:
    # dnspython discards a reply it cannot parse and keeps waiting for a real one, so a server
    # that only ever sends garbage ends in a timeout.
    dns_server.behaviour.garbage.add("site.test")
    error = await resolve_error(resolver_for(dns_server, timeout=0.3), "site.test")
    assert error.code == "timeout"


async def test_record_cut_off_mid_rdata_is_a_resolve_error(dns_server: LoopbackDnsServer) -> None:
    dns_server.behaviour.truncated_record.add("public.test")
    error = await resolve_error(resolver_for(dns_server, timeout=0.3), "public.test")
    assert error.code in ("timeout", "dns-error")


async def test_aaaa_garbage_is_tolerated_when_a_answers(dns_server: LoopbackDnsServer) -> None:
    dns_server.behaviour.garbage.add("site.test/AAAA")
    resolver = resolver_for(dns_server, timeout=0.3)
    assert await resolver.resolve("site.test") == ("127.0.0.10",)


async def test_aaaa_failure_is_tolerated_when_a_answers(dns_server: LoopbackDnsServer) -> None:
    dns_server.behaviour.servfail.add("site.test/AAAA")
    assert await resolver_for(dns_server).resolve("site.test") == ("127.0.0.10",)


async def test_a_failure_fails_the_name_even_if_aaaa_answers(
    dns_server: LoopbackDnsServer,
) -> None:
    dns_server.behaviour.servfail.add("site.test/A")
    error = await resolve_error(resolver_for(dns_server), "site.test")
    assert error.code == "dns-error"


async def test_answer_is_cached_for_the_shortest_ttl(dns_server: LoopbackDnsServer) -> None:
    clock = FakeClock()
    resolver = resolver_for(dns_server, clock=clock)
    await resolver.resolve("site.test")  # A TTL 300, AAAA TTL 120
    clock.now += 119.9
    await resolver.resolve("site.test")
    assert dns_server.query_count("site.test", "A") == 1
    clock.now += 0.1
    await resolver.resolve("site.test")
    assert dns_server.query_count("site.test", "A") == 2


async def test_ttl_is_clamped_to_max_ttl(dns_server: LoopbackDnsServer) -> None:
    clock = FakeClock()
    resolver = resolver_for(dns_server, clock=clock, max_ttl=60.0)
    await resolver.resolve("public.test")  # TTL 600
    clock.now += 60.0
    await resolver.resolve("public.test")
    assert dns_server.query_count("public.test", "A") == 2


async def test_zero_ttl_is_raised_to_min_ttl(dns_server: LoopbackDnsServer) -> None:
    clock = FakeClock()
    resolver = resolver_for(dns_server, clock=clock, min_ttl=10.0)
    await resolver.resolve("zero-ttl.test")
    clock.now += 9.0
    await resolver.resolve("zero-ttl.test")
    assert dns_server.query_count("zero-ttl.test", "A") == 1


async def test_zero_ttl_answer_is_not_cached_by_default(dns_server: LoopbackDnsServer) -> None:
    resolver = resolver_for(dns_server, clock=FakeClock())
    await resolver.resolve("zero-ttl.test")
    await resolver.resolve("zero-ttl.test")
    assert dns_server.query_count("zero-ttl.test", "A") == 2


async def test_answers_change_once_the_cached_one_expires(dns_server: LoopbackDnsServer) -> None:
    clock = FakeClock()
    resolver = resolver_for(dns_server, clock=clock)
    assert await resolver.resolve("v4only.test") == ("127.0.0.11",)
    dns_server.set_zone(["v4only.test. 60 IN A 127.0.0.99"])
    assert await resolver.resolve("v4only.test") == ("127.0.0.11",)
    clock.now += 60.0
    assert await resolver.resolve("v4only.test") == ("127.0.0.99",)


async def test_nxdomain_is_cached_for_the_negative_ttl(dns_server: LoopbackDnsServer) -> None:
    clock = FakeClock()
    resolver = resolver_for(dns_server, clock=clock, negative_ttl=30.0)
    for _ in range(3):
        assert (await resolve_error(resolver, "nowhere.test")).code == "nxdomain"
    assert dns_server.query_count("nowhere.test", "A") == 1
    clock.now += 30.0
    await resolve_error(resolver, "nowhere.test")
    assert dns_server.query_count("nowhere.test", "A") == 2


async def test_timeouts_are_not_cached(dns_server: LoopbackDnsServer) -> None:
    dns_server.behaviour.silent.add("site.test")
    resolver = resolver_for(dns_server, timeout=0.2, clock=FakeClock())
    await resolve_error(resolver, "site.test")
    dns_server.behaviour.silent.clear()
    assert await resolver.resolve("site.test") == ("127.0.0.10", "::1")


async def test_cache_holds_at_most_max_entries_names(dns_server: LoopbackDnsServer) -> None:
    resolver = resolver_for(dns_server, clock=FakeClock(), max_entries=2)
    for name in ("site.test", "public.test", "v4only.test"):
        await resolver.resolve(name)
    assert resolver.cached_names() == 2
    await resolver.resolve("site.test")  # evicted first: asked again
    assert dns_server.query_count("site.test", "A") == 2
    await resolver.resolve("v4only.test")  # still cached
    assert dns_server.query_count("v4only.test", "A") == 1


async def test_concurrent_lookups_of_one_name_share_one_query(
    dns_server: LoopbackDnsServer,
) -> None:
    resolver = resolver_for(dns_server, clock=FakeClock())
    results = await asyncio.gather(*(resolver.resolve("site.test") for _ in range(20)))
    assert set(results) == {("127.0.0.10", "::1")}
    assert dns_server.query_count("site.test", "A") == 1


async def test_cancelled_waiter_does_not_cancel_the_shared_lookup(
    dns_server: LoopbackDnsServer,
) -> None:
    resolver = resolver_for(dns_server, clock=FakeClock())
    impatient = asyncio.ensure_future(resolver.resolve("site.test"))
    patient = asyncio.ensure_future(resolver.resolve("site.test"))
    await asyncio.sleep(0)
    impatient.cancel()
    assert await patient == ("127.0.0.10", "::1")


async def test_invalid_name_is_refused_before_any_query(dns_server: LoopbackDnsServer) -> None:
    error = await resolve_error(resolver_for(dns_server), "a" * 64 + ".test")
    assert error.code == "invalid-host"
    assert dns_server.queries == []


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("127.0.0.1:5353", ("127.0.0.1", 5353)),
        ("127.0.0.1", ("127.0.0.1", 53)),
        ("[::1]:5300", ("::1", 5300)),
        ("[::1]", ("::1", 53)),
        ("::1", ("::1", 53)),
        (" 10.0.0.53:53 ", ("10.0.0.53", 53)),
    ],
)
def test_nameserver_spec_is_parsed(spec: str, expected: tuple[str, int]) -> None:
    assert parse_nameserver(spec) == expected


@pytest.mark.parametrize(
    "spec", ["localhost:53", "127.0.0.1:0", "127.0.0.1:65536", "[::1", "[::1]x", "1.2.3.4:dns", ""]
)
def test_bad_nameserver_spec_is_a_clear_error(spec: str) -> None:
    with pytest.raises(ValueError, match="nameserver"):
        DnsResolver(spec)


async def test_static_resolver_answers_from_its_table() -> None:
    resolver = StaticResolver({"Site.Test.": ["127.0.0.1"], "empty.test": []})
    assert await resolver.resolve("site.test") == ("127.0.0.1",)
    assert (await resolve_error(resolver, "empty.test")).code == "no-address"
    assert (await resolve_error(resolver, "other.test")).code == "nxdomain"
