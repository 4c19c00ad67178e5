"""Which certificates count as one, which names a certificate covers, and what the evidence
tells a reader of ``courtier origins explain``."""

from __future__ import annotations

from courtier.origins.evidence import Kind
from courtier.origins.tls_evidence import (
    DIFFERENT_ISSUERS,
    SAME_CERTIFICATE,
    SAN_COVERS,
    TlsFacts,
    tls_facts,
    tls_relation,
)

ISSUER = ((("organizationName", "Example CA"),), (("commonName", "R1"),))
OTHER_ISSUER = ((("organizationName", "Other CA"),),)


def _cert(serial: str, issuer: object, *names: str) -> dict[str, object]:
    return {
        "issuer": issuer,
        "serialNumber": serial,
        "subjectAltName": tuple(("DNS", n) for n in names),
    }


def test_a_certificate_covers_its_exact_names_in_any_case_and_with_a_final_dot() -> None:
    facts = tls_facts(_cert("1", ISSUER, "Shop.Example.", "*.Shops.Example"))
    assert facts.san == ("*.shops.example", "shop.example")
    assert facts.covers("shop.example")
    assert facts.covers("SHOP.example.")
    assert facts.covers("a.shops.example.")
    assert not facts.covers("other.example")


def test_a_wildcard_covers_only_names_under_its_own_domain() -> None:
    facts = tls_facts(_cert("1", ISSUER, "*.shops.example"))
    assert facts.covers("a.shops.example")
    # Same number of labels, same ending text, another registered name.
    assert not facts.covers("a.myshops.example")


def test_malformed_issuer_pairs_are_left_out_of_the_issuer() -> None:
    issuer = ((("organizationName", "Example CA", "extra"),), (("commonName", "R1"),), ("x",))
    assert tls_facts(_cert("1", issuer, "a.example")).issuer == "commonName=R1"


def test_one_certificate_known_by_issuer_and_serial_alone_corroborates_strongly() -> None:
    # Without the DER bytes there is no fingerprint: issuer and serial name the certificate.
    a = tls_facts(_cert("0a", ISSUER, "a.example"))
    b = tls_facts(_cert("0A", ISSUER, "b.example"))
    relation = tls_relation("a.example", a, "b.example", b)
    assert relation is not None
    assert (relation.kind, relation.weight) == (Kind.TLS, SAME_CERTIFICATE)
    assert relation.value == "organizationName=Example CA,commonName=R1#0A"
    assert "a.example" in relation.detail and "b.example" in relation.detail


def test_one_certificate_is_named_by_its_fingerprint_in_the_evidence() -> None:
    a = tls_facts(_cert("1", ISSUER, "a.example"), b"one certificate")
    relation = tls_relation("a.example", a, "b.example", a)
    assert relation is not None and a.fingerprint is not None
    assert relation.value == a.fingerprint


def test_one_serial_from_two_issuers_is_two_certificates() -> None:
    a = tls_facts(_cert("0a", ISSUER, "a.example"))
    b = tls_facts(_cert("0a", OTHER_ISSUER, "b.example"))
    relation = tls_relation("a.example", a, "b.example", b)
    assert relation is not None
    assert (relation.kind, relation.weight) == (Kind.TLS_CONFLICT, DIFFERENT_ISSUERS)


def test_certificates_without_fingerprint_or_serial_are_not_one_certificate() -> None:
    a = TlsFacts(None, None, "organizationName=Example CA", ("a.example",))
    b = TlsFacts(None, None, "organizationName=Example CA", ("b.example",))
    assert tls_relation("a.example", a, "b.example", b) is None


def test_a_san_naming_the_other_site_either_way_round_corroborates_weakly() -> None:
    names_b = tls_facts(_cert("1", ISSUER, "a.example", "b.example"), b"one")
    alone = tls_facts(_cert("2", OTHER_ISSUER, "b.example"), b"two")
    for relation in (
        tls_relation("b.example", names_b, "a.example", alone),
        tls_relation("a.example", alone, "b.example", names_b),
    ):
        assert relation is not None
        assert (relation.kind, relation.value, relation.weight) == (Kind.TLS, "san", SAN_COVERS)
        assert "a.example" in relation.detail and "b.example" in relation.detail


def test_different_issuers_name_both_sites_in_the_evidence() -> None:
    a = tls_facts(_cert("1", ISSUER, "a.example"), b"one")
    b = tls_facts(_cert("2", OTHER_ISSUER, "b.example"), b"two")
    relation = tls_relation("a.example", a, "b.example", b)
    assert relation is not None and relation.value == "issuer"
    assert "a.example" in relation.detail and "b.example" in relation.detail


def test_a_certificate_without_issuer_contradicts_nothing() -> None:
    a = tls_facts(_cert("1", None, "a.example"), b"one")
    b = tls_facts(_cert("2", OTHER_ISSUER, "b.example"), b"two")
    assert tls_relation("a.example", a, "b.example", b) is None
    assert tls_relation("b.example", b, "a.example", a) is None
