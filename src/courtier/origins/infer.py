"""Origin inference: gather evidence for hosts with bounded concurrency, then cluster.

Rules:
- DNS first, for every host (``DnsEvidenceSource``, concurrency bounded there), at most
  ``lookup_concurrency`` lookups (and ``probe_concurrency`` probes) alive at once as tasks:
  thousands of seed hosts never become thousands of tasks in one turn (``map_bounded``).
- Header probes only where DNS is indeterminate and a probe can change the answer: a host with
  no CNAME chain and no PTR name on its addresses, sharing an address with another known host.
  A host is probed once; a host whose addresses are not all allowed is never probed.
- Every call re-clusters all known hosts (new hosts can join or split existing origins) and
  returns the sites whose origin changed; each change is logged on ``courtier.origins``.
- ``recheck`` looks up again the hosts whose DNS facts have outlived their TTL; ``retry``
  the hosts whose lookup failed, at once (their server is unknown, not their own).
- ``add`` may leave stragglers out (``stragglers_after``): lookups still unanswered that long
  after the last one began are dropped, their hosts stay unknown (``failed``: ``retry``
  looks them up, on their own), and the rest are clustered without them. A crawl's sites
  wait for the inference of the seed: one unanswered question among 2,000 would otherwise
  hold every one of them for the resolver's whole timeout.
- ``observe`` takes header evidence a crawl gathered anyway (its own fetch of a site's
  robots.txt or home page), once per host, at no extra request, where headers can change the
  answer: DNS is indeterminate, or the host shares a CNAME name or an address with another
  host that may be a CDN edge rather than a platform (``cluster`` rule 2). It counts from the
  next ``add`` or ``recheck``. ``observe_tls`` likewise takes the certificate an https fetch
  saw (corroboration only, so whatever DNS says).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from courtier.origins.cdn import CdnRules, published_cdn_range
from courtier.origins.cluster import Assignment, OriginChange, SiteFacts, cluster, origin_changes
from courtier.origins.dns_evidence import DnsFacts
from courtier.origins.header_evidence import HeaderFingerprint, ProbeResponse, header_fingerprint
from courtier.origins.tls_evidence import TlsFacts
from courtier.runtime.bounded import map_bounded, map_bounded_but_stragglers

if TYPE_CHECKING:  # the probe's module imports aiohttp: not on a crawl's start
    from courtier.origins.probe import Probe

logger = logging.getLogger("courtier.origins")

Clock = Callable[[], float]

CLUSTER_IN_THREAD = 1_000
"""Sites from which clustering runs on a thread: 2,000 sites took 60-150 ms, a stall of the
event loop (every timer due meanwhile fires late); on a thread the loop gets the interpreter
back every switch interval (5 ms). Fewer are clustered in line, where a thread hop would
cost more than it saves."""


class DnsSource(Protocol):
    """Where DNS facts come from: ``DnsEvidenceSource``, or a table in tests."""

    async def lookup(self, host: str) -> DnsFacts:
        """The facts of ``host``; never raises (a failure is ``DnsFacts.error``)."""
        ...

    def forget_ptr(self) -> None:
        """Drop any PTR answers kept between lookups."""
        ...


@dataclass(frozen=True, slots=True)
class InferenceResult:
    assignments: Mapping[str, Assignment]
    changes: tuple[OriginChange, ...]
    recheck_at: Mapping[str, float]
    probed: int


class OriginInference:
    """The facts of every host seen so far, and the origins they give (see the module rules)."""

    def __init__(
        self,
        dns: DnsSource,
        *,
        probe: Probe | None = None,
        address_allowed: Callable[[str], bool] = lambda _address: False,
        probe_concurrency: int = 32,
        lookup_concurrency: int = 64,
        rules: CdnRules | None = None,
        clock: Clock = time.time,
    ) -> None:
        self._dns = dns
        self._probe = probe
        self._allowed = address_allowed
        self._probe_concurrency = probe_concurrency
        self._probe_slots = asyncio.Semaphore(probe_concurrency)
        self._lookup_concurrency = lookup_concurrency
        self._rules = rules or CdnRules()
        self._clock = clock
        self._facts: dict[str, SiteFacts] = {}
        self._hosts_per_address: Counter[str] = Counter()
        """How many known hosts resolve to each address (kept with ``_facts``): the crawl
        asks "is this address shared?" once per site, so it must not recount every host."""
        self._hosts_per_link: Counter[str] = Counter()
        """How many known hosts have each name in their CNAME chain (kept with ``_facts``)."""
        self._probed: set[str] = set()
        self._checked_at: dict[str, float] = {}
        self._assignments: dict[str, Assignment] = {}
        self._clustering = asyncio.Lock()
        self._left_out: set[str] = set()
        """Hosts whose first lookup ``add`` gave up waiting for (``retry`` asks again)."""

    @property
    def assignments(self) -> Mapping[str, Assignment]:
        return self._assignments

    def facts(self) -> Mapping[str, SiteFacts]:
        """The facts of every known host, as the clusterer last saw them."""
        return dict(self._facts)

    def origin_of(self, host: str) -> str | None:
        """The origin id of a known host (the politeness engine's ``origin`` key), or None."""
        assignment = self._assignments.get(host)
        return None if assignment is None else assignment.origin

    def provisional(self, host: str) -> bool:
        """Whether ``host``'s origin still waits for the first answers that tell a CDN edge
        from a platform (``Assignment.provisional``)."""
        assignment = self._assignments.get(host)
        return assignment is not None and assignment.provisional

    def failed(self, host: str) -> bool:
        """Whether ``host`` is unknown or its last DNS lookup failed (its origin is a guess)."""
        facts = self._facts.get(host)
        return facts is None or facts.dns.error is not None

    def origin_sharing(self, addresses: Iterable[str]) -> str | None:
        """The origin of a placed host that resolves to one of ``addresses`` (None: none)."""
        wanted = set(addresses)
        for host, facts in self._facts.items():
            if facts.dns.error is None and wanted.intersection(facts.dns.addresses):
                return self.origin_of(host)
        return None

    def recheck_at(self) -> dict[str, float]:
        return {host: self._checked_at[host] + facts.dns.ttl for host, facts in self._facts.items()}

    def observe(self, host: str, home: ProbeResponse | None, missing: ProbeResponse | None) -> bool:
        """Header evidence from responses the caller fetched anyway. True when it was kept:
        the host is known, not probed or observed yet, and its DNS is indeterminate."""
        facts = self._facts.get(host)
        if facts is None or host in self._probed:
            return False
        if not (
            self._indeterminate(facts.dns, self._hosts_per_address) or self._maybe_edge(facts.dns)
        ):  # fetched: no check
            return False
        self._probed.add(host)
        self._facts[host] = replace(facts, headers=header_fingerprint(home, missing))
        return True

    def observe_tls(self, host: str, tls: TlsFacts) -> bool:
        """The certificate a known host presented to a fetch the caller made anyway (it only
        corroborates a grouping, so it is kept whatever DNS says). True when it is new."""
        facts = self._facts.get(host)
        if facts is None or facts.tls == tls:
            return False
        self._facts[host] = replace(facts, tls=tls)
        return True

    async def add(
        self, hosts: Iterable[str], *, stragglers_after: float | None = None
    ) -> InferenceResult:
        """Look up hosts not seen before, probe where needed, re-cluster everything.
        ``stragglers_after``: leave out lookups unanswered this many seconds after the last
        one began (a host left out is not asked again by ``add``, only by ``retry``)."""
        new = [h for h in dict.fromkeys(hosts) if h not in self._facts and h not in self._left_out]
        await self._lookup(new, stragglers_after)
        return await self._finish()

    async def retry(self, hosts: Iterable[str]) -> InferenceResult:
        """Look up again those of ``hosts`` whose lookup failed (a timeout under load, a
        resolver restarting), then re-cluster: a failed host is a singleton until then."""
        failed = [h for h in dict.fromkeys(hosts) if self.failed(h)]
        await self._lookup(failed)
        return await self._finish()

    async def recheck(self) -> InferenceResult:
        """Look up again every host whose DNS facts have expired, then re-cluster."""
        now = self._clock()
        due = [host for host, at in self.recheck_at().items() if at <= now]
        self._dns.forget_ptr()
        await self._lookup(due)
        return await self._finish()

    async def _lookup(self, hosts: list[str], stragglers_after: float | None = None) -> None:
        if stragglers_after is None:
            found = await map_bounded(self._dns.lookup, hosts, self._lookup_concurrency)
        else:
            answered = await map_bounded_but_stragglers(
                self._dns.lookup, hosts, self._lookup_concurrency, stragglers_after
            )
            found = [answered[i] for i in sorted(answered)]
            left_out = [host for i, host in enumerate(hosts) if i not in answered]
            if left_out:
                logger.info(
                    "%d of %d hosts left out of origin inference for now (no DNS answer "
                    "%.1f s after the last lookup began): %s",
                    len(left_out),
                    len(hosts),
                    stragglers_after,
                    ", ".join(left_out[:5]),
                )
            self._left_out.update(left_out)
        now = self._clock()
        for facts in found:
            self._left_out.discard(facts.host)
            old = self._facts.get(facts.host)
            if old is not None:
                self._hosts_per_address.subtract(set(old.dns.addresses))
                self._hosts_per_link.subtract(set(old.dns.cname_chain))
            self._hosts_per_address.update(set(facts.addresses))
            self._hosts_per_link.update(set(facts.cname_chain))
            keep_headers = old is not None and old.dns.addresses == facts.addresses
            if not keep_headers:
                self._probed.discard(facts.host)
            headers = old.headers if old is not None and keep_headers else None
            tls = old.tls if old is not None else None
            self._facts[facts.host] = SiteFacts(facts.host, facts, headers, tls)
            self._checked_at[facts.host] = now

    async def _finish(self) -> InferenceResult:
        probed = await self._probe_indeterminate()
        async with self._clustering:  # in the order asked: a later call sees later facts
            facts = list(self._facts.values())
            if len(facts) < CLUSTER_IN_THREAD:
                assignments = cluster(facts, self._rules)
            else:
                assignments = await asyncio.to_thread(cluster, facts, self._rules)
            previous = {site: a.origin for site, a in self._assignments.items()}
            self._assignments = assignments
        changes = origin_changes(previous, assignments)
        for change in changes:
            if change.old is not None:
                logger.info("origin changed: %s", change.describe())
        return InferenceResult(dict(assignments), tuple(changes), self.recheck_at(), probed)

    @staticmethod
    def _indeterminate(facts: DnsFacts, shared: Counter[str]) -> bool:
        """DNS cannot explain the host: no CNAME, no PTR, an address shared with another."""
        if facts.error is not None or facts.cname_chain or facts.ptr:
            return False
        return any(shared[a] > 1 for a in facts.addresses)

    def _maybe_edge(self, facts: DnsFacts) -> bool:
        """The host shares a name or an address with another host, or stands behind a known
        CDN: its answers tell whether that is an edge (strangers) or a platform (one origin),
        and behind a known CDN only a brand they share groups a platform's tenants."""
        if facts.error is not None:
            return False
        for name in facts.cname_chain:
            if self._rules.name_reason(name) is not None:
                return True
            if self._hosts_per_link[name] > 1:
                return True
        if any(published_cdn_range(a) is not None for a in facts.addresses):
            return True
        if self._rules.first_name_reason(facts.ptr_names) is not None:
            return True
        return any(self._hosts_per_address[a] > 1 for a in facts.addresses)

    def _needs_probe(self, facts: DnsFacts, shared: Counter[str]) -> bool:
        return self._indeterminate(facts, shared) and all(self._allowed(a) for a in facts.addresses)

    async def _probe_indeterminate(self) -> int:
        if self._probe is None:
            return 0
        shared = self._hosts_per_address
        todo = [
            f
            for host, f in self._facts.items()
            if host not in self._probed and self._needs_probe(f.dns, shared)
        ]
        results = await map_bounded(self._probe_one, todo, self._probe_concurrency)
        for facts, headers in zip(todo, results, strict=True):
            self._probed.add(facts.host)
            self._facts[facts.host] = replace(facts, headers=headers)
        return len(todo)

    async def _probe_one(self, facts: SiteFacts) -> HeaderFingerprint | None:
        assert self._probe is not None
        async with self._probe_slots:
            try:
                return await self._probe(facts.host, facts.dns.addresses)
            except Exception:  # a probe that breaks its contract must not stop inference
                logger.exception("origin probe of %s failed", facts.host)
                return None
