"""Promotion: which horizon hosts earn a place in the seed this cycle.

Rules (each one closes a way to game the ranking):
- **Trust flows only from the seed.** PageRank's teleport vector is spread over the trusted
  hosts (seed and requested) only, and dangling rank returns there too. A group of hosts that
  link only to each other, with no link from the seed, receives exactly zero score however
  densely it links itself ("a link farm never rises").
- **Independent evidence.** A horizon host is promoted only when at least
  ``min_seed_sources`` distinct trusted hosts link to it, and those hosts belong to at least
  ``min_source_domains`` distinct registrable domains. One link from one page, or fifty
  subdomains of one owner, is not a vote of the web ("nothing is promoted for being linked
  once").
- **Owners do not vote for themselves.** Links between hosts of one registrable domain never
  count as evidence, and are left out of the ranking unless ``count_same_domain_links`` is set
  (``a.farm.test -> b.farm.test`` is one owner talking to itself).
- **Every source has one vote.** Each host spreads a total weight of one over the hosts it
  links to, and repeated links count sub-linearly (``log1p(links)``), so a footer link on
  10,000 pages of one site weighs about 13 times one link, not 10,000 times.
- Only hosts in the horizon state are candidates; suspended hosts are never re-promoted here.
  Ties break on the host name so a cycle is deterministic.

Everything here is pure: the engine reads ``host_links`` and the site states from the store,
calls ``plan_promotions``, logs each decision and moves the promoted hosts into the seed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from courtier.frontier.base import SiteState
from courtier.graph.pagerank import (
    DEFAULT_DAMPING,
    DEFAULT_MAX_ITERATIONS,
    DEFAULT_TOLERANCE,
    GraphError,
    pagerank,
)
from courtier.url import UrlError, registrable_domain

TRUSTED_STATES = frozenset({SiteState.SEED, SiteState.REQUESTED})
CANDIDATE_STATE = SiteState.HORIZON


@dataclass(frozen=True, slots=True)
class HostLink:
    """``links`` links seen from pages of host ``src`` to host ``dst``."""

    src: str
    dst: str
    links: int


@dataclass(frozen=True, slots=True)
class RankingParams:
    damping: float = DEFAULT_DAMPING
    tolerance: float = DEFAULT_TOLERANCE
    max_iterations: int = DEFAULT_MAX_ITERATIONS
    count_same_domain_links: bool = False


@dataclass(frozen=True, slots=True)
class PromotionRules:
    promote: int
    min_seed_sources: int = 2
    min_source_domains: int = 2
    min_score: float = 0.0
    report_held_back: int = 100  # how many outranking-but-failing hosts a round reports

    def __post_init__(self) -> None:
        if self.promote < 0:
            raise ValueError(f"promote must be >= 0, got {self.promote}")
        if self.min_seed_sources < 1 or self.min_source_domains < 1:
            raise ValueError("min_seed_sources and min_source_domains must be >= 1")
        if self.report_held_back < 0:
            raise ValueError(f"report_held_back must be >= 0, got {self.report_held_back}")
        if not math.isfinite(self.min_score) or self.min_score < 0.0:
            raise ValueError(f"min_score must be finite and >= 0, got {self.min_score}")


@dataclass(frozen=True, slots=True)
class HostRanking:
    """PageRank scores per host name, with how the iteration ended."""

    scores: Mapping[str, float]
    iterations: int
    converged: bool


@dataclass(frozen=True, slots=True)
class PromotionDecision:
    """One candidate's verdict, for the promotion log."""

    host: str
    score: float
    rank: int  # 1-based position among horizon candidates by score
    seed_sources: int
    source_domains: int
    promoted: bool
    reason: str

    def log_fields(self) -> dict[str, object]:
        return {
            "host": self.host,
            "score": self.score,
            "rank": self.rank,
            "seed_sources": self.seed_sources,
            "source_domains": self.source_domains,
            "promoted": self.promoted,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class PromotionRound:
    """The hosts promoted this cycle and (up to ``report_held_back`` of) those that outranked
    the last of them but failed a rule, best first."""

    promoted: tuple[PromotionDecision, ...]
    held_back: tuple[PromotionDecision, ...]
    ranking: HostRanking = field(repr=False)


def plan_promotions(
    links: Iterable[HostLink],
    states: Mapping[str, str],
    rules: PromotionRules,
    params: RankingParams = RankingParams(),
) -> PromotionRound:
    """Rank the host graph and choose up to ``rules.promote`` horizon hosts to promote."""
    owners = _Owners()
    usable = _usable_links(links, params.count_same_domain_links, owners)
    ranking = _rank(usable, states, params)
    return _choose(ranking, usable, states, rules, owners)


def rank_hosts(
    links: Iterable[HostLink],
    states: Mapping[str, str],
    params: RankingParams = RankingParams(),
) -> HostRanking:
    """PageRank over the host graph with teleport restricted to trusted (seed) hosts.

    Every host in ``states`` or in a link gets a score. With no trusted host at all there is
    nothing to anchor trust to, and every score is zero.
    """
    return _rank(_usable_links(links, params.count_same_domain_links, _Owners()), states, params)


def _rank(usable: list[HostLink], states: Mapping[str, str], params: RankingParams) -> HostRanking:
    hosts = sorted({host for link in usable for host in (link.src, link.dst)} | set(states))
    index = {host: position for position, host in enumerate(hosts)}
    teleport = np.array([1.0 if states.get(h) in TRUSTED_STATES else 0.0 for h in hosts])
    if not hosts or not teleport.any():
        return HostRanking({host: 0.0 for host in hosts}, 0, True)
    src = np.fromiter((index[link.src] for link in usable), np.int64, len(usable))
    dst = np.fromiter((index[link.dst] for link in usable), np.int64, len(usable))
    weight = np.fromiter((math.log1p(link.links) for link in usable), np.float64, len(usable))
    result = pagerank(
        len(hosts),
        src,
        dst,
        weight,
        damping=params.damping,
        teleport=teleport,
        tolerance=params.tolerance,
        max_iterations=params.max_iterations,
    )
    scores = dict(zip(hosts, (float(s) for s in result.scores), strict=True))
    return HostRanking(scores, result.iterations, result.converged)


def choose_promotions(
    ranking: HostRanking,
    links: Sequence[HostLink],
    states: Mapping[str, str],
    rules: PromotionRules,
) -> PromotionRound:
    """Walk horizon hosts by descending score; promote those that pass every rule."""
    return _choose(ranking, links, states, rules, _Owners())


def _choose(
    ranking: HostRanking,
    links: Sequence[HostLink],
    states: Mapping[str, str],
    rules: PromotionRules,
    owners: _Owners,
) -> PromotionRound:
    evidence = _seed_evidence(links, states, owners)
    candidates = sorted(
        (host for host in ranking.scores if states.get(host) == CANDIDATE_STATE),
        key=lambda host: (-ranking.scores[host], host),
    )
    promoted: list[PromotionDecision] = []
    held_back: list[PromotionDecision] = []
    for rank, host in enumerate(candidates, start=1):
        if len(promoted) >= rules.promote or ranking.scores[host] <= rules.min_score:
            break  # sorted by score: nobody further down can pass the score rule either
        sources, domains = evidence.get(host, (frozenset(), frozenset()))
        reason = _failed_rule(ranking.scores[host], len(sources), len(domains), rules)
        decision = PromotionDecision(
            host=host,
            score=ranking.scores[host],
            rank=rank,
            seed_sources=len(sources),
            source_domains=len(domains),
            promoted=reason is None,
            reason=reason or "passed every rule",
        )
        if reason is None:
            promoted.append(decision)
        elif len(held_back) < rules.report_held_back:
            held_back.append(decision)
    return PromotionRound(tuple(promoted), tuple(held_back), ranking)


def _failed_rule(score: float, sources: int, domains: int, rules: PromotionRules) -> str | None:
    if score <= rules.min_score:
        return f"score {score:.3g} not above min_score {rules.min_score:.3g}"
    if sources < rules.min_seed_sources:
        return f"linked from {sources} seed host(s), needs {rules.min_seed_sources}"
    if domains < rules.min_source_domains:
        return f"linked from {domains} seed domain(s), needs {rules.min_source_domains}"
    return None


def _seed_evidence(
    links: Iterable[HostLink], states: Mapping[str, str], owners: _Owners
) -> dict[str, tuple[frozenset[str], frozenset[str]]]:
    """Per destination: the distinct trusted hosts of other owners linking to it, and their
    registrable domains. A destination's own domain never vouches for it."""
    sources: dict[str, set[str]] = {}
    for link in links:
        if link.links <= 0 or states.get(link.src) not in TRUSTED_STATES:
            continue
        if owners[link.src] != owners[link.dst]:
            sources.setdefault(link.dst, set()).add(link.src)
    return {
        dst: (frozenset(srcs), frozenset(owners[src] for src in srcs))
        for dst, srcs in sources.items()
    }


def _usable_links(
    links: Iterable[HostLink], count_same_domain: bool, owners: _Owners
) -> list[HostLink]:
    """Drop self-links, empty links and (unless counted) links within one owner's domain."""
    usable = []
    for link in links:
        if link.links < 0:
            raise GraphError(f"negative link count {link.links} for {link.src} -> {link.dst}")
        if link.links == 0 or link.src == link.dst:
            continue
        if not count_same_domain and owners[link.src] == owners[link.dst]:
            continue
        usable.append(link)
    return usable


class _Owners(dict[str, str]):
    """Host -> registrable domain (the host itself for IPs and unparseable names), each host
    looked up once per call however many links it has."""

    def __missing__(self, host: str) -> str:
        try:
            owner = registrable_domain(host) or host
        except UrlError:
            owner = host
        self[host] = owner
        return owner
