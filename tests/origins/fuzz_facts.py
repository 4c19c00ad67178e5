"""The facts a crawl gathers about a fuzzed simulated web, built in-process: each seed site's
DNS (CNAME chain, addresses, PTR names) from the world's own DNS answerer and the headers of
its first answer (robots.txt) from its own HTTP handler, as ``OriginsLive.observe_answer``
turns them into evidence. No socket is opened."""

from __future__ import annotations

import asyncio
from collections import defaultdict

from dnslib import QTYPE

from courtier.origins.cluster import SiteFacts, cluster
from courtier.origins.dns_evidence import DnsFacts
from courtier.origins.header_evidence import header_fingerprint, probe_response
from courtier.simweb import Network, World
from courtier.simweb.dns import DnsAnswerer
from courtier.simweb.http import SimHttp
from courtier.simweb.world import SiteKind

NET = Network(100, 80)


def world_facts(world: World) -> list[SiteFacts]:
    answerer = DnsAnswerer(world, NET)
    http = SimHttp(world, NET, None, clock=lambda: 0.0)
    facts = []
    for host in world.seed_hosts:
        site = world.sites[host]
        if site.kind is SiteKind.BAIT:
            continue  # they lead to the canary by design: the guard refuses them
        _, records = answerer.answer(host, QTYPE.A)
        chain = tuple(str(r.rdata).rstrip(".") for r in records if r.rtype == QTYPE.CNAME)
        slots = [NET.slot_of(str(r.rdata)) for r in records if r.rtype == QTYPE.A]
        addresses = tuple(str(r.rdata) for r in records if r.rtype == QTYPE.A)
        ptr = {
            NET.address_of(slot): (world.dns.ptr_names[slot],)
            for slot in slots
            if slot is not None and slot in world.dns.ptr_names
        }
        answer = asyncio.run(http._answer(slots[0] or 0, host, "/robots.txt", 0.0))
        page = answer.page
        headers = [("Content-Type", page.content_type), *answer.headers, *page.headers]
        if page.status == 404:
            fingerprint = header_fingerprint(None, probe_response(404, headers, page.body, host))
        else:
            fingerprint = header_fingerprint(probe_response(page.status, headers, b"", host), None)
        facts.append(SiteFacts(host, DnsFacts(host, chain, addresses, ptr), fingerprint))
    return facts


def split_origins(world: World) -> dict[str, set[str]]:
    """Ground-truth origins whose sites the clusterer put on more than one origin."""
    result = cluster(world_facts(world))
    inferred: dict[str, set[str]] = defaultdict(set)
    for host, assignment in result.items():
        inferred[world.sites[host].origin].add(assignment.origin)
    return {truth: origins for truth, origins in inferred.items() if len(origins) > 1}
