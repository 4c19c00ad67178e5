"""One ranking cycle over a crawl's store: PageRank over the host graph, then promotion.

Rules (beyond those of ``courtier.graph.promotion``: trust flows only from the seed, nothing
is promoted for being linked once, a link farm never rises):
- **Media hosts are never promoted.** Object-store endpoints and buckets
  (``courtier.url.object_store``) and the CDN and image-service hosts
  (``courtier.politeness.keys.KeyRules``) serve other sites' media and are fetched under their
  own limit keys; their root is not a site to crawl, however often seed pages embed them.
  They keep their place in the graph (they still absorb rank) but are not candidates.
- **Address literals are never promoted.** A host named by its IP address has no owner to
  judge by (no registrable domain), is the usual shape of SSRF bait (every spelling of one
  address, linked from every page) and is no site a user would name. Ranked, not a candidate.
- Root URL first, state second: an interruption in between leaves an inert queued URL, which
  the next cycle's promotion writes again harmlessly, never a seed site with nothing to fetch.
- Used by ``courtier rank`` and by the crawl itself (``[frontier] promote`` hosts every
  ``rank_every`` seconds); either way each promotion is logged with its score.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from courtier.frontier.base import FrontierStore, NewUrl, SiteState
from courtier.graph.promotion import (
    CANDIDATE_STATE,
    HostLink,
    PromotionDecision,
    PromotionRound,
    PromotionRules,
    plan_promotions,
)
from courtier.politeness.keys import KeyRules
from courtier.url import UrlError, host_of_site, is_ip_address, object_store, parse_url

log = logging.getLogger("courtier.graph")

MEDIA_STATE = "media"
"""Stands in for ``horizon`` in the ranking's view of a media host: ranked, never a candidate."""
ADDRESS_STATE = "address"
"""Likewise for a host that is an IP address literal."""
_BUCKET_PROBE = "/courtier-probe/key"
"""A path that addresses a bucket on a path-style endpoint, so its host is recognised too."""


def is_media_host(site: str, rules: KeyRules | None = None) -> bool:
    """True for object-store endpoints and buckets, CDN and image-service hosts."""
    rules = rules or KeyRules()
    host = host_of_site(site)
    if host in rules.cdn_hosts or host in rules.imgsvc_hosts or rules.cdn_named(host):
        return True
    try:
        return any(object_store(f"http://{site}{path}") for path in ("/", _BUCKET_PROBE))
    except UrlError:
        return False


def ranking_states(states: Mapping[str, str]) -> dict[str, str]:
    """The site states as the promotion rules should see them: media hosts and address
    literals in the horizon are not candidates."""
    return {site: _ranking_state(site, state) for site, state in states.items()}


def _ranking_state(site: str, state: str) -> str:
    if state != CANDIDATE_STATE:
        return state
    if is_ip_address(host_of_site(site)):
        return ADDRESS_STATE
    return MEDIA_STATE if is_media_host(site) else state


def promote(store: FrontierStore, decisions: tuple[PromotionDecision, ...], now: float) -> None:
    """Queue each promoted host's root URL, then move the hosts into the seed."""
    roots = [parse_url(f"http://{d.host}/") for d in decisions]
    store.write_batch([NewUrl(u.canonical, u.fetch_url, u.site, 0) for u in roots], [], [], now)
    store.add_sites([d.host for d in decisions], SiteState.SEED, now)
    for decision in decisions:
        log.info(
            "promoted %s to the seed: score %.6g, rank %d among horizon hosts, linked from "
            "%d seed hosts of %d domains",
            decision.host,
            decision.score,
            decision.rank,
            decision.seed_sources,
            decision.source_domains,
        )


def ranking_cycle(
    store: FrontierStore, promote_k: int, now: float, *, dry_run: bool = False
) -> tuple[PromotionRound, dict[str, str], int]:
    """Rank the store's host graph and promote up to ``promote_k`` horizon hosts (unless
    ``dry_run``). Returns the round, the states the ranking saw and the number of edges.
    Raises ``courtier.graph.pagerank.GraphError`` on a graph that cannot be ranked."""
    links = [HostLink(e.src, e.dst, e.links) for e in store.host_links()]
    seen = ranking_states(store.site_states())
    cycle = plan_promotions(links, seen, PromotionRules(promote=promote_k))
    if cycle.promoted and not dry_run:
        promote(store, cycle.promoted, now)
    return cycle, seen, len(links)
