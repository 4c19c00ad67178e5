"""Where the clusterer's edge decisions turn: the smallest groups an edge is proven on, what
every answer must carry, which shared names are judged, and which groups stay provisional
until their sample is in (``cluster`` rules 2 and 5)."""

from __future__ import annotations

from origin_facts import branded, fingerprint, marked, plinth, site

from courtier.origins.cluster import Assignment, SiteFacts, cluster
from courtier.origins.evidence import Kind
from courtier.origins.header_evidence import HeaderFingerprint
from courtier.origins.tls_evidence import TlsFacts, tls_facts

UNKNOWN_EDGE = "edge.quickserve.test"  # nothing in its name says CDN
SHARED = "203.0.113.9"  # in no CDN's published range
PUBLISHED = "104.16.1.1"  # in Cloudflare's published range


def origins(result: dict[str, Assignment], *hosts: str) -> set[str]:
    return {result[h].origin for h in hosts}


def apart(result: dict[str, Assignment]) -> bool:
    return len({a.origin for a in result.values()}) == len(result)


# -- the smallest proof of an edge ----------------------------------------------------------


def test_two_sites_on_an_address_are_enough_to_prove_an_edge() -> None:
    """With two sites on an address, both answers are the sample: a CDN's mark on each over
    two different stacks proves strangers."""
    facts = [site("a.test", SHARED, headers=marked("a.test", 0)), site("b.test", SHARED)]
    assert not apart(cluster(facts))  # one answer of two: not told yet
    facts[1] = site("b.test", SHARED, headers=marked("b.test", 1))
    assert apart(cluster(facts))


def test_two_sites_on_an_unknown_name_are_enough_to_prove_an_edge() -> None:
    facts = [
        site(f"{h}.test", f"198.51.100.{n + 1}", cname=(UNKNOWN_EDGE,), headers=marked(h, n))
        for n, h in enumerate(("a", "b"))
    ]
    assert apart(cluster(facts))


def test_one_answer_without_a_cdns_mark_keeps_the_group_together() -> None:
    """Every answer must carry a CDN's own mark: one that does not may come from the
    platform's own front, whatever the first answer showed."""
    facts = [
        site("a.test", SHARED, headers=marked("a.test", 0)),
        site("b.test", SHARED, headers=marked("b.test", 1)),
        site("c.test", SHARED, headers=fingerprint("c.test", server="Caddy")),
    ]
    assert origins(cluster(facts), "a.test", "b.test", "c.test") == {f"addr:{SHARED}"}


def test_marked_answers_from_one_stack_prove_no_edge() -> None:
    facts = [site(f"s{n}.test", SHARED, headers=marked(f"s{n}", n, "nginx")) for n in range(3)]
    assert len({a.origin for a in cluster(facts).values()}) == 1


# -- which shared names are judged ----------------------------------------------------------


def test_strangers_reaching_an_edge_through_names_of_their_own_are_told_apart() -> None:
    """``shop.test`` CNAMEs to ``shop.test.customers.quickserve.test``, which CNAMEs to the
    edge: each site's own name is no platform, and the edge after it is judged by its
    answers like one reached directly."""
    facts = [
        site(
            f"s{n}.test",
            SHARED,
            cname=(f"s{n}.test.customers.quickserve.test", UNKNOWN_EDGE),
            headers=marked(f"s{n}", n),
        )
        for n in range(3)
    ]
    result = cluster(facts)
    assert apart(result)
    assert all(Kind.CDN in {e.kind for e in a.evidence} for a in result.values())


def test_a_cdns_name_judged_first_does_not_leave_the_next_shared_name_unjudged() -> None:
    facts = [
        site(f"{h}.test", PUBLISHED, cname=("d111.cloudfront.net",), headers=marked(h, n))
        for n, h in enumerate(("a", "b"))
    ]
    facts += [
        site(f"s{n}.test", SHARED, cname=(UNKNOWN_EDGE,), headers=marked(f"s{n}", n))
        for n in range(3)
    ]
    result = cluster(facts)
    assert len(origins(result, "s0.test", "s1.test", "s2.test")) == 3


