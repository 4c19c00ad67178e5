"""Evidence records: what a decision about a site's origin rests on.

Every signal the clusterer uses or rejects is kept as an ``Evidence`` with a ``kind`` (a short
stable code), a ``value`` (the shared name, address or fingerprint), a ``weight`` in [-1, 1]
(positive for "shares servers with", negative for "contradicts it") and a human ``detail``.
They are stored as JSON with each site's origin, so ``courtier origins explain`` can show why.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum


class Kind(StrEnum):
    CNAME = "cname"  # a shared name in the CNAME chains
    PTR_ADDRESS = "ptr-address"  # a shared address whose PTR name names a server
    SHARED_ADDRESS = "shared-address"  # a shared address DNS cannot explain (no PTR, no CNAME)
    HEADERS = "headers"  # a shared distinctive header fingerprint on a shared address
    HEADER_CONFLICT = "header-conflict"  # headers that contradict the DNS grouping
    CDN = "cdn"  # a CDN edge: its names and addresses are not an origin
    TLS = "tls"  # certificate corroboration (never decides alone)
    TLS_CONFLICT = "tls-conflict"
    OWN_ADDRESS = "own-address"  # nobody else resolves to its addresses
    DNS_FAILURE = "dns-failure"  # no DNS answer: the site stays on its own


@dataclass(frozen=True, slots=True)
class Evidence:
    kind: Kind
    value: str
    weight: float
    detail: str = ""

    def __post_init__(self) -> None:
        if not -1.0 <= self.weight <= 1.0:
            raise ValueError(f"evidence weight must be in [-1, 1], got {self.weight}")

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind.value,
            "value": self.value,
            "weight": round(self.weight, 3),
            "detail": self.detail,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Evidence:
        weight = data.get("weight", 0.0)
        if not isinstance(weight, int | float):
            raise ValueError(f"evidence weight must be a number, got {weight!r}")
        return cls(
            Kind(str(data["kind"])),
            str(data.get("value", "")),
            float(weight),
            str(data.get("detail", "")),
        )


def combined_confidence(evidence: Iterable[Evidence]) -> float:
    """Noisy-OR of the positive weights, then each negative weight takes its share off.

    Independent signals that each point the same way make the decision surer than any one of
    them; a contradiction lowers it in proportion to its own weight. The result is in [0, 1].
    """
    doubt = 1.0
    penalty = 1.0
    for item in evidence:
        if item.weight > 0:
            doubt *= 1.0 - item.weight
        elif item.weight < 0:
            penalty *= 1.0 + item.weight
    return max(0.0, min(1.0, (1.0 - doubt) * penalty))
