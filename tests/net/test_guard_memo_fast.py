"""The guard's memo: what it may remember between requests, and what it must judge again."""

from __future__ import annotations

import pytest

from courtier.net.guard import Guard
from courtier.net.policy import AddressPolicy
from courtier.net.resolve import ResolveError

SIMULATED_WEB = ("127.0.0.0/8",)


class ScriptedResolver:
    """Answers each host from a table that tests change between calls; counts calls."""

    def __init__(self, table: dict[str, tuple[str, ...]]) -> None:
        self.table = table
        self.calls = 0

    async def resolve(self, host: str) -> tuple[str, ...]:
        self.calls += 1
        addresses = self.table.get(host)
        if addresses is None:
            raise ResolveError("nxdomain", f"{host} is unknown")
        return addresses


async def test_every_request_still_asks_the_resolver() -> None:
    # The resolver owns TTLs: the guard never skips it, however often a host comes back.
    resolver = ScriptedResolver({"site.test": ("127.0.0.10",)})
    guard = Guard(AddressPolicy(SIMULATED_WEB), resolver)
    for _ in range(3):
        assert (await guard.resolve("site.test")).allowed
    assert resolver.calls == 3


async def test_a_rebinding_answer_is_judged_afresh() -> None:
    resolver = ScriptedResolver({"rebind.test": ("127.0.0.10",)})
    guard = Guard(AddressPolicy(SIMULATED_WEB), resolver)
    assert (await guard.resolve("rebind.test")).allowed
    resolver.table["rebind.test"] = ("169.254.169.254",)
    refused = await guard.resolve("rebind.test")
    assert not refused.allowed and refused.reason == "link-local"
    assert refused.addresses == ("169.254.169.254",)
    resolver.table["rebind.test"] = ("127.0.0.10", "10.0.0.1")
    mixed = await guard.resolve("rebind.test")
    assert not mixed.allowed and mixed.reason == "private"


async def test_the_same_addresses_give_the_same_verdict() -> None:
    resolver = ScriptedResolver({"site.test": ("127.0.0.10", "127.0.0.11")})
    guard = Guard(AddressPolicy(SIMULATED_WEB), resolver)
    first = await guard.resolve("site.test")
    resolver.table["site.test"] = ("127.0.0.10", "127.0.0.11")  # equal, not the same object
    assert await guard.resolve("site.test") == first


async def test_a_failure_after_success_is_a_refusal() -> None:
    resolver = ScriptedResolver({"gone.test": ("127.0.0.10",)})
    guard = Guard(AddressPolicy(SIMULATED_WEB), resolver)
    assert (await guard.resolve("gone.test")).allowed
    del resolver.table["gone.test"]
    refused = await guard.resolve("gone.test")
    assert not refused.allowed and refused.reason == "nxdomain"


@pytest.mark.parametrize(
    ("host", "reason"),
    [("localhost", "localhost-name"), ("10.0.0.1", "private"), ("0x7f.1", "invalid-host")],
)
async def test_name_verdicts_are_remembered_and_never_reach_dns(host: str, reason: str) -> None:
    resolver = ScriptedResolver({})
    guard = Guard(AddressPolicy(SIMULATED_WEB), resolver)
    for _ in range(2):
        resolution = await guard.resolve(host)
        assert not resolution.allowed and resolution.reason == reason
    assert resolver.calls == 0


async def test_the_memo_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Guard, "MEMO_SIZE", 3)
    resolver = ScriptedResolver({f"s{i}.test": (f"127.0.0.{i + 1}",) for i in range(10)})
    guard = Guard(AddressPolicy(SIMULATED_WEB), resolver)
    for i in range(10):
        assert (await guard.resolve(f"s{i}.test")).allowed
    assert len(guard._by_name) == 3 and len(guard._judged) == 3
