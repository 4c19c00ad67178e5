"""TLS evidence from certificate data: corroboration up or down, never a decision on its own."""

from __future__ import annotations

from courtier.origins.evidence import Kind
from courtier.origins.tls_evidence import TlsFacts, tls_facts, tls_relation

ISSUER_A = (
    (("countryName", "US"),),
    (("organizationName", "Example CA"),),
    (("commonName", "R1"),),
)
ISSUER_B = ((("organizationName", "Other CA"),),)


def _peercert(serial: str, issuer: object, *names: str) -> dict[str, object]:
    return {
        "subject": ((("commonName", names[0]),),),
        "issuer": issuer,
        "serialNumber": serial,
        "subjectAltName": (*(("DNS", n) for n in names), ("IP Address", "192.0.2.1")),
    }


def test_facts_come_from_getpeercert_data_and_der_bytes() -> None:
    facts = tls_facts(
        _peercert("0a1b", ISSUER_A, "Shop.Example", "*.shops.example"), b"\x30\x82der"
    )
    assert facts.san == ("*.shops.example", "shop.example")
    assert facts.serial == "0A1B"
    assert facts.issuer == "countryName=US,organizationName=Example CA,commonName=R1"
    assert facts.fingerprint is not None and len(facts.fingerprint) == 64


def test_wildcard_covers_exactly_one_label() -> None:
    facts = tls_facts(_peercert("1", ISSUER_A, "*.shops.example"))
    assert facts.covers("a.shops.example")
    assert not facts.covers("a.b.shops.example")
    assert not facts.covers("shops.example")


def test_one_certificate_on_two_sites_corroborates_strongly() -> None:
    a = tls_facts(_peercert("1", ISSUER_A, "a.example", "b.example"), b"same")
    b = tls_facts(_peercert("1", ISSUER_A, "a.example", "b.example"), b"same")
    relation = tls_relation("a.example", a, "b.example", b)
    assert relation is not None and relation.kind is Kind.TLS and relation.weight > 0


def test_a_san_naming_the_other_site_corroborates_weakly() -> None:
    a = tls_facts(_peercert("1", ISSUER_A, "*.shops.example"), b"one")
    b = tls_facts(_peercert("2", ISSUER_A, "b.shops.example"), b"two")
    same = tls_relation("a.example", a, "b.example", a)
    covers = tls_relation("a.shops.example", a, "b.shops.example", b)
    assert same is not None and covers is not None
    assert 0 < covers.weight < same.weight


def test_certificates_from_different_issuers_lower_confidence() -> None:
    a = tls_facts(_peercert("1", ISSUER_A, "a.example"), b"one")
    b = tls_facts(_peercert("2", ISSUER_B, "b.example"), b"two")
    relation = tls_relation("a.example", a, "b.example", b)
    assert relation is not None and relation.kind is Kind.TLS_CONFLICT and relation.weight < 0


def test_unrelated_certificates_of_one_issuer_say_nothing() -> None:
    a = tls_facts(_peercert("1", ISSUER_A, "a.example"), b"one")
    b = tls_facts(_peercert("2", ISSUER_A, "b.example"), b"two")
    assert tls_relation("a.example", a, "b.example", b) is None


def test_garbage_certificate_data_gives_empty_facts() -> None:
    facts = tls_facts({"subjectAltName": "nonsense", "issuer": 7})
    assert facts == TlsFacts(None, None, None, ())


def test_one_certificate_known_by_issuer_and_serial_is_named_in_at_most_64_characters() -> None:
    issuer = "O=" + "A Certification Authority With A Very Long Name " * 2
    a = TlsFacts(fingerprint=None, serial="0A1B", issuer=issuer, san=("a.test",))
    b = TlsFacts(fingerprint=None, serial="0A1B", issuer=issuer, san=("b.test",))
    evidence = tls_relation("a.test", a, "b.test", b)
    assert evidence is not None and evidence.kind is Kind.TLS
    assert evidence.value == f"{issuer}#0A1B"[:64]
