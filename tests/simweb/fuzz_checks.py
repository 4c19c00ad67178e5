"""Checks of a generated world's ground truth, shared by the fuzzer's tests."""

from __future__ import annotations

from collections import defaultdict

from dnslib import QTYPE

from courtier.simweb import Network, World
from courtier.simweb.dns import DnsAnswerer
from courtier.simweb.world import CHARGED_MEDIA_KINDS, SiteKind

NET = Network(100, 80)


def resolve(answerer: DnsAnswerer, host: str) -> tuple[list[str], set[int]]:
    """The CNAME chain and the slots of a name's A records, as a resolver would see them."""
    _, records = answerer.answer(host, QTYPE.A)
    chain = [str(r.rdata).rstrip(".") for r in records if r.rtype == QTYPE.CNAME]
    slots = {NET.slot_of(str(r.rdata)) for r in records if r.rtype == QTYPE.A}
    return chain, {s for s in slots if s is not None}


def ground_truth_problems(world: World) -> list[str]:
    """What is wrong with the world's ground truth: empty when it is well formed."""
    problems: list[str] = []
    answerer = DnsAnswerer(world, NET)
    dns = world.dns
    edge_slots = set(world.edge_slots) | {s for e in world.cdn_edges for s in e.slots}
    if set(dns.cnames) & set(dns.a_records):
        problems.append(f"names with a CNAME and A records: {set(dns.cnames) & set(dns.a_records)}")
    owners: dict[int, set[str]] = defaultdict(set)
    for host, site in world.sites.items():
        charged = site.kind in CHARGED_MEDIA_KINDS
        if not site.is_seed and not charged:
            continue
        if site.kind is SiteKind.BAIT:
            continue  # they lead to the canary by design
        if world.origin_budget(site.origin) <= 0:
            problems.append(f"{host}: origin {site.origin} has no budget")
        chain, slots = resolve(answerer, host)
        if slots != set(site.slots):
            problems.append(f"{host}: DNS gives slots {sorted(slots)}, the site is on {site.slots}")
        if len(chain) > 3:
            problems.append(f"{host}: a CNAME chain of {len(chain)}")
        for slot in site.slots:
            if slot not in edge_slots:
                owners[slot].add(site.origin)
        for target in (site.robots_redirect, site.redirect_to):
            if target is not None and not world.sites[target].is_seed:
                problems.append(f"{host}: redirects to {target}, no seed site")
        if site.robots_redirect is not None:
            aim = world.sites[site.robots_redirect]
            if aim.robots_redirect or aim.robots_status != 200:
                problems.append(f"{host}: its robots.txt target {aim.host} does not answer")
            if (site.robots_text, site.robots_status) != (aim.robots_text, 200):
                problems.append(f"{host}: its robots.txt truth is not its target's")
        if site.media_host is not None:
            media = world.sites[site.media_host]
            vanity = media.customer == site.host
            if not vanity and (media.customer is not None or media.origin != site.origin):
                problems.append(
                    f"{host}: media host {media.host} is neither its own nor its origin's"
                )
    for slot, origins in owners.items():
        if len(origins) > 1:  # one machine, several origins: the truth contradicts itself
            problems.append(f"slot {slot} (no CDN edge) serves origins {sorted(origins)}")
    for slot, name in dns.ptr_names.items():
        if resolve(answerer, name)[1] != {slot}:
            problems.append(f"PTR {name} does not resolve back to its slot {slot}")
    for edge in world.cdn_edges:
        if resolve(answerer, edge.name)[1] != set(edge.slots):
            problems.append(f"edge {edge.name} does not resolve to its slots")
        strangers = [s for s in world.sites.values() if s.kind is SiteKind.CDN_SITE]
        on_edge = [s for s in strangers if set(s.slots) == set(edge.slots)]
        if len({s.origin for s in on_edge}) != len(on_edge):
            problems.append(f"strangers behind {edge.name} share an origin")
    return problems
