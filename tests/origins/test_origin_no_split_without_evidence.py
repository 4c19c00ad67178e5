"""A group of sites sharing a CNAME target or an address is split only on positive evidence
that different backends serve it; no evidence means one origin (docs/origins.md).

The shapes here are the hosting the web has and a CDN-shaped header name does not explain: a
platform whose own front servers add cache headers, shared hosting, a platform behind a CDN.
The property test generates such worlds with their ground truth and checks that no
ground-truth origin is ever split.
"""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from origin_facts import site

from courtier.origins.cluster import EDGE_SAMPLE, NO_SPLIT_EVIDENCE, SiteFacts, cluster
from courtier.origins.evidence import Kind
from courtier.origins.header_evidence import HeaderFingerprint, header_fingerprint, probe_response

NGINX_404 = b"<html><center><h1>404 Not Found</h1></center><hr><center>nginx</center></html>"
APACHE_404 = b"<h1>Not Found</h1><p>The requested URL was not found on this server.</p>"

# Generic stacks: (Server, headers every install sends, stock 404 page).
STACKS: tuple[tuple[str, tuple[tuple[str, str], ...], bytes], ...] = (
    ("nginx/1.24.0", (("X-Powered-By", "PHP/8.2.7"), ("Set-Cookie", "PHPSESSID=1")), NGINX_404),
    ("Apache/2.4.58 (Debian)", (("X-Powered-By", "PHP/7.4.33"),), APACHE_404),
    ("LiteSpeed", (("X-LiteSpeed-Cache", "hit"), ("X-Powered-By", "PHP/8.1")), b""),
    ("Microsoft-IIS/10.0", (("X-Powered-By", "ASP.NET"), ("X-AspNet-Version", "4.0")), b""),
    ("gunicorn", (("Set-Cookie", "csrftoken=4"), ("X-Frame-Options", "DENY")), b"Not Found"),
)

# What a platform's own Varnish, nginx or HAProxy front adds: cache header names, no CDN's
# values.
OWN_FRONT_HEADERS: tuple[tuple[str, str], ...] = (
    ("Via", "1.1 varnish (Varnish/6.0)"),
    ("X-Cache", "HIT"),
    ("X-Cache", "MISS from varnish1"),
    ("X-Served-By", "web1"),
    ("X-Served-By", "haproxy-02"),
    ("Age", "17"),
    ("X-Varnish", "32770 32768"),
    ("X-Cache-Hits", "2"),
)


def answers(
    host: str, headers: list[tuple[str, str]], not_found: bytes = NGINX_404
) -> HeaderFingerprint:
    fp = header_fingerprint(
        probe_response(200, headers, b"User-agent: *\n", host),
        probe_response(404, headers, not_found, host),
    )
    assert fp is not None
    return fp


def stack_answers(host: str, n: int, *extra: tuple[str, str]) -> HeaderFingerprint:
    server, backend, not_found = STACKS[n % len(STACKS)]
    return answers(host, [("Server", server), *backend, *extra], not_found)


def edge_marks(n: int) -> tuple[tuple[str, str], ...]:
    """What an edge whose name says nothing writes: a ray id and Fastly-shaped cache nodes."""
    return (("QS-Ray", f"{n * 7919:016x}-SIM"), ("X-Served-By", f"cache-sim{n % 3}-QS"))


def origins(result: dict[str, object], hosts: list[str]) -> set[str]:
    return {result[h].origin for h in hosts}  # type: ignore[attr-defined]


