"""What ``courtier origins explain`` and ``origins infer --json`` show: each decision's evidence
names the address or name it rests on and says why, and stored evidence reads back."""

from __future__ import annotations

from origin_facts import fingerprint, plinth, site

from courtier.origins.cluster import Assignment, cluster
from courtier.origins.evidence import Evidence, Kind
from courtier.origins.header_evidence import HeaderFingerprint


def test_a_fingerprint_is_described_by_what_makes_it_distinctive() -> None:
    described = HeaderFingerprint(
        server="Plinth/2.3",
        powered_by="PlinthSites",
        via=None,
        cookie_names=("plinth_sid", "plinth_ab"),
        platform_headers=("x-plinth-tenant", "x-plinth-region"),
        not_found_hash="0123456789abcdef0123",
        header_order=(),
        cdn=None,
    ).describe()
    assert described == (
        "Server: Plinth/2.3; X-Powered-By: PlinthSites; "
        "headers x-plinth-tenant, x-plinth-region; cookies plinth_sid, plinth_ab; "
        "404 page 0123456789ab"
    )


def test_a_fingerprint_with_nothing_distinctive_says_so() -> None:
    plain = HeaderFingerprint(None, None, None, (), (), None, (), None)
    assert plain.describe() == "no distinctive headers"


def test_an_assignment_as_json_has_the_documented_keys_and_rounded_confidence() -> None:
    evidence = Evidence(Kind.CNAME, "p.platform.test", 0.95, "2 sites CNAME to p.platform.test")
    assignment = Assignment("a.test", "cname:p.platform.test", 0.987654, (evidence,))
    assert assignment.to_json() == {
        "site": "a.test",
        "origin": "cname:p.platform.test",
        "confidence": 0.988,
        "evidence": [
            {
                "kind": "cname",
                "value": "p.platform.test",
                "weight": 0.95,
                "detail": "2 sites CNAME to p.platform.test",
            }
        ],
    }


def test_evidence_reads_back_from_its_json_and_missing_fields_are_empty() -> None:
    evidence = Evidence(Kind.TLS, "san", 0.123456, "named")
    assert evidence.to_json()["weight"] == 0.123
    assert Evidence.from_json(evidence.to_json()) == Evidence(Kind.TLS, "san", 0.123, "named")
    assert Evidence.from_json({"kind": "cdn"}) == Evidence(Kind.CDN, "", 0.0, "")


def test_a_site_without_distinctive_headers_joins_its_address_and_the_evidence_says_why() -> None:
    plain = fingerprint("c.test", server="OtherServer")  # nothing distinctive, another server
    result = cluster(
        [
            site("a.test", "192.0.2.5", headers=plinth("a.test")),
            site("b.test", "192.0.2.5", headers=plinth("b.test")),
            site("c.test", "192.0.2.5", headers=plain),
        ]
    )
    assert result["c.test"].origin == result["a.test"].origin
    by_kind = {e.kind: e for e in result["c.test"].evidence}
    conflict = by_kind[Kind.HEADER_CONFLICT]
    assert conflict.value == "192.0.2.5"
    assert conflict.detail == "on 192.0.2.5 but its Server 'OtherServer' is not 'Plinth/2.3'"
    shared = by_kind[Kind.SHARED_ADDRESS]
    assert shared.value == "192.0.2.5"
    assert shared.detail == (
        "shares 192.0.2.5 with 2 sites of one platform; its own headers are not distinctive"
    )
