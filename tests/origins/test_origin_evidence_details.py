"""What ``courtier origins explain`` reads from the clusterer's evidence: each decision names
the name, address or fingerprint it rests on and says why in words a person can check, down
to the edge's proof (the mark, the stacks, the backends it saw) and the group's sample."""

from __future__ import annotations

from origin_facts import branded, failed, fingerprint, marked, plinth, site

from courtier.origins.cluster import cluster
from courtier.origins.evidence import Evidence, Kind
from courtier.origins.header_evidence import HeaderFingerprint

SHARED = "203.0.113.9"  # in no CDN's published range
UNKNOWN_EDGE = "edge.quickserve.test"  # nothing in its name says CDN


def test_a_failed_lookup_names_its_error_and_its_class() -> None:
    result = cluster([failed("gone.test", "servfail: the server failed: twice")])
    assert result["gone.test"].evidence == (
        Evidence(Kind.DNS_FAILURE, "servfail", 0.3, "servfail: the server failed: twice"),
    )


def test_an_edge_proven_by_its_marks_names_the_first_mark_and_up_to_four_stacks() -> None:
    facts = [site(f"s{n}.test", SHARED, headers=marked(f"s{n}", n)) for n in range(5)]
    facts += [site(f"t{n}.test", SHARED, headers=branded(f"t{n}", n)) for n in range(2)]
    result = cluster(facts)
    proof = (
        f"behind a CDN edge: {SHARED}: 7 sites reach it, every answer carries a CDN's own mark "
        "(response header CF-Ray: 0000000000000001-FRA has a ray-id edge's shape) and they "
        "come from 5 different server stacks (apache, caddy, gunicorn, microsoft-iis)"
    )
    no_backend = "; no distinctive backend evidence, so an origin of its own"
    assert result["s0.test"].evidence == (Evidence(Kind.CDN, "edge", 0.6, proof + no_backend),)
    # A tenant with a backend of its own is grouped by it, so its edge evidence says no more.
    grouped = (
        "2 sites behind CDN edges answer with one distinctive fingerprint: "
        "Server: nginx; headers x-brand-tenant; cookies brand_sid"
    )
    signature = branded("t0", 0).signature
    assert signature is not None
    assert result["t0.test"].evidence == (
        Evidence(Kind.CDN, "edge", 0.6, proof),
        Evidence(Kind.HEADERS, signature, 0.85, grouped),
    )


def _platform(name: str) -> HeaderFingerprint:
    return fingerprint(
        "x", (f"X-{name}", "1"), ("Set-Cookie", f"{name.lower()}_sid=1"), server="nginx"
    )


def test_an_edge_proven_by_different_backends_names_two_of_them() -> None:
    facts = [
        site(f"{p}{i}.test", f"198.51.100.{10 * n + i}", cname=(UNKNOWN_EDGE,), headers=fp)
        for n, p in enumerate(("alpha", "beta", "gamma"))
        for fp in [_platform(p)]
        for i in range(2)
    ]
    result = cluster(facts)
    edge = [e for e in result["alpha0.test"].evidence if e.kind is Kind.CDN]
    assert [e.detail for e in edge] == [
        f"behind a CDN edge: {UNKNOWN_EDGE}: 6 sites reach it and their answers show 3 different "
        "backends (Server: nginx; headers x-alpha; cookies alpha_sid; "
        "Server: nginx; headers x-beta; cookies beta_sid)"
    ]


def test_an_address_with_several_backends_before_its_sample_says_why_it_holds_them() -> None:
    other = fingerprint("x", ("X-Other-Platform", "1"), server="Other")
    facts = [
        site("a.test", SHARED, headers=plinth("a.test")),
        site("b.test", SHARED, headers=other),
        site("c.test", SHARED),
    ]
    result = cluster(facts)
    assert result["c.test"].evidence == (
        Evidence(
            Kind.SHARED_ADDRESS,
            SHARED,
            0.5,
            f"3 sites resolve to {SHARED} (no PTR name; kept together: no evidence that "
            "different backends serve it)",
        ),
        Evidence(
            Kind.HEADER_CONFLICT,
            SHARED,
            -0.25,
            f"{SHARED} answers with 2 distinctive backends so far; kept together until enough "
            "of its sites have answered",
        ),
    )
    assert result["c.test"].provisional