def test_a_platforms_distribution_reached_directly_by_one_tenant_groups_them_all() -> None:
    """One tenant CNAMEs straight to the platform's CDN distribution, the others through the
    platform's own name: every answer shows the platform, so it is one origin."""
    distribution = "d333.cloudfront.net"
    facts = [site("t0.test", PUBLISHED, cname=(distribution,), headers=plinth("t0.test"))]
    facts += [
        site(h, PUBLISHED, cname=("shops.plinth.test", distribution), headers=plinth(h))
        for h in ("t1.test", "t2.test")
    ]
    result = cluster(facts)
    assert origins(result, "t0.test", "t1.test", "t2.test") == {f"cname:{distribution}"}


def test_a_404_page_shared_behind_a_cdns_name_is_not_a_platforms_distribution() -> None:
    """A page served for every missing path may be the CDN's own: it groups the sites by their
    headers behind the edge, not as one customer's distribution of the CDN."""
    page = b"<h1>Nothing here</h1><p>Error 404 at the edge</p>"
    facts = [
        site(h, PUBLISHED, cname=("d444.cloudfront.net",), headers=fingerprint(h, not_found=page))
        for h in ("a.test", "b.test", "c.test")
    ]
    result = cluster(facts)
    assert all(a.origin.startswith("hdr:") for a in result.values())
    assert not any(Kind.CNAME in {e.kind for e in a.evidence} for a in result.values())


def _cert(der: bytes, *names: str) -> TlsFacts:
    return tls_facts(
        {
            "issuer": ((("organizationName", "CA"),),),
            "serialNumber": der.hex(),
            "subjectAltName": tuple(("DNS", n) for n in names),
        },
        der,
    )


def _edge_world(certificate_names: tuple[str, ...]) -> list[SiteFacts]:
    hosts = ("a.test", "b.test", "c.test")
    return [
        site(
            h,
            f"198.51.100.{n + 1}",
            cname=(UNKNOWN_EDGE,),
            headers=marked(h, n),
            tls=_cert(b"a", *certificate_names) if h == "a.test" else _cert(h.encode(), h),
        )
        for n, h in enumerate(hosts)
    ]


def test_one_certificate_naming_two_other_sites_on_a_name_vetoes_its_edge() -> None:
    result = cluster(_edge_world(("a.test", "b.test", "c.test")))
    assert origins(result, "a.test", "b.test", "c.test") == {f"cname:{UNKNOWN_EDGE}"}
    detail = next(e.detail for e in result["b.test"].evidence if e.kind is Kind.CNAME)
    assert detail == (
        f"3 sites CNAME to {UNKNOWN_EDGE}; kept together: "
        f"the certificate of a.test names 2 other sites on {UNKNOWN_EDGE}"
    )


def test_a_certificate_naming_one_other_site_is_no_platform() -> None:
    """A certificate shared by two sites is common among strangers (one owner, one agency):
    it takes two other sites named to speak for a platform."""
    assert apart(cluster(_edge_world(("a.test", "b.test"))))
    assert apart(cluster(_edge_world(("a.test",))))


# -- provisional while the sample is out ----------------------------------------------------


def test_two_sites_sharing_a_name_stay_provisional_until_both_have_answered() -> None:
    facts = [
        site("a.test", "198.51.100.1", cname=("lb.hosting.test",), headers=fingerprint("a.test")),
        site("b.test", "198.51.100.2", cname=("lb.hosting.test",)),
    ]
    assert all(a.provisional for a in cluster(facts).values())
    facts[1] = site("b.test", "198.51.100.2", cname=("lb.hosting.test",), headers=fingerprint("b"))
    assert not any(a.provisional for a in cluster(facts).values())


