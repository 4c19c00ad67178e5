import pytest

from courtier.frontier.base import SiteState
from courtier.graph.promotion import (
    HostLink,
    PromotionRules,
    RankingParams,
    plan_promotions,
    rank_hosts,
)

SEED = SiteState.SEED
HORIZON = SiteState.HORIZON

SEEDS = ["news.alpha.test", "blog.beta.test", "www.gamma.test", "shop.delta.test"]
FARM = [f"spam{i}.farm{i}.test" for i in range(20)]


def _world() -> tuple[list[HostLink], dict[str, str]]:
    """Four seed sites; a horizon host cited by three of them; one cited once (many times);
    a twenty-domain link farm that links only to itself; a seed site that also links a
    horizon host from several of its own subdomains."""
    links = [
        HostLink("news.alpha.test", "popular.test", 3),
        HostLink("blog.beta.test", "popular.test", 1),
        HostLink("www.gamma.test", "popular.test", 2),
        HostLink("news.alpha.test", "cited-twice.test", 1),
        HostLink("shop.delta.test", "cited-twice.test", 1),
        HostLink("blog.beta.test", "linked-once.test", 5000),
        # The seed sites link each other too.
        HostLink("news.alpha.test", "blog.beta.test", 4),
        HostLink("blog.beta.test", "www.gamma.test", 1),
        HostLink("www.gamma.test", "news.alpha.test", 1),
        HostLink("shop.delta.test", "news.alpha.test", 1),
    ]
    for i, host in enumerate(FARM):
        links += [HostLink(host, FARM[(i + k) % len(FARM)], 1000) for k in range(1, 6)]
    states = {host: SEED for host in SEEDS}
    states.update({h: HORIZON for h in ["popular.test", "cited-twice.test", "linked-once.test"]})
    states.update({host: HORIZON for host in FARM})
    return links, states


def test_most_linked_from_seed_horizon_host_is_promoted_first():
    links, states = _world()
    result = plan_promotions(links, states, PromotionRules(promote=1))
    assert [d.host for d in result.promoted] == ["popular.test"]
    decision = result.promoted[0]
    assert decision.rank == 1 and decision.seed_sources == 3 and decision.source_domains == 3
    assert decision.score == pytest.approx(result.ranking.scores["popular.test"])
    assert decision.score > 0.0


def test_host_linked_from_one_seed_host_is_not_promoted_however_many_links():
    links, states = _world()
    result = plan_promotions(links, states, PromotionRules(promote=10))
    promoted = {d.host for d in result.promoted}
    assert promoted == {"popular.test", "cited-twice.test"}
    once = next(d for d in result.held_back if d.host == "linked-once.test")
    assert not once.promoted and once.seed_sources == 1
    assert "needs 2" in once.reason


def test_link_farm_that_links_only_to_itself_scores_zero_and_never_rises():
    links, states = _world()
    ranking = rank_hosts(links, states)
    assert all(ranking.scores[host] == 0.0 for host in FARM)
    result = plan_promotions(links, states, PromotionRules(promote=len(FARM) + 5))
    assert not {d.host for d in result.promoted} & set(FARM)


def test_link_farm_with_one_seed_link_in_is_held_back_despite_its_score():
    links, states = _world()
    # One seed page links into the farm: the farm traps and recycles that rank, and together
    # holds more of it than the best legitimate horizon host...
    links.append(HostLink("www.gamma.test", FARM[0], 1))
    ranking = rank_hosts(links, states)
    assert sum(ranking.scores[host] for host in FARM) > ranking.scores["popular.test"]
    # ...but one linking seed host is not independent evidence.
    result = plan_promotions(links, states, PromotionRules(promote=len(FARM) + 5))
    assert not {d.host for d in result.promoted} & set(FARM)
    assert any(d.host == FARM[0] for d in result.held_back)


def test_many_subdomains_of_one_owner_count_as_one_domain():
    links, states = _world()
    owner_hosts = [f"part{i}.bigsite.test" for i in range(10)]
    states.update({host: SEED for host in owner_hosts})
    states["target.test"] = HORIZON
    links += [HostLink(host, "target.test", 50) for host in owner_hosts]
    result = plan_promotions(links, states, PromotionRules(promote=10))
    target = next(d for d in result.held_back if d.host == "target.test")
    assert target.seed_sources == 10 and target.source_domains == 1
    assert "domain" in target.reason


def test_same_owner_link_does_not_vouch_for_its_own_subdomain():
    links, states = _world()
    states["shop.alpha.test"] = HORIZON
    links += [
        HostLink("news.alpha.test", "shop.alpha.test", 9),
        HostLink("blog.beta.test", "shop.alpha.test", 1),
    ]
    result = plan_promotions(links, states, PromotionRules(promote=10))
    shop = next(d for d in result.held_back if d.host == "shop.alpha.test")
    assert shop.seed_sources == 1


def test_only_horizon_hosts_are_candidates_and_the_cap_is_respected():
    links, states = _world()
    states["cited-twice.test"] = SiteState.SUSPENDED
    result = plan_promotions(links, states, PromotionRules(promote=5))
    hosts = {d.host for d in result.promoted + result.held_back}
    assert not hosts & set(SEEDS)
    assert "cited-twice.test" not in hosts
    assert len(plan_promotions(links, states, PromotionRules(promote=0)).promoted) == 0


def test_requested_hosts_are_trusted_sources_like_the_seed():
    links, states = _world()
    states["blog.beta.test"] = SiteState.REQUESTED
    result = plan_promotions(links, states, PromotionRules(promote=1))
    assert result.promoted[0].host == "popular.test"
    assert result.promoted[0].seed_sources == 3


def test_without_any_seed_host_nothing_scores_or_is_promoted():
    links, states = _world()
    states = {host: HORIZON for host in states}
    result = plan_promotions(links, states, PromotionRules(promote=3))
    assert result.promoted == ()
    assert set(result.ranking.scores.values()) == {0.0}


def test_promotion_is_deterministic_and_logged_with_its_score():
    links, states = _world()
    first = plan_promotions(links, states, PromotionRules(promote=3))
    second = plan_promotions(
        list(reversed(links)), dict(reversed(states.items())), PromotionRules(promote=3)
    )
    assert first.promoted == second.promoted
    fields = first.promoted[0].log_fields()
    assert fields["host"] == "popular.test" and fields["promoted"] is True
    assert isinstance(fields["score"], float) and fields["score"] > 0.0


def test_counting_same_domain_links_is_a_choice_for_the_ranking_only():
    links, states = _world()
    states["shop.alpha.test"] = HORIZON
    links.append(HostLink("news.alpha.test", "shop.alpha.test", 9))
    default = rank_hosts(links, states)
    counted = rank_hosts(links, states, RankingParams(count_same_domain_links=True))
    assert default.scores["shop.alpha.test"] == 0.0
    assert counted.scores["shop.alpha.test"] > 0.0


@pytest.mark.parametrize(
    "kwargs",
    [{"promote": -1}, {"promote": 1, "min_seed_sources": 0}, {"promote": 1, "min_score": -1.0}],
)
def test_invalid_rules_are_refused(kwargs: dict):
    with pytest.raises(ValueError):
        PromotionRules(**kwargs)


def test_negative_link_count_is_refused():
    with pytest.raises(ValueError, match="negative link count"):
        rank_hosts([HostLink("a.test", "b.test", -1)], {"a.test": SEED})
