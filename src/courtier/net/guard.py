"""The SSRF guard: may the crawler connect to this host, and to which addresses?

Rules:

- The host is canonical (``courtier.url.canonical_host``). An IP literal is judged directly,
  without DNS. A special-use local name (``localhost``, ``*.localhost``, ``*.local``, single
  labels, ... see ``policy.local_name_reason``) is refused without a query.
- Any other name is resolved (A then AAAA) and *every* address is judged: one blocked address
  refuses the whole host. Picking the good addresses would let a hostile zone mix in a private
  address and win whenever the fetcher's choice or a retry lands on it.
- The ``Resolution`` lists the canonical addresses judged. When it is allowed, those are the
  only addresses the fetcher may connect to (pinning): it never resolves the name again.
- ``Guard.resolve`` never raises (cancellation apart): a DNS failure, a garbage answer or a
  broken resolver is a refusal with a reason code, logged on ``courtier.net.guard``.
- The guard runs before every request, so it remembers (at most ``MEMO_SIZE`` hosts each,
  oldest out first) what depends on the host name alone (literal, malformed, local) and the
  verdict on the last address set each host resolved to. The policy is immutable, so the
  same addresses get the same verdict; any other answer (a rebinding one included) is
  judged afresh, address by address.
"""

from __future__ import annotations

import ipaddress
import logging
from dataclasses import dataclass
from typing import TypeVar

from courtier.net.policy import AddressPolicy, local_name_reason
from courtier.net.resolve import ResolveError, Resolver

__all__ = ["Guard", "Resolution"]

logger = logging.getLogger("courtier.net.guard")

_MAX_NAME_LENGTH = 253  # RFC 1035 §2.3.4, without the trailing dot
_MAX_LABEL_LENGTH = 63
_NEVER_IN_A_NAME = frozenset(" /\\@:[]%")


@dataclass(frozen=True, slots=True)
class Resolution:
    """The guard's answer for one host: the addresses judged and the verdict on them."""

    host: str
    addresses: tuple[str, ...]
    allowed: bool
    reason: str
    detail: str


_V = TypeVar("_V")

_ASK_DNS = object()
"""Memo value: the name alone decides nothing, its addresses must be looked up."""


class Guard:
    """Resolves hosts and judges every address with the policy (see the module rules)."""

    MEMO_SIZE = 1 << 16

    __slots__ = ("_by_name", "_judged", "_policy", "_resolver")

    def __init__(self, policy: AddressPolicy, resolver: Resolver) -> None:
        self._policy = policy
        self._resolver = resolver
        self._by_name: dict[str, Resolution | object] = {}
        self._judged: dict[str, Resolution] = {}

    @property
    def policy(self) -> AddressPolicy:
        return self._policy

    async def resolve(self, host: str) -> Resolution:
        """Judge ``host``; the result's addresses are the only ones to connect to."""
        resolution = await self._judge(host)
        if not resolution.allowed:
            logger.info(
                "refused host %s (%s): %s", resolution.host, resolution.reason, resolution.detail
            )
        return resolution

    def judge_name(self, host: str) -> Resolution | None:
        """The verdict ``host`` gets without asking DNS (an address literal, a malformed or
        local name); None when only its addresses can decide."""
        decided = self._judge_name(host)
        return decided if isinstance(decided, Resolution) else None

    async def _judge(self, host: str) -> Resolution:
        decided = self._by_name.get(host)
        if decided is None:
            decided = self._judge_name(host)
            _remember(self._by_name, host, decided)
        if isinstance(decided, Resolution):
            return decided
        try:
            addresses = await self._resolver.resolve(host)
        except ResolveError as error:
            return Resolution(host, (), False, error.code, str(error))
        except Exception as error:  # a Resolver that breaks its contract must not break us
            detail = f"resolver failed: {type(error).__name__}: {error}"
            return Resolution(host, (), False, "dns-error", detail)
        if not addresses:
            return Resolution(host, (), False, "no-address", f"{host} resolved to no address")
        last = self._judged.get(host)
        if last is not None and last.addresses == addresses:
            return last
        resolution = self._judge_addresses(host, tuple(addresses))
        _remember(self._judged, host, resolution)
        return resolution

    def _judge_name(self, host: str) -> Resolution | object:
        """What the name alone decides: a verdict, or ``_ASK_DNS``."""
        literal = _ip_literal(host)
        if literal is not None:
            return self._judge_addresses(host, (literal,))
        malformed = _malformed_name(host)
        if malformed is not None:
            return Resolution(host, (), False, "invalid-host", malformed)
        local = local_name_reason(host)
        if local is not None:
            return Resolution(host, (), False, local[0], local[1])
        return _ASK_DNS

    def _judge_addresses(self, host: str, addresses: tuple[str, ...]) -> Resolution:
        allow_listed = False
        for address in addresses:
            verdict = self._policy.check(address)
            if not verdict.allowed:
                return Resolution(host, addresses, False, verdict.reason, verdict.detail)
            allow_listed = allow_listed or verdict.reason == "allow-listed"
        if allow_listed:
            return Resolution(
                host,
                addresses,
                True,
                "allow-listed",
                "every address is allowed, some by the allow-list",
            )
        return Resolution(host, addresses, True, "ok", "every address is globally reachable")


def _remember(memo: dict[str, _V], host: str, value: _V) -> None:
    memo.pop(host, None)
    memo[host] = value
    if len(memo) > Guard.MEMO_SIZE:
        del memo[next(iter(memo))]


def _ip_literal(host: str) -> str | None:
    """The canonical text of ``host`` if it is an IP address (brackets tolerated)."""
    text = host.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if ":" not in text and not text[-1:].isdigit():
        return None  # every IPv6 address has a colon, every IPv4 one ends in a digit
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return None


def _malformed_name(host: str) -> str | None:
    """Why ``host`` cannot be a DNS name, or ``None`` if it can be queried."""
    name = host.rstrip(".")
    if len(name) > _MAX_NAME_LENGTH:
        return f"host name longer than {_MAX_NAME_LENGTH} characters"
    labels = name.split(".")
    last = labels[-1]
    if last.isdigit() or last.startswith("0x"):
        # WHATWG's "ends in a number": an IPv4 spelling that canonicalisation did not turn
        # into a dotted quad. Fail closed rather than send it to DNS.
        return f"{host!r} looks like a non-canonical IPv4 address"
    for label in labels:
        if not label or len(label) > _MAX_LABEL_LENGTH:
            return f"{host!r} has an empty or over-long label"
        if not label.isascii() or not label.isprintable() or not _NEVER_IN_A_NAME.isdisjoint(label):
            return f"{host!r} has characters no canonical host name contains"
    return None