def test_a_platform_whose_front_adds_x_served_by_is_one_origin() -> None:
    """The held-out platform: tenants CNAME to its name, one address whose PTR is in its own
    domain, ``Server: nginx`` and ``X-Served-By: web1`` from its own fronts."""
    ptr = {"192.0.2.80": ("web1.hostplat.test",)}
    facts = [
        site(
            f"tenant{n}.test",
            "192.0.2.80",
            cname=("sites.hostplat.test",),
            ptr=ptr,
            headers=answers(f"tenant{n}.test", [("Server", "nginx"), ("X-Served-By", "web1")]),
        )
        for n in range(150)
    ]
    result = cluster(facts)
    assert len({a.origin for a in result.values()}) == 1
    assert not any(Kind.CDN in {e.kind for e in a.evidence} for a in result.values())
    cname = [e for e in result["tenant0.test"].evidence if e.kind is Kind.CNAME]
    assert cname and "kept together: the PTR name web1.hostplat.test" in cname[0].detail
    bare = cluster(
        [site(f.host, "192.0.2.80", cname=f.dns.cname_chain, headers=f.headers) for f in facts]
    )
    assert len({a.origin for a in bare.values()}) == 1
    cname = [e for e in bare["tenant0.test"].evidence if e.kind is Kind.CNAME]
    assert cname and NO_SPLIT_EVIDENCE in cname[0].detail


def test_tenants_on_an_address_with_a_ptr_name_stay_one_origin_whatever_they_answer() -> None:
    """The PTR name names the server: even answers with a CDN's marks over different stacks
    do not make the address an edge."""
    ptr = {"192.0.2.81": ("srv3.platform-z.test",)}
    facts = [
        site(
            f"z{n}.test",
            "192.0.2.81",
            ptr=ptr,
            headers=stack_answers(f"z{n}.test", n, *edge_marks(n)),
        )
        for n in range(8)
    ]
    assert len({a.origin for a in cluster(facts).values()}) == 1


def test_a_platforms_own_caches_never_make_it_an_edge() -> None:
    rng = random.Random(7)
    for trial in range(40):
        front = rng.sample(OWN_FRONT_HEADERS, rng.randint(1, 4))
        ptr = {"192.0.2.82": ("lb.cachedplat.test",)} if trial % 2 else {}
        facts = [
            site(
                f"c{n}.test",
                "192.0.2.82",
                cname=("shops.cachedplat.test",),
                ptr=ptr,
                headers=answers(f"c{n}.test", [("Server", "nginx"), *front]),
            )
            for n in range(10)
        ]
        assert len({a.origin for a in cluster(facts).values()}) == 1, front


def test_shared_hosting_is_one_origin_with_or_without_a_ptr_name() -> None:
    for ptr in ({"192.0.2.83": ("host23.hostingco.test",)}, {}):
        facts = [
            site(f"owner{n}.test", "192.0.2.83", ptr=ptr, headers=stack_answers(f"o{n}", n))
            for n in range(12)
        ]
        assert len({a.origin for a in cluster(facts).values()}) == 1


def test_a_platform_behind_an_edge_stays_one_origin_and_the_edges_strangers_split() -> None:
    """Tenants CNAME to a platform name that CNAMEs to an edge whose name does not say so;
    strangers reach the edge directly. The edge writes its marks on every answer."""
    edge = "front.quickedge.test"
    tenants = [
        site(
            f"t{n}.test",
            "192.0.2.84",
            cname=("tenants.generic-plat.test", edge),
            headers=answers(f"t{n}.test", [("Server", "nginx"), *edge_marks(n)]),
        )
        for n in range(12)
    ]
    strangers = [
        site(
            f"s{n}.test",
            "192.0.2.84",
            cname=(edge,),
            headers=stack_answers(f"s{n}", n, *edge_marks(n)),
        )
        for n in range(10)
    ]
    result = cluster(tenants + strangers)
    assert origins(result, [t.host for t in tenants]) == {"cname:tenants.generic-plat.test"}
    assert len(origins(result, [s.host for s in strangers])) == len(strangers)
    detail = " ".join(e.detail for e in result["s0.test"].evidence)
    assert "CDN's own mark" in detail and "different server stacks" in detail


def test_identical_stacks_behind_an_unnamed_edge_are_kept_together() -> None:
    """The edge's marks over one stack: nothing says two backends answer, so one origin."""
    facts = [
        site(
            f"u{n}.test",
            "192.0.2.85",
            cname=("e.unnamed.test",),
            headers=stack_answers("u", 0, *edge_marks(n)),
        )
        for n in range(EDGE_SAMPLE + 3)
    ]
    assert len({a.origin for a in cluster(facts).values()}) == 1


