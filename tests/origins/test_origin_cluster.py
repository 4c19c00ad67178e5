"""The clusterer: strong DNS evidence merges, headers decide shared addresses, CDNs never merge."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from origin_facts import failed, fingerprint, plinth, site

from courtier.origins.cdn import CdnRules
from courtier.origins.cluster import Assignment, OriginChange, SiteFacts, cluster, origin_changes
from courtier.origins.evidence import Kind
from courtier.origins.header_evidence import HeaderFingerprint
from courtier.origins.tls_evidence import TlsFacts, tls_facts

PTR = {"192.0.2.10": ("web1.host.example",), "192.0.2.11": ("web2.host.example",)}


def kinds(a: Assignment) -> set[Kind]:
    return {e.kind for e in a.evidence}


def test_sites_sharing_a_cname_target_are_one_origin() -> None:
    chain = ("tenants.platform.example", "edge.platform.example")
    result = cluster(
        [
            site("a.test", "192.0.2.10", cname=chain),
            site("b.test", "192.0.2.10", cname=chain),
            site("c.test", "198.51.100.7"),
        ]
    )
    assert result["a.test"].origin == result["b.test"].origin == "cname:edge.platform.example"
    assert Kind.CNAME in kinds(result["a.test"])
    assert result["c.test"].origin == "site:c.test"


def test_the_origin_id_stays_when_a_tenant_cnames_straight_to_the_deepest_link() -> None:
    chain = ("tenants.platform.example", "edge.platform.example")
    before = cluster([site(h, "192.0.2.10", cname=chain) for h in ("a.test", "b.test")])
    after = cluster(
        [
            *(site(h, "192.0.2.10", cname=chain) for h in ("a.test", "b.test")),
            site("c.test", "192.0.2.10", cname=("edge.platform.example",)),
        ]
    )
    assert origin_changes({s: a.origin for s, a in before.items()}, after) == [
        OriginChange("c.test", None, "cname:edge.platform.example")
    ]


def test_a_shared_address_with_a_ptr_name_is_one_origin() -> None:
    result = cluster(
        [
            site("a.test", "192.0.2.10", ptr={"192.0.2.10": PTR["192.0.2.10"]}),
            site("b.test", "192.0.2.10", ptr={"192.0.2.10": PTR["192.0.2.10"]}),
        ]
    )
    assert result["a.test"].origin == result["b.test"].origin == "ptr:web1.host.example"
    assert result["a.test"].confidence >= 0.9


def test_a_site_on_its_own_address_is_its_own_origin() -> None:
    result = cluster([site("a.test", "192.0.2.1"), site("b.test", "192.0.2.2")])
    assert result["a.test"].origin == "site:a.test"
    assert result["b.test"].origin == "site:b.test"
    assert kinds(result["a.test"]) == {Kind.OWN_ADDRESS}


def test_an_unexplained_shared_address_merges_with_low_confidence_when_not_probed() -> None:
    result = cluster([site("a.test", "192.0.2.5"), site("b.test", "192.0.2.5")])
    assert result["a.test"].origin == result["b.test"].origin == "addr:192.0.2.5"
    assert kinds(result["a.test"]) == {Kind.SHARED_ADDRESS}
    assert result["a.test"].confidence < 0.6


def test_a_shared_header_signature_on_a_shared_address_is_one_origin() -> None:
    result = cluster([site(h, "192.0.2.5", headers=plinth(h)) for h in ("a.test", "b.test")])
    assert result["a.test"].origin == result["b.test"].origin
    assert result["a.test"].origin.startswith("hdr:")
    assert Kind.HEADERS in kinds(result["a.test"])
    assert result["a.test"].confidence >= 0.85


def test_a_site_whose_server_contradicts_the_platform_joins_it_with_less_confidence() -> None:
    """A different Server product is no proof of another backend (one front may serve both
    stacks): a wrong split would break the promise to the server, so it joins."""
    result = cluster(
        [
            site("a.test", "192.0.2.5", headers=plinth("a.test")),
            site("b.test", "192.0.2.5", headers=plinth("b.test")),
            site("odd.test", "192.0.2.5", headers=fingerprint("odd.test", server="Apache")),
            site("quiet.test", "192.0.2.5"),
        ]
    )
    assert result["odd.test"].origin == result["a.test"].origin
    assert Kind.HEADER_CONFLICT in kinds(result["odd.test"])
    assert result["odd.test"].confidence < result["a.test"].confidence
    # Not probed: nothing contradicts the shared address, so it joins, with low confidence.
    assert result["quiet.test"].origin == result["a.test"].origin
    assert result["quiet.test"].confidence < result["a.test"].confidence


def test_two_platforms_behind_one_address_are_two_origins() -> None:
    other = fingerprint("x", ("X-Other-Platform", "1"), server="OtherServer")
    result = cluster(
        [
            site("a.test", "192.0.2.5", headers=plinth("a.test")),
            site("b.test", "192.0.2.5", headers=plinth("b.test")),
            site("c.test", "192.0.2.5", headers=other),
            site("d.test", "192.0.2.5", headers=other),
        ]
    )
    assert result["a.test"].origin == result["b.test"].origin
    assert result["c.test"].origin == result["d.test"].origin
    assert result["a.test"].origin != result["c.test"].origin
    # The positive evidence for the split is named: two different backends answer there.
    edge = [e for e in result["a.test"].evidence if e.kind is Kind.CDN]
    assert edge and "2 different backends" in edge[0].detail


def test_sites_behind_one_cdn_are_not_merged() -> None:
    def world(answered: bool) -> list[SiteFacts]:
        return [
            site(
                host,
                "203.0.113.9",
                cname=(name,),
                headers=fingerprint(host, server=server) if answered else None,
            )
            for host, name, server in (
                ("a.test", "d111.cloudfront.net", "nginx"),
                ("b.test", "d222.cloudfront.net", "Apache"),
                ("c.test", "d111.cloudfront.net", "Caddy"),
            )
        ]

    result = cluster(world(answered=True))
    assert len({a.origin for a in result.values()}) == 3
    assert all(Kind.CDN in kinds(a) for a in result.values())
    # Before their answers, the two sites sharing one distribution are one origin, for now:
    # a platform's tenants behind its own distribution must not start on a budget each.
    before = cluster(world(answered=False))
    assert before["a.test"].origin == before["c.test"].origin != before["b.test"].origin
    assert before["a.test"].provisional


def test_a_platforms_own_distribution_groups_its_branded_tenants() -> None:
    tenants = [
        site(f"t{n}.test", "203.0.113.9", cname=("d333.cloudfront.net",), headers=plinth(f"t{n}"))
        for n in range(4)
    ]
    result = cluster(tenants)
    assert {a.origin for a in result.values()} == {"cname:d333.cloudfront.net"}
    assert not any(a.provisional for a in result.values())


def test_a_platform_name_before_the_cdn_in_the_chain_still_merges() -> None:
    chain = ("shops.platform.example", "platform.example.cdn.cloudflare.net")
    result = cluster(
        [site("a.test", "203.0.113.9", cname=chain), site("b.test", "203.0.113.9", cname=chain)]
    )
    assert result["a.test"].origin == result["b.test"].origin == "cname:shops.platform.example"


def test_a_cdns_marks_alone_are_no_proof_that_different_backends_answer() -> None:
    """Identical answers through a CDN: a platform behind it is as likely as strangers, so
    the sites stay one origin unless the address is in a range the CDN publishes."""
    edge = fingerprint(
        "x", ("CF-Ray", "8a1b2c3d4e5f6789-FRA"), ("X-Powered-By", "PHP/8.2"), server="cloudflare"
    )
    result = cluster([site(h, "203.0.113.9", headers=edge) for h in ("a.test", "b.test")])
    assert result["a.test"].origin == result["b.test"].origin
    published = cluster([site(h, "104.16.1.1", headers=edge) for h in ("a.test", "b.test")])
    assert published["a.test"].origin != published["b.test"].origin


def test_a_distinctive_backend_shared_behind_a_cdn_is_one_origin() -> None:
    edge = fingerprint("x", ("CF-Ray", "1-FRA"), ("X-Shop", "1"), server="cloudflare")
    result = cluster([site(h, "203.0.113.9", headers=edge) for h in ("a.test", "b.test")])
    assert result["a.test"].origin == result["b.test"].origin
    assert result["a.test"].origin.startswith("hdr:")


def test_cdn_ptr_names_prevent_a_merge() -> None:
    ptr = {"203.0.113.9": ("a203-0-113-9.deploy.static.akamaitechnologies.com",)}
    result = cluster([site(h, "203.0.113.9", ptr=ptr) for h in ("a.test", "b.test")])
    assert result["a.test"].origin != result["b.test"].origin


def test_configured_cdn_suffixes_are_honoured() -> None:
    facts = [
        site(h, "203.0.113.9", cname=("edge.edgeco.example",), headers=fingerprint(h))
        for h in ("a.test", "b.test")
    ]
    assert cluster(facts)["a.test"].origin == cluster(facts)["b.test"].origin
    rules = CdnRules(extra_suffixes=("edgeco.example",))
    assert cluster(facts, rules)["a.test"].origin != cluster(facts, rules)["b.test"].origin


def test_a_site_whose_dns_failed_stays_alone() -> None:
    result = cluster([failed("gone.test"), site("a.test", "192.0.2.5")])
    assert result["gone.test"].origin == "site:gone.test"
    assert kinds(result["gone.test"]) == {Kind.DNS_FAILURE}


def test_headers_contradicting_dns_lower_confidence_but_do_not_split() -> None:
    chain = ("tenants.platform.example",)
    other = fingerprint("x", server="OtherServer")  # generic: no backend of its own shown
    facts = [
        site(f"t{i}.test", "192.0.2.10", cname=chain, headers=plinth(f"t{i}")) for i in range(3)
    ]
    facts.append(site("odd.test", "192.0.2.10", cname=chain, headers=other))
    result = cluster(facts)
    assert result["odd.test"].origin == result["t0.test"].origin
    assert Kind.HEADER_CONFLICT in kinds(result["odd.test"])
    assert result["odd.test"].confidence < result["t0.test"].confidence


def test_two_distinctive_backends_behind_one_name_are_proof_of_an_edge() -> None:
    chain = ("shared.example",)
    other = fingerprint("x", ("X-Other-Platform", "1"), server="OtherServer")
    facts = [
        site(f"t{i}.test", "192.0.2.10", cname=chain, headers=plinth(f"t{i}")) for i in range(3)
    ]
    facts.append(site("odd.test", "192.0.2.10", cname=chain, headers=other))
    # One answer of another backend could be one tenant's own app: no proof yet.
    assert len({a.origin for a in cluster(facts).values()}) == 1
    facts.append(site("odd2.test", "192.0.2.10", cname=chain, headers=other))
    result = cluster(facts)
    assert result["odd.test"].origin == result["odd2.test"].origin != result["t0.test"].origin
    assert len({result[f"t{i}.test"].origin for i in range(3)}) == 1
    # ... unless the servers' PTR names are the shared name's own domain: a platform.
    ptr = {"192.0.2.10": ("web1.shared.example",)}
    named = cluster(
        [site(f.host, "192.0.2.10", cname=chain, ptr=ptr, headers=f.headers) for f in facts]
    )
    assert len({a.origin for a in named.values()}) == 1


def _cert(serial: str, der: bytes, *names: str, issuer: str = "CA") -> TlsFacts:
    return tls_facts(
        {
            "issuer": ((("organizationName", issuer),),),
            "serialNumber": serial,
            "subjectAltName": tuple(("DNS", n) for n in names),
        },
        der,
    )


def test_one_certificate_alone_never_merges_sites() -> None:
    cert = _cert("1", b"shared", "a.test", "b.test")
    result = cluster(
        [
            site("a.test", "192.0.2.1", tls=cert),
            site("b.test", "192.0.2.2", tls=cert),
        ]
    )
    assert result["a.test"].origin != result["b.test"].origin


def test_a_shared_certificate_raises_and_different_issuers_lower_confidence() -> None:
    shared = _cert("1", b"shared", "a.test", "b.test")
    plain = cluster([site(h, "192.0.2.5") for h in ("a.test", "b.test")])
    backed = cluster([site(h, "192.0.2.5", tls=shared) for h in ("a.test", "b.test")])
    mixed = cluster(
        [
            site("a.test", "192.0.2.5", tls=_cert("1", b"one", "a.test", issuer="CA one")),
            site("b.test", "192.0.2.5", tls=_cert("2", b"two", "b.test", issuer="CA two")),
        ]
    )
    assert backed["a.test"].confidence > plain["a.test"].confidence
    assert Kind.TLS in kinds(backed["a.test"])
    assert mixed["a.test"].confidence < plain["a.test"].confidence
    assert Kind.TLS_CONFLICT in kinds(mixed["a.test"])


def test_a_new_host_on_a_known_address_changes_the_origin_and_the_change_is_reported() -> None:
    before = cluster([site("a.test", "192.0.2.5")])
    after = cluster([site("a.test", "192.0.2.5"), site("new.test", "192.0.2.5")])
    changes = origin_changes({s: a.origin for s, a in before.items()}, after)
    assert {(c.site, c.old, c.new) for c in changes} == {
        ("a.test", "site:a.test", "addr:192.0.2.5"),
        ("new.test", None, "addr:192.0.2.5"),
    }


def test_the_same_facts_give_the_same_origins_whatever_their_order() -> None:
    facts = [
        site("a.test", "192.0.2.5", headers=plinth("a.test")),
        site("b.test", "192.0.2.5", headers=plinth("b.test")),
        site("c.test", "192.0.2.10", cname=("x.platform.example",)),
        site("d.test", "192.0.2.11", cname=("x.platform.example",)),
        site("e.test", "192.0.2.12"),
    ]
    assert cluster(facts) == cluster(list(reversed(facts)))


@given(st.lists(st.integers(min_value=1, max_value=250), min_size=1, max_size=30, unique=True))
def test_sites_on_distinct_addresses_without_cnames_are_never_merged(octets: list[int]) -> None:
    facts = [site(f"s{o}.test", f"198.51.100.{o}", headers=plinth(f"s{o}")) for o in octets]
    result = cluster(facts)
    assert len({a.origin for a in result.values()}) == len(octets)


def test_an_origin_is_named_after_the_key_most_of_its_sites_share() -> None:
    """Three sites share an address, two of them a platform's name too: the address is what
    most of them share, so it names the origin, though a CNAME is the stronger kind."""
    result = cluster(
        [
            site("a.test", "192.0.2.5", cname=("shops.platform.example",)),
            site("b.test", "192.0.2.5", cname=("shops.platform.example",)),
            site("c.test", "192.0.2.5"),
        ]
    )
    assert {a.origin for a in result.values()} == {"addr:192.0.2.5"}


def test_two_origins_of_one_platform_signature_get_distinct_ids() -> None:
    """One platform's tenants on two addresses (no PTR, no shared name) are two origins whose
    best key is the same signature: the second is named after its first site too."""
    result = cluster(
        [
            *(site(h, "192.0.2.5", headers=plinth(h)) for h in ("a.test", "b.test")),
            *(site(h, "192.0.2.6", headers=plinth(h)) for h in ("c.test", "d.test")),
        ]
    )
    first = result["a.test"].origin
    assert first.startswith("hdr:") and result["b.test"].origin == first
    assert result["c.test"].origin == result["d.test"].origin == f"{first}#c.test"


def test_a_site_whose_own_address_is_shared_by_nobody_says_which_addresses() -> None:
    result = cluster([site("a.test", "192.0.2.1", "192.0.2.2")])
    assert [(e.kind, e.value, e.detail) for e in result["a.test"].evidence] == [
        (
            Kind.OWN_ADDRESS,
            "192.0.2.1,192.0.2.2",
            "no other site resolves to 192.0.2.1, 192.0.2.2",
        )
    ]


def _other_platform(host: str) -> HeaderFingerprint:
    return fingerprint(host, ("X-Other-Platform", "1"), ("Set-Cookie", "other_sid=1"))


def test_the_minority_signature_of_a_dns_grouping_is_the_one_in_conflict() -> None:
    """Whichever platform's signature sorts first, the sites with the less common one are
    the ones whose headers contradict their grouping."""
    chain = ("tenants.platform.example",)
    for many, few in ((plinth, _other_platform), (_other_platform, plinth)):
        facts = [
            site(f"{h}.test", f"198.51.100.{n + 1}", cname=chain, headers=many(f"{h}.test"))
            for n, h in enumerate(("a", "b", "c"))
        ]
        facts.append(site("d.test", "198.51.100.9", cname=chain, headers=few("d.test")))
        result = cluster(facts)
        assert len({a.origin for a in result.values()}) == 1
        conflicts = [e for e in result["d.test"].evidence if e.kind is Kind.HEADER_CONFLICT]
        assert [(e.value, e.detail) for e in conflicts] == [
            (
                few("d.test").signature,
                "DNS groups it with 4 sites, but its headers differ from most of them",
            )
        ]
        for host in ("a.test", "b.test", "c.test"):
            assert Kind.HEADER_CONFLICT not in kinds(result[host])


def test_a_site_keeps_the_strongest_corroboration_of_its_certificate() -> None:
    """Its certificate is compared with its origin's others: of a different issuer, one
    naming it, and the very same certificate, the same certificate is the evidence kept."""
    own = _cert("1", b"own", "a.test", "c.test", issuer="CA one")
    facts = [
        site("a.test", "192.0.2.10", ptr={"192.0.2.10": PTR["192.0.2.10"]}, tls=own),
        site(
            "b.test",
            "192.0.2.10",
            ptr={"192.0.2.10": PTR["192.0.2.10"]},
            tls=_cert("2", b"b", "b.test", issuer="CA two"),
        ),
        site(
            "c.test",
            "192.0.2.10",
            ptr={"192.0.2.10": PTR["192.0.2.10"]},
            tls=_cert("3", b"c", "c.test", issuer="CA one"),
        ),
        site("d.test", "192.0.2.10", ptr={"192.0.2.10": PTR["192.0.2.10"]}, tls=own),
    ]
    tls = [e for e in cluster(facts)["a.test"].evidence if e.kind in (Kind.TLS, Kind.TLS_CONFLICT)]
    assert [(e.kind, e.weight, e.detail) for e in tls] == [
        (Kind.TLS, 0.3, "a.test and d.test present one certificate")
    ]


def _shop(host: str, *extra: tuple[str, str], server: str = "nginx") -> HeaderFingerprint:
    return fingerprint(host, ("Set-Cookie", "shop_sid=1"), *extra, server=server)


def test_one_backend_is_named_after_the_signature_most_of_its_sites_show() -> None:
    """Sites sharing a backend mark (a cookie) are one backend however their other headers
    differ; its name is the signature most of them answer with."""
    plain, tagged = _shop("x"), _shop("x", ("X-Shop-Tag", "1"))
    assert plain.signature != tagged.signature
    for most, few in ((plain, tagged), (tagged, plain)):
        facts = [site(h, "192.0.2.5", headers=most) for h in ("a.test", "b.test")]
        facts.append(site("c.test", "192.0.2.5", headers=few))
        result = cluster(facts)
        assert {a.origin for a in result.values()} == {f"hdr:{most.signature}"}


def test_a_site_cnamed_to_another_sites_name_is_one_origin_with_it() -> None:
    result = cluster(
        [
            site("example.test", "192.0.2.1"),
            site("www.example.test", "192.0.2.2", cname=("example.test",)),
        ]
    )
    assert result["example.test"].origin == result["www.example.test"].origin
    assert result["www.example.test"].origin == "cname:example.test"


def test_sites_grouped_by_a_cname_claim_no_address_of_their_own() -> None:
    chain = ("shops.platform.example",)
    result = cluster(
        [site(h, f"192.0.2.{n}", cname=chain) for n, h in ((1, "a.test"), (2, "b.test"))]
    )
    assert kinds(result["a.test"]) == {Kind.CNAME}


def test_sites_sharing_an_ipv6_address_are_named_after_it() -> None:
    result = cluster([site(h, "2001:db8::1") for h in ("a.test", "b.test")])
    assert {a.origin for a in result.values()} == {"addr:2001:db8::1"}


def test_a_site_whose_dns_failed_is_decided_not_provisional() -> None:
    result = cluster([failed("gone.test"), site("a.test", "203.0.113.9")])
    assert not result["gone.test"].provisional


def test_a_certificate_is_compared_with_eight_others_of_its_origin() -> None:
    """The tenth site's certificate is the eighth's: among the eight it is compared with."""
    ptr = {"192.0.2.10": PTR["192.0.2.10"]}
    facts = [
        site(f"s{n}.test", "192.0.2.10", ptr=ptr, tls=_cert(str(n), bytes([n]), issuer=f"CA {n}"))
        for n in range(9)
    ]
    facts.append(site("s9.test", "192.0.2.10", ptr=ptr, tls=facts[7].tls))
    tls = [e for e in cluster(facts)["s9.test"].evidence if e.kind in (Kind.TLS, Kind.TLS_CONFLICT)]
    assert [(e.kind, e.detail) for e in tls] == [
        (Kind.TLS, "s9.test and s7.test present one certificate")
    ]
