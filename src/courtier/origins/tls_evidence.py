"""TLS evidence: the certificate a site presents, as corroboration only.

Input is certificate data as Python's ``ssl`` module gives it (``getpeercert()``'s dict, and the
DER bytes from ``getpeercert(binary_form=True)`` for the fingerprint), so this module does no
I/O and needs no TLS to test.

Rules:
- Certificates never place a site on their own: one certificate may legitimately cover unrelated
  customers of a CDN or a certificate reseller. They only raise or lower the confidence of a
  grouping DNS or headers made.
- Two sites presenting the same certificate (same SHA-256 fingerprint, or the same issuer and
  serial) corroborate strongly; a SAN list that covers the other site corroborates weakly.
- Two sites in one group presenting certificates from different issuers, neither covering the
  other, lower the confidence a little: one platform usually buys its certificates one way.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass

from courtier.origins.evidence import Evidence, Kind

SAME_CERTIFICATE = 0.3
SAN_COVERS = 0.15
DIFFERENT_ISSUERS = -0.1


@dataclass(frozen=True, slots=True)
class TlsFacts:
    fingerprint: str | None  # SHA-256 of the DER certificate, hex
    serial: str | None
    issuer: str | None
    san: tuple[str, ...]  # DNS names, lowercase

    def covers(self, host: str) -> bool:
        host = host.lower().rstrip(".")
        for name in self.san:
            if name == host:
                return True
            if (
                name.startswith("*.")
                and host.count(".") == name.count(".")
                and host.endswith(name[1:])
            ):
                return True
        return False


def _rdn_text(rdns: object) -> str | None:
    """``getpeercert()``'s issuer, a tuple of RDNs of (key, value) pairs, as ``key=value,...``."""
    if not isinstance(rdns, tuple | list):
        return None
    parts = []
    for rdn in rdns:
        if isinstance(rdn, tuple | list):
            for pair in rdn:
                if isinstance(pair, tuple | list) and len(pair) == 2:
                    parts.append(f"{pair[0]}={pair[1]}")
    return ",".join(parts) or None


def tls_facts(peercert: Mapping[str, object], der: bytes | None = None) -> TlsFacts:
    """Facts from ``ssl.SSLSocket.getpeercert()`` (and its binary form for the fingerprint)."""
    san_entries = peercert.get("subjectAltName", ())
    san: list[str] = []
    if isinstance(san_entries, tuple | list):
        for entry in san_entries:
            if isinstance(entry, tuple | list) and len(entry) == 2 and entry[0] == "DNS":
                san.append(str(entry[1]).lower().rstrip("."))
    serial = peercert.get("serialNumber")
    return TlsFacts(
        fingerprint=hashlib.sha256(der).hexdigest() if der else None,
        serial=str(serial).upper() if serial else None,
        issuer=_rdn_text(peercert.get("issuer")),
        san=tuple(sorted(set(san))),
    )


def tls_relation(host_a: str, a: TlsFacts, host_b: str, b: TlsFacts) -> Evidence | None:
    """How two sites' certificates bear on their being one origin (None: they say nothing)."""
    same = (a.fingerprint is not None and a.fingerprint == b.fingerprint) or (
        a.serial is not None and a.serial == b.serial and a.issuer == b.issuer
    )
    if same:
        value = a.fingerprint or f"{a.issuer}#{a.serial}"
        return Evidence(
            Kind.TLS, value[:64], SAME_CERTIFICATE, f"{host_a} and {host_b} present one certificate"
        )
    if a.covers(host_b) or b.covers(host_a):
        return Evidence(
            Kind.TLS,
            "san",
            SAN_COVERS,
            f"the certificate of one of {host_a}, {host_b} names the other",
        )
    if a.issuer and b.issuer and a.issuer != b.issuer:
        return Evidence(
            Kind.TLS_CONFLICT,
            "issuer",
            DIFFERENT_ISSUERS,
            f"{host_a} and {host_b} have certificates from different issuers",
        )
    return None