# -- the property: generated worlds with their ground truth -----------------------------------


@st.composite
def worlds(draw: st.DrawFn) -> tuple[list[SiteFacts], dict[str, str]]:
    """Sites and the ground truth (site -> the servers that answer it) of a random world of
    platforms, shared hosts and standalone sites, some behind fronts and edges of their own,
    some reached through a known CDN's name after a platform name of their own."""
    facts: list[SiteFacts] = []
    truth: dict[str, str] = {}
    n_groups = draw(st.integers(1, 9))
    address = 10
    for g in range(n_groups):
        kind = draw(
            st.sampled_from(
                ["platform", "shared-host", "fronted", "edge-fronted", "standalone", "stranger"]
            )
        )
        size = 1 if kind in ("standalone", "stranger") else draw(st.integers(2, 9))
        front = draw(st.lists(st.sampled_from(OWN_FRONT_HEADERS), max_size=3))
        with_ptr = draw(st.booleans())
        distinctive = draw(st.booleans())
        observed = draw(st.lists(st.booleans(), min_size=size, max_size=size))
        stacks = draw(st.lists(st.integers(0, 4), min_size=size, max_size=size))
        addr = f"198.51.100.{address}"
        address += 1
        domain = f"g{g}-{kind}.test"
        ptr = {addr: (f"web{g}.{domain}",)} if with_ptr else {}
        app_cookie = draw(st.lists(st.booleans(), min_size=size, max_size=size))
        for n in range(size):
            host = f"s{n}.{domain}"
            truth[host] = domain
            if kind in ("shared-host", "stranger"):
                base = [("Server", STACKS[stacks[n]][0]), *STACKS[stacks[n]][1]]
            else:
                base = [("Server", "nginx")]
            if distinctive and kind not in ("shared-host", "stranger"):
                base += [("X-Gen-Platform", str(g)), ("Set-Cookie", f"gen{g}_sid={n}")]
            if app_cookie[n]:
                base.append(("Set-Cookie", f"app{g}x{n}_cart=1"))  # one tenant's own app
            if kind in ("edge-fronted", "stranger"):
                base += list(edge_marks(n + g))
            headers = answers(host, [*base, *front]) if observed[n] else None
            if kind == "fronted":
                chain: tuple[str, ...] = (f"sites.{domain}", f"d{g}x.cloudfront.net")
                facts.append(site(host, "198.51.100.250", cname=chain, headers=headers))
            elif kind == "edge-fronted":
                chain = (f"sites.{domain}", "front.unnamed-edge.test")
                facts.append(site(host, "198.51.100.251", cname=chain, headers=headers))
            elif kind == "stranger":
                chain = ("front.unnamed-edge.test",)
                facts.append(site(host, "198.51.100.251", cname=chain, headers=headers))
            elif kind == "platform":
                facts.append(site(host, addr, cname=(f"sites.{domain}",), ptr=ptr, headers=headers))
            else:
                facts.append(site(host, addr, ptr=ptr, headers=headers))
    return facts, truth


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds())
def test_no_ground_truth_origin_is_split_without_evidence(
    world: tuple[list[SiteFacts], dict[str, str]],
) -> None:
    facts, truth = world
    result = cluster(facts)
    servers: dict[str, set[str]] = {}
    for host, server in truth.items():
        servers.setdefault(server, set()).add(result[host].origin)
    for server, inferred in servers.items():
        assert len(inferred) == 1, (server, inferred)