def test_a_name_waits_for_three_answers_of_its_sites() -> None:
    def world(answered: int) -> list[SiteFacts]:
        return [
            site(
                f"s{n}.test",
                f"198.51.100.{n + 1}",
                cname=("lb.hosting.test",),
                headers=fingerprint(f"s{n}.test") if n < answered else None,
            )
            for n in range(5)
        ]

    assert all(a.provisional for a in cluster(world(2)).values())
    assert not any(a.provisional for a in cluster(world(3)).values())


def test_sites_sharing_an_address_stay_provisional_until_both_have_answered() -> None:
    facts = [site("a.test", SHARED), site("b.test", SHARED)]
    assert all(a.provisional for a in cluster(facts).values())
    facts[0] = site("a.test", SHARED, headers=fingerprint("a.test"))
    assert all(a.provisional for a in cluster(facts).values())
    facts[1] = site("b.test", SHARED, headers=fingerprint("b.test"))
    assert not any(a.provisional for a in cluster(facts).values())


def test_marked_answers_of_one_stack_stay_provisional_while_others_may_yet_prove_an_edge() -> None:
    """The sample is in and shows no edge yet, but every answer carries a CDN's mark: the next
    answer may show another stack, so the group books little ahead until all have answered."""

    def world(answered: int) -> list[SiteFacts]:
        return [
            site(
                f"s{n}.test",
                f"198.51.100.{n + 1}",
                cname=(UNKNOWN_EDGE,),
                headers=marked(f"s{n}", n, "nginx") if n < answered else None,
            )
            for n in range(4)
        ]

    waiting = cluster(world(3))
    assert len({a.origin for a in waiting.values()}) == 1
    assert all(a.provisional for a in waiting.values())
    assert not any(a.provisional for a in cluster(world(4)).values())


def test_a_name_its_servers_ptr_places_in_a_platform_is_decided_without_a_sample() -> None:
    """Only one site reaches ``lb.hostco.test`` directly (the others through the platform's
    shop name), and its server's PTR name is in hostco.test: a platform, nothing to wait for,
    even before that site has answered."""
    facts = [
        site(
            "a.test",
            "192.0.2.20",
            cname=("lb.hostco.test",),
            ptr={"192.0.2.20": ("web1.hostco.test",)},
        )
    ]
    facts += [
        site(h, f"192.0.2.{n}", cname=("shops.hostco.test", "lb.hostco.test"), headers=plinth(h))
        for n, h in ((21, "b.test"), (22, "c.test"))
    ]
    result = cluster(facts)
    assert origins(result, "a.test", "b.test", "c.test") == {"cname:lb.hostco.test"}
    assert not any(a.provisional for a in result.values())


# -- waiting with the platforms on an edge --------------------------------------------------


def _brands_on_an_edge(*waiting: SiteFacts) -> list[SiteFacts]:
    facts = [
        site(f"s{n}.test", SHARED, cname=(UNKNOWN_EDGE,), headers=marked(f"s{n}", n))
        for n in range(3)
    ]
    facts += [
        site(f"t{n}.test", SHARED, cname=(UNKNOWN_EDGE,), headers=branded(f"t{n}", n))
        for n in range(2)
    ]
    return [*facts, *waiting]


def test_a_site_waiting_on_an_edge_waits_with_the_platform_seen_there() -> None:
    result = cluster(_brands_on_an_edge(site("w.test", SHARED, cname=(UNKNOWN_EDGE,))))
    assert result["w.test"].origin == result["t0.test"].origin == result["t1.test"].origin
    assert result["w.test"].provisional
    waits = [e for e in result["w.test"].evidence if e.value == UNKNOWN_EDGE]
    assert [(e.kind, e.weight, e.detail) for e in waits] == [
        (
            Kind.CDN,
            0.6,
            f"reaches {UNKNOWN_EDGE}, where a platform's tenants answer too: it waits with "
            "them until its own first answer is in",
        )
    ]


