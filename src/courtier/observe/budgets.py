"""What a limit key allows, as the observer needs it: its rate (``budget_from``) and how far
past its rate GCRA lets it go (``slack_from``), each worked out once per key."""

from __future__ import annotations

from collections.abc import Callable

from courtier.politeness.keys import LimitKey, LimitPolicy

BUDGET_CACHE = 100_000
"""Keys whose budgets are remembered (parsing a key and deriving its parameters costs
microseconds, and the progress view asks for every busy origin's several times a second)."""


Allowance = tuple[float | None, float]
"""A key's budget (cost units per second; None: the key limits nothing) and its slack
(burst tolerance plus slot width, seconds)."""


def allowance_from(policy: LimitPolicy) -> Callable[[str], Allowance]:
    """A key's ``Allowance``. The policy is frozen, so a key's never changes: each is worked
    out once."""
    known: dict[str, Allowance] = {}

    def allowance_of(key: str) -> Allowance:
        try:
            return known[key]
        except KeyError:
            pass
        try:
            params = policy.params(LimitKey.parse(key))
        except ValueError:
            found: Allowance = (None, 0.0)
        else:
            interval = params.interval
            found = (1.0 / interval if interval > 0 else None, params.burst + params.slot_width)
        if len(known) >= BUDGET_CACHE:
            known.clear()  # a bound, not a policy: a crawl has far fewer origins
        known[key] = found
        return found

    return allowance_of


def budget_from(
    policy: LimitPolicy, allowance: Callable[[str], Allowance] | None = None
) -> Callable[[str], float | None]:
    """A key's budget in cost units per second (requests per second for a site key)."""
    allowance_of = allowance or allowance_from(policy)
    return lambda key: allowance_of(key)[0]


def slack_from(
    policy: LimitPolicy, allowance: Callable[[str], Allowance] | None = None
) -> Callable[[str], float]:
    """A key's burst tolerance plus its slot width, seconds (0 for a key no policy knows)."""
    allowance_of = allowance or allowance_from(policy)
    return lambda key: allowance_of(key)[1]