def test_sites_not_heard_from_wait_with_a_platform_seen_straight_on_their_edge() -> None:
    """A platform's tenants CNAME straight to an edge among strangers: the edge is proven by
    the strangers' answers, but a site whose answer is not in yet may be one more tenant."""
    edge = "front.quickedge.test"
    brand = (("X-Gen-Platform", "1"), ("Set-Cookie", "gen_sid=1"))
    strangers = [
        site(
            f"s{n}.test", "192.0.2.86", cname=(edge,), headers=stack_answers("s", n, *edge_marks(n))
        )
        for n in range(5)
    ]
    heard = [
        site(
            f"t{n}.test",
            "192.0.2.86",
            cname=(edge,),
            headers=answers("t", [("Server", "nginx"), *brand, *edge_marks(n)]),
        )
        for n in range(2)
    ]
    unheard = [site(f"u{n}.test", "192.0.2.86", cname=(edge,)) for n in range(6)]
    result = cluster(strangers + heard + unheard)
    platform = origins(result, [s.host for s in heard + unheard])
    assert len(platform) == 1
    assert all(result[s.host].provisional for s in unheard)
    assert len(origins(result, [s.host for s in strangers])) == len(strangers)
    assert not platform & origins(result, [s.host for s in strangers])
    # An edge where no platform shows keeps its strangers apart from the start.
    alone = cluster(strangers + unheard)
    assert len(origins(alone, [s.host for s in strangers + unheard])) == len(strangers + unheard)


def test_a_shared_cdn_name_waits_for_every_one_of_its_sites() -> None:
    """Behind a name a CDN gives one customer, any site not heard from yet may be that
    customer's platform's tenant: one origin until every site has answered."""
    name = "d7hexhexhex.cloudfront.net"
    facts = [
        site(
            f"c{n}.test",
            "203.0.113.60",
            cname=(name,),
            headers=stack_answers("c", n) if n < 3 else None,
        )
        for n in range(8)
    ]
    before = cluster(facts)
    assert len({a.origin for a in before.values()}) == 1
    assert all(a.provisional for a in before.values())
    answered = [
        site(f.host, "203.0.113.60", cname=(name,), headers=stack_answers("c", n))
        for n, f in enumerate(facts)
    ]
    assert len({a.origin for a in cluster(answered).values()}) == len(answered)


def test_a_site_held_with_a_lone_brand_gets_an_origin_id() -> None:
    """One stranger's own app cookie counts as a brand on its edge: a site not heard from
    yet waits with it, and the group they make is named like any other."""
    edge = "front.unnamed-edge.test"
    cookie = ("Set-Cookie", "app0_cart=1")
    facts = [
        site(
            "a.test",
            "198.51.100.9",
            cname=(edge,),
            headers=stack_answers("a", 0, cookie, *edge_marks(0)),
        ),
        site("b.test", "198.51.100.9", cname=(edge,)),
        site(
            "c.test", "198.51.100.9", cname=(edge,), headers=stack_answers("c", 1, *edge_marks(1))
        ),
        site(
            "d.test", "198.51.100.9", cname=(edge,), headers=stack_answers("d", 3, *edge_marks(2))
        ),
    ]
    result = cluster(facts)
    assert result["a.test"].origin == result["b.test"].origin
    assert result["a.test"].origin.startswith("hdr:")
    assert result["b.test"].provisional


def test_a_group_the_next_answer_may_still_split_books_little_ahead() -> None:
    """Every answer so far carries a CDN's marks over one stack, and some sites have not
    answered: kept together, but provisional until they all have (if it splits, the sites
    moving together would carry a clock their strangers booked far ahead)."""
    facts = [
        site(
            f"p{n}.test",
            "192.0.2.87",
            cname=("e.unnamed2.test",),
            headers=stack_answers("p", 0, *edge_marks(n)) if n < 4 else None,
        )
        for n in range(6)
    ]
    before = cluster(facts)
    assert len({a.origin for a in before.values()}) == 1
    assert all(a.provisional for a in before.values())
    answered = [
        site(
            f.host,
            "192.0.2.87",
            cname=f.dns.cname_chain,
            headers=stack_answers("p", 0, *edge_marks(n)),
        )
        for n, f in enumerate(facts)
    ]
    after = cluster(answered)
    assert len({a.origin for a in after.values()}) == 1
    assert not any(a.provisional for a in after.values())