def test_a_site_waiting_on_edge_addresses_is_named_by_them() -> None:
    addresses = ("203.0.113.51", "203.0.113.50")
    facts = [site(f"s{n}.test", *addresses, headers=marked(f"s{n}", n)) for n in range(3)]
    facts += [site(f"t{n}.test", *addresses, headers=branded(f"t{n}", n)) for n in range(2)]
    facts.append(site("w.test", *addresses))
    result = cluster(facts)
    assert result["w.test"].origin == result["t0.test"].origin
    values = {e.value for e in result["w.test"].evidence if e.kind is Kind.CDN}
    assert "203.0.113.50,203.0.113.51" in values


def test_a_site_on_one_cdn_name_does_not_wait_with_a_platform_on_another() -> None:
    facts = [
        site(h, PUBLISHED, cname=("d111.cloudfront.net",), headers=branded(h, n))
        for n, h in enumerate(("t0.test", "t1.test"))
    ]
    facts.append(site("s.test", PUBLISHED, cname=("d111.cloudfront.net",), headers=marked("s", 0)))
    facts.append(site("w.test", PUBLISHED, cname=("d222.cloudfront.net",)))
    result = cluster(facts)
    assert result["t0.test"].origin == result["t1.test"].origin
    assert result["w.test"].origin == "site:w.test"
    assert not result["w.test"].provisional


def test_a_lone_site_behind_an_edge_claims_no_shared_fingerprint() -> None:
    strangers_and_one_tenant = _brands_on_an_edge()[:4]
    result = cluster(strangers_and_one_tenant)
    assert result["t0.test"].origin == "site:t0.test"
    assert {e.kind for e in result["t0.test"].evidence} == {Kind.CDN}


def _platform(host: str, name: str) -> HeaderFingerprint:
    return fingerprint(
        host, ("CF-Ray", "00000000000000ff-FRA"), (f"X-{name}", "1"), ("Set-Cookie", f"{name}=1")
    )


def test_a_site_waiting_on_an_edge_with_two_platforms_is_named_after_the_first_seen() -> None:
    """The first platform by its first site's name, whatever its signature."""
    strangers = [
        site(f"s{n}.test", SHARED, cname=(UNKNOWN_EDGE,), headers=marked(f"s{n}", n))
        for n in range(3)
    ]
    for first, second in (("alpha", "beta"), ("beta", "alpha")):
        tenants = [
            site(f"{p}{n}.test", SHARED, cname=(UNKNOWN_EDGE,), headers=_platform(f"{p}{n}", name))
            for p, name in (("a", first), ("b", second))
            for n in range(2)
        ]
        waiting = site("w.test", SHARED, cname=(UNKNOWN_EDGE,))
        result = cluster([*strangers, *tenants, waiting])
        assert result["w.test"].origin == f"hdr:{_platform('a0', first).signature}"


def test_a_site_waits_on_its_own_edge_after_another_edge_where_nobody_waits() -> None:
    other = [
        site(f"a{n}.test", "203.0.113.77", cname=("edge1.quickserve.test",), headers=marked("a", n))
        for n in range(3)
    ]
    waiting = site("w.test", SHARED, cname=(UNKNOWN_EDGE,))
    result = cluster([*other, *_brands_on_an_edge(waiting)])
    assert result["w.test"].origin == result["t0.test"].origin != "site:w.test"


def test_two_backends_on_an_edge_are_described_by_their_first_sites_answers() -> None:
    facts = [
        site(f"{p}{n}.test", f"198.51.100.{10 * k + n}", cname=(UNKNOWN_EDGE,), headers=fp)
        for k, p in enumerate(("alpha", "beta"))
        for n, fp in enumerate(
            fingerprint("x", (f"X-{p}", "1"), server=f"nginx/1.{v}") for v in (20, 21)
        )
    ]
    edge = [e.detail for e in cluster(facts)["alpha0.test"].evidence if e.kind is Kind.CDN]
    assert edge == [
        f"behind a CDN edge: {UNKNOWN_EDGE}: 4 sites reach it and their answers show 2 different "
        "backends (Server: nginx/1.20; headers x-alpha; Server: nginx/1.20; headers x-beta)"
    ]
