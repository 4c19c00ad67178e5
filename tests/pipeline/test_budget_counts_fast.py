"""The budgets' arithmetic on its own (``scheduling.budget``): where each budget is spent, how
a site's pages are counted, and the spend as the store keeps it."""

from __future__ import annotations

from courtier.frontier.spend import MEASURES
from courtier.pipeline.scheduling.budget import Budget, Budgets, Spend


def test_bytes_reaching_max_bytes_spend_it() -> None:
    received = [0]
    budget = Budget(Budgets(max_bytes=1000), run_bytes=lambda: received[0])
    received[0] = 999
    assert budget.exhausted() is None
    received[0] = 1000
    assert budget.exhausted() == "max_bytes"
    assert not budget.take(page=True)


def test_a_site_is_full_once_its_fetched_urls_reach_the_cap() -> None:
    budget = Budget(Budgets(max_pages_per_site=2), site_pages={"old.test": 1})
    assert not budget.site_full("new.test")  # never fetched: none counted
    budget.new_page("new.test")
    assert not budget.site_full("new.test")
    budget.new_page("new.test")
    assert budget.site_full("new.test")
    assert not budget.site_full("old.test")
    budget.new_page("old.test")
    assert budget.site_full("old.test")
    assert not Budget(Budgets()).site_full("new.test")  # no cap
    assert not Budget(Budgets(max_pages_per_site=1)).site_full("new.test")


def test_the_spend_is_kept_in_the_stores_measures_and_read_back_from_them() -> None:
    spend = Spend(requests=7, pages=5, bytes=12_345)
    assert tuple(spend.as_dict()) == MEASURES
    assert spend.as_dict() == {"requests": 7, "pages": 5, "bytes": 12_345}
    assert Spend.of(spend.as_dict()) == spend
    assert Spend.of({}) == Spend()
    assert Spend.of({"pages": 2}) == Spend(pages=2)
