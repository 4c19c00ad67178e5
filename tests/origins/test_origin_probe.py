"""The HTTP header probe: two requests per site, spaced, pinned, never past the address policy."""

from __future__ import annotations

from pathlib import Path

from courtier.net.policy import AddressPolicy
from courtier.origins.probe import HttpHeaderProbe
from courtier.simweb import SimWeb, SiteKind, WorldParams, build_world
from courtier.simweb.log import read_log


async def test_a_probe_fingerprints_a_tenant_with_two_spaced_requests(tmp_path: Path) -> None:
    world = build_world(WorldParams(seed=2))
    host = next(h for h, s in world.sites.items() if s.kind is SiteKind.HEADER_TENANT)
    sleeps: list[float] = []

    async def record_sleep(seconds: float) -> None:
        sleeps.append(seconds)

    async with SimWeb(world, log_path=tmp_path / "log.jsonl") as web:
        policy = AddressPolicy(allow=[web.allow_net])
        async with HttpHeaderProbe(
            lambda a: policy.check(a).allowed, port=web.port, sleep=record_sleep
        ) as probe:
            fingerprint = await probe(host, (web.address_of(host),))
    records = list(read_log(tmp_path / "log.jsonl"))
    assert fingerprint is not None and fingerprint.signature is not None
    assert fingerprint.server == "Plinth/2.3"
    assert fingerprint.not_found_hash is not None
    assert sleeps == [1.0]
    assert records[0].target == "/"
    assert [r.status for r in records] == [200, 404]


async def test_a_refused_address_is_never_connected_to(tmp_path: Path) -> None:
    world = build_world(WorldParams(seed=2))
    host = world.seed_hosts[0]
    async with (
        SimWeb(world, log_path=tmp_path / "log.jsonl") as web,
        HttpHeaderProbe(lambda _a: False, port=web.port, spacing=0) as probe,
    ):
        fingerprint = await probe(host, (web.address_of(host),))
    assert fingerprint is None
    assert list(read_log(tmp_path / "log.jsonl")) == []


async def test_nothing_listening_gives_no_fingerprint() -> None:
    async with HttpHeaderProbe(lambda _a: True, port=9, spacing=0, timeout=2.0) as probe:
        assert await probe("nobody.test", ("127.0.0.1",)) is None


async def test_a_path_the_caller_refuses_is_not_requested(tmp_path: Path) -> None:
    world = build_world(WorldParams(seed=2))
    host = next(h for h, s in world.sites.items() if s.kind is SiteKind.HEADER_TENANT)
    asked: list[tuple[str, str]] = []

    async def only_home(site: str, path: str) -> bool:
        asked.append((site, path))
        return path == "/"

    async with SimWeb(world, log_path=tmp_path / "log.jsonl") as web:
        policy = AddressPolicy(allow=[web.allow_net])
        async with HttpHeaderProbe(
            lambda a: policy.check(a).allowed, port=web.port, spacing=0, may_fetch=only_home
        ) as probe:
            fingerprint = await probe(host, (web.address_of(host),))
    assert len(asked) == 2
    assert [r.target for r in read_log(tmp_path / "log.jsonl")] == ["/"]
    assert fingerprint is not None and fingerprint.not_found_hash is None
    assert fingerprint.platform_headers == ("x-plinth-tenant",)


async def test_with_a_booking_function_every_request_waits_for_its_slot(tmp_path: Path) -> None:
    world = build_world(WorldParams(seed=2))
    host = next(h for h, s in world.sites.items() if s.kind is SiteKind.HEADER_TENANT)
    booked: list[tuple[str, tuple[str, ...], str]] = []
    sleeps: list[float] = []

    async def book(site: str, addresses: tuple[str, ...], path: str) -> None:
        booked.append((site, addresses, path))

    async def record_sleep(seconds: float) -> None:
        sleeps.append(seconds)

    async with SimWeb(world, log_path=tmp_path / "log.jsonl") as web:
        policy = AddressPolicy(allow=[web.allow_net])
        address = web.address_of(host)
        async with HttpHeaderProbe(
            lambda a: policy.check(a).allowed,
            port=web.port,
            sleep=record_sleep,
            book=book,
            missing_path=lambda: "/nothing-here",
        ) as probe:
            await probe(host, (address,))
    assert booked == [(host, (address,), "/"), (host, (address,), "/nothing-here")]
    assert sleeps == []  # the bookings space the requests, not a fixed sleep
    assert len(list(read_log(tmp_path / "log.jsonl"))) == 2
