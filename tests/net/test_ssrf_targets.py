"""The SSRF table: targets in every spelling, canonicalised and judged like the crawler does.

Names resolve through a static table, so nothing leaves the process.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import pytest

from courtier.cli.net import check_target
from courtier.net.guard import Guard
from courtier.net.policy import AddressPolicy
from courtier.net.resolve import StaticResolver

CASES_FILE = Path(__file__).with_name("target_cases.txt")

NAMES = StaticResolver(
    {
        "public.test": ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"],
        "mixed.test": ["93.184.215.14", "10.0.0.7"],
        "rebind.test": ["93.184.215.14", "::ffff:7f00:1"],
        "canary.test": ["169.254.169.254"],
        "nat64-canary.test": ["64:ff9b::a9fe:a9fe"],
        "nat64-public.test": ["64:ff9b::808:808"],
        "v6-private.test": ["fd12::1"],
        "site.test": ["127.0.0.10", "::1"],
        "empty.test": [],
        "garbage.test": ["not-an-address"],
    }
)


class TargetCase(NamedTuple):
    target: str
    allowed: bool
    reason: str
    addresses: tuple[str, ...]
    allow: tuple[str, ...]


def load_cases() -> list[TargetCase]:
    cases = []
    for line in CASES_FILE.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        target, verdict, reason, addresses, *rest = (part.strip() for part in line.split(" | "))
        assert verdict in ("allow", "refuse"), line
        cases.append(
            TargetCase(
                target,
                verdict == "allow",
                reason,
                () if addresses == "-" else tuple(addresses.split(",")),
                tuple(rest[0].split(",")) if rest else (),
            )
        )
    return cases


CASES = load_cases()


def test_table_has_both_verdicts_and_enough_rows() -> None:
    assert len(CASES) >= 150
    assert {case.allowed for case in CASES} == {True, False}
    assert len({(case.target, case.allow) for case in CASES}) == len(CASES), "duplicate rows"


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.target}|{','.join(c.allow)}")
async def test_target_verdict_matches_table(case: TargetCase) -> None:
    guard = Guard(AddressPolicy(case.allow), NAMES)
    check = await check_target(case.target, guard)
    assert (check.allowed, check.reason, check.addresses) == (
        case.allowed,
        case.reason,
        case.addresses,
    ), check.detail
