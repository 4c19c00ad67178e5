"""The clusterer: sites into origins (groups of sites that share servers), with the reasons.

A pure function of the facts gathered per site; no I/O, no clock.

Rules, strongest first. The asymmetry rules them all: a wrong merge costs speed, a wrong split
breaks the promise to a server. Sites sharing a CNAME target or an address are split only on
positive evidence that different backends serve them; no evidence means one origin.
1. A site whose DNS lookup failed stays on its own (``dns-failure``).
2. CDN edges are not origins. A name or address is an edge when it is known as one (a CDN
   suffix, a CDN's PTR name, a CDN's published address range: ``courtier.origins.cdn``) or
   when its sites' answers prove it (``_edge_behaviour``): once ``EDGE_SAMPLE`` of the sites
   reaching it directly have answered, either two different distinctive backends show (each
   in two answers or more, sharing no platform header, cookie or ``X-Powered-By``), or every
   answer carries a CDN's own mark (a vendor's header or value shape, never a header name
   any cache adds: ``Via``, ``X-Cache``, ``X-Served-By``) over different server products.
   A known CDN's name shared by several sites is an edge once all of them have answered,
   unless every answer shows one distinctive backend: then it is one platform's own
   distribution (``d123.cloudfront.net`` is one customer's) and groups them; until then they
   are one origin, for the same reason as below. A site reaching an edge directly, its
   answer not in yet, waits with the platforms already seen straight on that edge (their
   other tenants look like strangers until they answer). What speaks for a platform vetoes
   a split by behaviour: an address with a PTR name, a PTR name in the shared CNAME target's
   own registrable domain, one certificate naming several of its sites. A
   CNAME chain is read up to its first edge name; the links before it are the platform's own
   names and still count. A site that is itself a CDN name, whose chain reaches an edge, whose
   addresses are all edge addresses or whose PTR names are a CDN's contributes no address.
   Behind edges, only shared distinctive evidence groups sites (``headers``; sharing any
   backend mark is enough): generic stack evidence never does (``header_evidence``), so
   strangers on one edge stay apart.
3. Sites sharing a CNAME chain link are one origin (``cname``, strong); so are a site and
   the names that CNAME to its host (``www`` to the bare name).
4. Sites sharing an address that has a (non-CDN) PTR name are one origin: the PTR names the
   server (``ptr-address``, strong).
5. A shared address with no PTR name and not proven an edge is one origin: with one
   distinctive backend its sites are grouped by it (``headers``) and the others join it
   (``shared-address``); with none, or several before the sample is in, the address is taken
   for a shared server with low confidence (``shared-address``).
6. Conflicts never split a grouping: a site whose headers differ from the rest of its origin
   (another distinctive signature, another server product) gets ``header-conflict``
   evidence, which lowers its confidence.
7. TLS certificates only raise or lower confidence (``courtier.origins.tls_evidence``), and
   veto an edge by behaviour (rule 2).
A group kept together once its sample is in says why in its evidence ("kept together: ...").

Before their first answers are in, sites sharing a name or an address that is not known as
an edge are one origin: a platform's tenants are never sent more than its one budget while
nothing tells it from an edge. The first answers of ``EDGE_SAMPLE`` sites that reach it
directly decide (a crawl observes its own robots.txt and home page answers; docs/origins.md).

Origin ids are derived from the evidence: ``cname:<name>``, ``ptr:<name>``, ``hdr:<signature>``,
``addr:<address>`` (the key shared by most of the origin's sites, in that order of preference;
among CNAME links, the one deepest in the chain), or ``site:<host>`` for a site on its own. The
same facts always give the same ids, in any order.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from courtier.origins.cdn import CdnRules, published_cdn_range
from courtier.origins.dns_evidence import DnsFacts
from courtier.origins.evidence import Evidence, Kind, combined_confidence
from courtier.origins.header_evidence import HeaderFingerprint
from courtier.origins.tls_evidence import TlsFacts, tls_relation
from courtier.url import registrable_domain

CNAME_WEIGHT = 0.95
PTR_WEIGHT = 0.9
HEADER_WEIGHT = 0.85
SHARED_ADDRESS_WEIGHT = 0.5
OWN_ADDRESS_WEIGHT = 0.8
CDN_WEIGHT = 0.6
DNS_FAILURE_WEIGHT = 0.3
HEADER_CONFLICT_WEIGHT = -0.25
TLS_PEERS_COMPARED = 8  # a site's certificate is compared with this many others of its origin
EDGE_SAMPLE = 3
"""Sites reaching a shared name or address directly whose answers decide whether it is a CDN
edge (or all of them, when fewer share it)."""

NO_SPLIT_EVIDENCE = "no evidence that different backends serve it"
"""Why sites sharing a name or address stay one origin once their answers are in: a wrong
split breaks the promise to a server, a wrong merge only costs speed."""

_KEY_PRIORITY = {"cname": 4, "ptr": 3, "hdr": 2, "addr": 1}


def own_origin(host: str) -> str:
    """The origin of a site grouped with no other, named after it: nobody else books there."""
    return f"site:{host}"


@dataclass(frozen=True, slots=True)
class SiteFacts:
    """Everything known about one site. ``headers`` and ``tls`` are None when not probed."""

    host: str
    dns: DnsFacts
    headers: HeaderFingerprint | None = None
    tls: TlsFacts | None = None


@dataclass(frozen=True, slots=True)
class Assignment:
    site: str
    origin: str
    confidence: float
    evidence: tuple[Evidence, ...]
    provisional: bool = False
    """The origin groups the site on a shared name or address whose first answers have not
    told yet whether it is a CDN edge (strangers) or a platform (one origin): book little
    ahead on it. Not stored: it holds for seconds."""

    def to_json(self) -> dict[str, object]:
        return {
            "site": self.site,
            "origin": self.origin,
            "confidence": round(self.confidence, 3),
            "evidence": [e.to_json() for e in self.evidence],
        }


class _Union:
    def __init__(self, items: Iterable[str]) -> None:
        self.parent = {item: item for item in items}

    def find(self, item: str) -> str:
        root = item
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[item] != root:
            self.parent[item], item = root, self.parent[item]
        return root

    def union(self, items: Iterable[str]) -> None:
        iterator = iter(items)
        first = next(iterator, None)
        if first is None:
            return
        root = self.find(first)
        for item in iterator:
            other = self.find(item)
            if other != root:
                self.parent[other] = root


class _Clustering:
    def __init__(self, facts: Mapping[str, SiteFacts], rules: CdnRules) -> None:
        self.facts = facts
        self.rules = rules
        self.union = _Union(facts)
        self.evidence: dict[str, list[Evidence]] = defaultdict(list)
        self.keys: dict[str, set[str]] = defaultdict(set)
        self.cdn: dict[str, str] = {}
        self.depth: dict[str, int] = defaultdict(int)  # key -> deepest position in a chain
        self.edge_names: dict[str, str] = {}
        """Shared CNAME names that behave as CDN edges -> why."""
        self.edge_addresses: dict[str, str] = {}
        """Shared addresses that are CDN edges (published ranges, behaviour) -> why."""
        self.pending: set[str] = set()
        """Shared names and addresses whose direct sites have not all answered the sample."""
        self.holding: set[str] = set()
        """Sites on an edge that waits for their first answer with the platforms there."""
        self.kept: dict[str, str] = {}
        """Shared names and addresses whose sample is in and shows no edge -> why together."""

    def run(self) -> dict[str, Assignment]:
        resolved = [f for f in self.facts.values() if f.dns.error is None]
        self._behaving_edges(resolved)
        usable = [f for f in self.facts.values() if self._usable(f)]
        self._by_cname(usable)
        self._behind_edges([f for f in usable if f.host in self.cdn])
        self._by_address([f for f in usable if f.host not in self.cdn])
        return self._assign()

    # -- edges known by behaviour -------------------------------------------------------

    def _behaving_edges(self, sites: list[SiteFacts]) -> None:
        """Shared names and addresses whose direct sites answer as a CDN edge does (rule 2)."""
        by_link: dict[str, list[SiteFacts]] = defaultdict(list)
        for site in sites:
            for link in site.dns.cname_chain:
                by_link[link].append(site)
                if self.rules.name_reason(link) is not None:
                    break  # a known CDN's name: the chain's own names end here
        shared = {link for link, members in by_link.items() if len(members) > 1}
        for link, members in by_link.items():
            if link not in shared:
                continue
            direct = [m for m in members if _direct(m.dns.cname_chain, link, shared)]
            if self.rules.name_reason(link) is not None:
                self._known_cdn_name(link, direct)
                continue
            platform = _speaks_for_platform(link, direct)
            reason = None if platform is not None else _edge_behaviour(link, direct)
            if reason is not None:
                self.edge_names[link] = reason
            elif _sample_pending(direct) or (platform is None and _may_yet_prove(direct)):
                self.pending.add(link)
            else:
                self.kept[link] = platform or NO_SPLIT_EVIDENCE
        by_address: dict[str, list[SiteFacts]] = defaultdict(list)
        for site in sites:
            for address in site.dns.addresses:
                by_address[address].append(site)
        for address, members in by_address.items():
            published = published_cdn_range(address)
            if published is not None:
                self.edge_addresses[address] = f"{address} is in {published}"
            elif len(members) > 1 and not any(m.dns.ptr.get(address) for m in members):
                # A PTR name names the server: sites on it are never strangers on an edge.
                reason = _edge_behaviour(address, members)
                if reason is not None:
                    self.edge_addresses[address] = reason
                elif _sample_pending(members) or _may_yet_prove(members):
                    self.pending.add(address)
                else:
                    self.kept[address] = NO_SPLIT_EVIDENCE

    def _known_cdn_name(self, link: str, direct: list[SiteFacts]) -> None:
        """A known CDN's name shared by several sites is an edge, unless every answer of its
        sites shows one distinctive backend: then it is one platform's own distribution
        (``d123.cloudfront.net`` is one customer's) and groups them like a name of its own.
        Until every one has answered, its sites are one origin: a platform's tenants must not
        each start on a budget of their own before their answers can show the brand."""
        answered = [s for s in direct if s.headers is not None]
        if len(answered) < len(direct):
            # Every site, not a sample: behind a name a CDN gives one customer, any site not
            # heard from yet may be that customer's platform's tenant.
            self.pending.add(link)
            return
        backends = _backends(answered)
        if len(backends) == 1 and len(backends[0][1]) == len(answered) and _chose(backends[0][1]):
            fingerprint = backends[0][1][0].headers
            assert fingerprint is not None
            self.kept[link] = (
                f"a CDN's name, but every answer of its sites shows one backend "
                f"({fingerprint.describe()}): a platform's own distribution"
            )

    def _edge_reason(self, site: SiteFacts) -> str | None:
        for link in site.dns.cname_chain:
            if link in self.edge_names:
                return self.edge_names[link]
        addresses = site.dns.addresses
        if addresses and all(a in self.edge_addresses for a in addresses):
            return self.edge_addresses[addresses[0]]
        return None

    def _behind_edges(self, sites: list[SiteFacts]) -> None:
        """Sites behind CDN edges: one origin only where distinctive evidence is shared."""
        for signature, holders in _backends(sites):
            if len(holders) > 1:
                self._one_fingerprint(signature, holders, "behind CDN edges", (f"hdr:{signature}",))
        self._hold_with_brands(sites)

    def _hold_with_brands(self, sites: list[SiteFacts]) -> None:
        """A site reaching an edge directly whose answer is not in yet waits with the platforms
        already seen there: where one platform's tenants sit straight on an edge, the rest of
        them cannot be told from strangers before they answer, and each starting on a budget
        of its own would send that platform many at once. An edge where no platform shows
        keeps its strangers apart from the start."""
        by_edge: dict[str, list[SiteFacts]] = defaultdict(list)
        for site in sites:
            if not self._platform_links(site.dns):
                by_edge[self._edge_of(site)].append(site)
        for edge, direct in by_edge.items():
            waiting = [s.host for s in direct if s.headers is None]
            brands = [(sig, h) for sig, h in _backends(direct) if _chose(h)]
            if not waiting or not brands:
                continue
            self.union.union([*(h[0].host for _, h in brands), *waiting])
            self.holding.update(waiting)
            # Named after the first platform seen there: the name stays when they answer.
            signature, holders = brands[0]
            for host in (*(h.host for h in holders), *waiting):
                self.keys[host].add(f"hdr:{signature}")
            detail = (
                f"reaches {edge}, where a platform's tenants answer too: it waits with them "
                "until its own first answer is in"
            )
            for host in waiting:
                self.evidence[host].append(Evidence(Kind.CDN, edge, CDN_WEIGHT, detail))

    def _edge_of(self, site: SiteFacts) -> str:
        """The edge a site reaches: its first CDN name, else its addresses."""
        for name in site.dns.cname_chain:
            if name in self.edge_names or self.rules.name_reason(name) is not None:
                return name
        return ",".join(sorted(site.dns.addresses))

    def _usable(self, site: SiteFacts) -> bool:
        if site.dns.error is not None:
            self.evidence[site.host].append(
                Evidence(
                    Kind.DNS_FAILURE,
                    site.dns.error.split(":", 1)[0],
                    DNS_FAILURE_WEIGHT,
                    site.dns.error,
                )
            )
            return False
        reason = (
            self.rules.name_reason(site.host)
            or self.rules.first_name_reason(site.dns.cname_chain)
            or self.rules.first_name_reason(site.dns.ptr_names)
            or self._edge_reason(site)
        )
        if reason is not None:
            self.cdn[site.host] = reason
            detail = f"behind a CDN edge: {reason}"
            if site.headers is None or site.headers.signature is None:
                detail += "; no distinctive backend evidence, so an origin of its own"
            self.evidence[site.host].append(Evidence(Kind.CDN, "edge", CDN_WEIGHT, detail))
        return True

    def _platform_links(self, dns: DnsFacts) -> list[str]:
        links = []
        for name in dns.cname_chain:
            if name in self.edge_names:
                break
            if self.rules.name_reason(name) is not None:
                if name in self.kept or name in self.pending:
                    links.append(name)  # a platform's own distribution, or not told yet
                break
            links.append(name)
        return links

    def _by_cname(self, sites: list[SiteFacts]) -> None:
        groups: dict[str, list[str]] = defaultdict(list)
        for site in sites:
            for depth, link in enumerate(self._platform_links(site.dns)):
                groups[link].append(site.host)
                self.depth[f"cname:{link}"] = max(self.depth[f"cname:{link}"], depth)
        for site in sites:
            # ``www.example.test`` CNAMEs to ``example.test``: the name it aliases is a site of
            # the set, served by the same server (unless that name is a CDN's own).
            if site.host in groups and site.host not in self.cdn:
                groups[site.host].append(site.host)
        for link, hosts in groups.items():
            if len(hosts) < 2:
                continue
            self.union.union(hosts)
            detail = f"{len(hosts)} sites CNAME to {link}"
            if link in self.kept:
                detail += f"; kept together: {self.kept[link]}"
            for host in hosts:
                self.evidence[host].append(Evidence(Kind.CNAME, link, CNAME_WEIGHT, detail))
                self.keys[host].add(f"cname:{link}")

    def _by_address(self, sites: list[SiteFacts]) -> None:
        groups: dict[str, list[SiteFacts]] = defaultdict(list)
        ptr: dict[str, tuple[str, ...]] = {}
        for site in sites:
            for address in site.dns.addresses:
                groups[address].append(site)
                if site.dns.ptr.get(address):
                    ptr[address] = site.dns.ptr[address]
        for address, members in groups.items():
            if len(members) < 2:
                continue
            names = ptr.get(address, ())
            if names:
                self._named_server(address, names, members)
            else:
                self._indeterminate(address, members)
        for site in sites:
            if all(len(groups[a]) < 2 for a in site.dns.addresses) and not self.keys[site.host]:
                detail = "no other site resolves to " + ", ".join(site.dns.addresses)
                self.evidence[site.host].append(
                    Evidence(
                        Kind.OWN_ADDRESS, ",".join(site.dns.addresses), OWN_ADDRESS_WEIGHT, detail
                    )
                )

    def _named_server(self, address: str, names: tuple[str, ...], members: list[SiteFacts]) -> None:
        hosts = [m.host for m in members]
        self.union.union(hosts)
        detail = f"{len(hosts)} sites resolve to {address}, the server {names[0]} (PTR)"
        for host in hosts:
            self.evidence[host].append(
                Evidence(Kind.PTR_ADDRESS, f"{address} {names[0]}", PTR_WEIGHT, detail)
            )
            self.keys[host].add(f"ptr:{names[0]}")

    def _indeterminate(self, address: str, members: list[SiteFacts]) -> None:
        by_signature = dict(_backends(members))
        held = {h.host for holders in by_signature.values() for h in holders}
        others = [m for m in members if m.host not in held]
        if len(by_signature) != 1:
            # No distinctive backend, or several before the sample that would prove an edge is
            # in (then ``_behaving_edges`` took the address for one): one origin for now.
            self._shared_address(address, members)
            if by_signature:
                detail = (
                    f"{address} answers with {len(by_signature)} distinctive backends so far; "
                    "kept together until enough of its sites have answered"
                )
                for member in members:
                    self.evidence[member.host].append(
                        Evidence(Kind.HEADER_CONFLICT, address, HEADER_CONFLICT_WEIGHT, detail)
                    )
            return
        signature, holders = next(iter(by_signature.items()))
        keys = (f"hdr:{signature}", f"addr:{address}")
        self._one_fingerprint(signature, holders, f"on {address}", keys)
        self._join(address, holders, others)

    def _one_fingerprint(
        self, signature: str, holders: list[SiteFacts], where: str, keys: tuple[str, ...]
    ) -> None:
        """``holders`` answer with one distinctive fingerprint ``where`` they are: one origin."""
        self.union.union(h.host for h in holders)
        fingerprint = holders[0].headers
        assert fingerprint is not None
        detail = (
            f"{len(holders)} sites {where} answer with one distinctive fingerprint: "
            f"{fingerprint.describe()}"
        )
        for holder in holders:
            self.evidence[holder.host].append(
                Evidence(Kind.HEADERS, signature, HEADER_WEIGHT, detail)
            )
            self.keys[holder.host].update(keys)

    def _shared_address(self, address: str, members: list[SiteFacts]) -> None:
        hosts = [m.host for m in members]
        self.union.union(hosts)
        detail = f"{len(hosts)} sites resolve to {address} (no PTR name"
        detail += f"; kept together: {self.kept.get(address, NO_SPLIT_EVIDENCE)})"
        for host in hosts:
            self.evidence[host].append(
                Evidence(Kind.SHARED_ADDRESS, address, SHARED_ADDRESS_WEIGHT, detail)
            )
            self.keys[host].add(f"addr:{address}")

    def _join(self, address: str, holders: list[SiteFacts], others: list[SiteFacts]) -> None:
        """The sites on ``address`` without distinctive headers join its one platform: a
        different server product lowers their confidence but is no proof of another backend
        (one front may serve both)."""
        reference = holders[0].headers
        assert reference is not None
        joining = [holders[0].host]
        for other in others:
            if other.headers is not None and other.headers.conflicts_with(reference):
                detail = (
                    f"on {address} but its Server {other.headers.server!r} "
                    f"is not {reference.server!r}"
                )
                self.evidence[other.host].append(
                    Evidence(Kind.HEADER_CONFLICT, address, HEADER_CONFLICT_WEIGHT, detail)
                )
            joining.append(other.host)
            detail = (
                f"shares {address} with {len(holders)} sites of one platform; "
                "its own headers are not distinctive"
            )
            self.evidence[other.host].append(
                Evidence(Kind.SHARED_ADDRESS, address, SHARED_ADDRESS_WEIGHT, detail)
            )
            self.keys[other.host].add(f"addr:{address}")
        self.union.union(joining)

    def _assign(self) -> dict[str, Assignment]:
        clusters: dict[str, list[str]] = defaultdict(list)
        for host in sorted(self.facts):
            clusters[self.union.find(host)].append(host)
        used: set[str] = set()
        result: dict[str, Assignment] = {}
        for members in sorted(clusters.values(), key=lambda m: m[0]):
            origin = self._origin_id(members)
            if origin in used:
                origin = f"{origin}#{members[0]}"
            used.add(origin)
            self._header_conflicts(members)
            self._tls(members)
            provisional = any(self._provisional(self.facts[host]) for host in members)
            for host in members:
                evidence = tuple(self.evidence[host])
                confidence = combined_confidence(evidence)
                result[host] = Assignment(host, origin, confidence, evidence, provisional)
        return result

    def _provisional(self, site: SiteFacts) -> bool:
        # Whether its own answers showed an edge or not: it is grouped on a name still pending.
        if site.dns.error is not None:
            return False
        if site.host in self.holding:
            return True
        pending = self.pending
        return any(link in pending for link in self._platform_links(site.dns)) or any(
            address in pending for address in site.dns.addresses
        )

    def _origin_id(self, members: list[str]) -> str:
        if len(members) == 1:
            return own_origin(members[0])
        counts: dict[str, int] = defaultdict(int)
        for host in members:
            for key in self.keys[host]:
                counts[key] += 1
        # Most sites first; then the strongest kind; then the chain link closest to the servers,
        # which stays the same when a new tenant CNAMEs straight to it.
        return max(
            counts,
            key=lambda k: (counts[k], _KEY_PRIORITY[k.split(":", 1)[0]], self.depth.get(k, 0), k),
        )

    def _header_conflicts(self, members: list[str]) -> None:
        """Within a DNS grouping, a minority signature contradicts the rest (rule 6)."""
        signatures: dict[str, list[str]] = defaultdict(list)
        for host in members:
            headers = self.facts[host].headers
            if headers is not None and headers.signature is not None:
                signatures[headers.signature].append(host)
        if len(signatures) < 2:
            return
        majority = max(signatures, key=lambda s: (len(signatures[s]), s))
        for signature, hosts in signatures.items():
            if signature == majority:
                continue
            detail = (
                f"DNS groups it with {len(members)} sites, but its headers differ from most of them"
            )
            for host in hosts:
                self.evidence[host].append(
                    Evidence(Kind.HEADER_CONFLICT, signature, HEADER_CONFLICT_WEIGHT, detail)
                )

    def _tls(self, members: list[str]) -> None:
        with_tls = [(h, self.facts[h].tls) for h in members if self.facts[h].tls is not None]
        if len(with_tls) < 2:
            return
        for host, facts in with_tls:
            assert facts is not None
            peers = [p for p in with_tls[: TLS_PEERS_COMPARED + 1] if p[0] != host]
            relations = []
            for peer_host, peer_facts in peers[:TLS_PEERS_COMPARED]:
                assert peer_facts is not None
                relation = tls_relation(host, facts, peer_host, peer_facts)
                if relation is not None:
                    relations.append(relation)
            positive = [r for r in relations if r.weight > 0]
            if positive:
                self.evidence[host].append(max(positive, key=lambda r: r.weight))
            elif relations:
                self.evidence[host].append(relations[0])


def _direct(chain: tuple[str, ...], link: str, shared: set[str]) -> bool:
    """Does a chain reach ``link`` with no shared name before it (not through a platform)?"""
    for name in chain:
        if name == link:
            return True
        if name in shared:
            return False
    return False


def _sample_pending(direct: list[SiteFacts]) -> bool:
    """Fewer of these sites have answered than an edge decision needs."""
    observed = sum(1 for s in direct if s.headers is not None)
    return len(direct) > 1 and observed < min(EDGE_SAMPLE, len(direct))


def _backends(sites: Iterable[SiteFacts]) -> list[tuple[str, list[SiteFacts]]]:
    """The sites with distinctive answers, grouped where they share any backend mark (a
    platform header or cookie name, a platform's ``X-Powered-By`` or 404 page), each group
    named by its most common signature. Sharing any mark is enough to be one backend: the
    signature's header order differs between a robots.txt answer and a not-found page."""
    holders = [s for s in sites if s.headers is not None and s.headers.signature is not None]
    union = _Union(s.host for s in holders)
    owner: dict[str, str] = {}
    for site in holders:
        assert site.headers is not None
        for mark in site.headers.backend_marks:
            union.union((owner.setdefault(mark, site.host), site.host))
    groups: dict[str, list[SiteFacts]] = defaultdict(list)
    for site in holders:
        groups[union.find(site.host)].append(site)
    named = []
    for members in groups.values():
        counts = Counter(m.headers.signature for m in members if m.headers is not None)
        signature = max(counts, key=lambda sig: (counts[sig], sig))
        assert signature is not None
        named.append((signature, members))
    return sorted(named, key=lambda item: item[1][0].host)


def _may_yet_prove(direct: list[SiteFacts]) -> bool:
    """Every answer so far carries a CDN's own mark, without one brand shared by all of them,
    and some sites have not answered yet: the next answer may prove an edge. The group stays
    provisional (booked little ahead): if it splits, the sites moving together would carry a
    clock their strangers booked far ahead."""
    answered = [s for s in direct if s.headers is not None]
    if len(answered) == len(direct) or any(s.headers.cdn is None for s in answered if s.headers):
        return False
    backends = _backends(answered)
    return not (len(backends) == 1 and len(backends[0][1]) == len(answered))


def _chose(holders: list[SiteFacts]) -> bool:
    """Did the platform behind these answers choose something (not just a 404 page)?"""
    return any(h.headers is not None and h.headers.chosen_marks for h in holders)


def _speaks_for_platform(name: str, direct: list[SiteFacts]) -> str | None:
    """What says the shared CNAME ``name`` is one platform's, whatever its answers look like:
    a PTR name of its addresses in ``name``'s own registrable domain (the platform names its
    servers), or one certificate naming several of the sites that reach it."""
    domain = registrable_domain(name)
    if domain is not None:
        for site in direct:
            for names in site.dns.ptr.values():
                for ptr in names:
                    if registrable_domain(ptr) == domain:
                        return f"the PTR name {ptr} of its servers is in {domain}, as {name} is"
    hosts = [s.host for s in direct]
    for site in direct:
        if site.tls is not None:
            named = [h for h in hosts if h != site.host and site.tls.covers(h)]
            if len(named) >= 2:
                return f"the certificate of {site.host} names {len(named)} other sites on {name}"
    return None


def _edge_behaviour(name: str, direct: list[SiteFacts]) -> str | None:
    """Why the shared ``name`` (or address) is a CDN edge by what its direct sites answered,
    or None. Only positive evidence that different backends serve it counts (a wrong split
    breaks the promise to a server, a wrong merge costs speed): once enough of them have
    answered (``EDGE_SAMPLE``), either their answers show two different distinctive
    backends (each in two answers or more), or every answer carries a CDN's own mark (a
    vendor's header or value shape, never a header name any cache adds) and they come from
    different server products."""
    answered = [s for s in direct if s.headers is not None]
    observed = [s.headers for s in answered if s.headers is not None]
    if len(direct) < 2 or len(observed) < min(EDGE_SAMPLE, len(direct)):
        return None
    backends = _backends(answered)
    # A backend counts once two answers show it: an app on a platform may set a cookie of its
    # own, which makes one tenant look like a backend of its own.
    chosen = [h[0].headers for _, h in backends if _chose(h) and len(h) > 1]
    reaching = f"{name}: {len(direct)} sites reach it"
    if len(chosen) >= 2:
        shown = "; ".join(fp.describe() for fp in chosen[:2] if fp is not None)
        return f"{reaching} and their answers show {len(chosen)} different backends ({shown})"
    if backends and sum(len(holders) for _, holders in backends) == len(observed):
        return None  # one distinctive backend: a platform, behind a CDN or not
    mark = observed[0].cdn
    products = sorted({fp.product for fp in observed if fp.product})
    if any(fp.cdn is None for fp in observed) or mark is None or len(products) < 2:
        return None
    return (
        f"{reaching}, every answer carries a CDN's own mark ({mark}) and they come from "
        f"{len(products)} different server stacks ({', '.join(products[:4])})"
    )


def cluster(facts: Iterable[SiteFacts], rules: CdnRules | None = None) -> dict[str, Assignment]:
    """Assign every site an origin, a confidence and the evidence for it (see module rules)."""
    table = {f.host: f for f in sorted(facts, key=lambda f: f.host)}
    return _Clustering(table, rules or CdnRules()).run()


@dataclass(frozen=True, slots=True)
class OriginChange:
    site: str
    old: str | None
    new: str

    def describe(self) -> str:
        if self.old is None:
            return f"{self.site}: origin {self.new}"
        return f"{self.site}: origin {self.old} -> {self.new}"


def origin_changes(
    previous: Mapping[str, str], current: Mapping[str, Assignment]
) -> list[OriginChange]:
    """Sites whose origin differs from ``previous`` (new sites included, old=None)."""
    return [
        OriginChange(site, previous.get(site), a.origin)
        for site, a in sorted(current.items())
        if previous.get(site) != a.origin
    ]
