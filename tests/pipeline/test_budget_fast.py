"""The crawl's budgets: the pure accountant (``scheduling.budget``), and the lanes' starts it
gates (``lanes.page_budget``) on fake time with a scripted web: nothing starts past a budget,
a full site takes no new URL, and what earlier runs spent counts."""

from __future__ import annotations

from pathlib import Path

import pytest
from lane_harness import Lanes

from courtier.config import load
from courtier.frontier.base import LeasedUrl
from courtier.pipeline.lanes.page_budget import LaneBudget
from courtier.pipeline.scheduling.budget import Budget, Budgets, Spend

FAST = ["limits.origin.rate=1000", "limits.site.rate=100"]


# -- the accountant ---------------------------------------------------------------------------


def test_no_request_starts_past_max_requests_and_the_last_one_ends_the_crawl() -> None:
    ended: list[str] = []
    budget = Budget(Budgets(max_requests=3), ended=ended.append)
    assert [budget.take(page=False) for _ in range(3)] == [True, True, True]
    assert ended == ["max_requests"]  # heard at the third start, before any fourth
    assert budget.take(page=True) is False
    assert budget.run == Spend(3, 0, 0)
    assert budget.exhausted() == "max_requests"


def test_pages_are_the_starts_of_frontier_urls_only() -> None:
    budget = Budget(Budgets(max_pages=2))
    for _ in range(5):
        assert budget.take(page=False)  # robots.txt, media: requests, not pages
    assert budget.exhausted() is None
    assert budget.take(page=True) and budget.take(page=True)
    assert budget.exhausted() == "max_pages"
    assert not budget.take(page=False)  # a spent budget ends the crawl: nothing starts
    assert budget.run == Spend(7, 2, 0)


def test_bytes_count_as_answers_arrive_and_stop_the_next_start() -> None:
    received = [0]
    budget = Budget(Budgets(max_bytes=1000), run_bytes=lambda: received[0])
    assert budget.take(page=True) and budget.take(page=True)  # both in flight at once
    received[0] = 1500  # their answers pass the budget: they were already out
    assert budget.exhausted() == "max_bytes"
    assert not budget.take(page=True)


def test_what_earlier_runs_spent_counts_so_the_same_command_spends_nothing_more() -> None:
    ended: list[str] = []
    budget = Budget(Budgets(max_pages=10), Spend(40, 10, 5000), ended=ended.append)
    assert budget.exhausted() == "max_pages"
    assert not budget.take(page=False)
    assert ended == ["max_pages"] and budget.run == Spend()
    budget = Budget(Budgets(max_pages=12), Spend(40, 10, 5000))
    assert budget.take(page=True) and budget.take(page=True) and not budget.take(page=True)


def test_saving_adds_only_what_is_new_and_learns_what_others_spent() -> None:
    received = [100]
    budget = Budget(Budgets(max_requests=50), Spend(10, 5, 0), run_bytes=lambda: received[0])
    for _ in range(4):
        budget.take(page=True)
    first = budget.saving()
    assert first == Spend(4, 4, 100)
    # The store's totals after the add: another worker of the fleet spent 20 requests meanwhile.
    budget.saved(first, Spend(10 + 4 + 20, 5 + 4, 100))
    assert budget.saving() == Spend()  # nothing new: nothing added twice
    budget.take(page=False)
    received[0] = 150
    assert budget.saving() == Spend(1, 0, 50)
    assert budget.total == Spend(35, 9, 150)  # the others' 20 count from that save on


def test_a_site_is_full_at_its_cap_counting_what_the_store_had() -> None:
    budget = Budget(Budgets(max_pages_per_site=3), site_pages={"a.test": 2})
    assert not budget.site_full("a.test") and not budget.site_full("b.test")
    budget.new_page("a.test")
    assert budget.site_full("a.test")
    assert not Budget(Budgets()).site_full("a.test")  # 0: no cap
    assert not Budgets(max_pages_per_site=3).ends_crawl and Budgets(max_bytes=1).ends_crawl


# -- the lanes' starts ------------------------------------------------------------------------


@pytest.fixture
async def lanes(tmp_path: Path):
    made: list[Lanes] = []

    def make(budget: Budget, *overrides: str) -> tuple[Lanes, LaneBudget]:
        harness = Lanes(load(None, [*FAST, *overrides]), tmp_path)
        gate = LaneBudget(budget)
        harness.pages.admit = gate.admit_page
        harness.media_scheduler.admit = gate.admit_media
        harness.start()
        made.append(harness)
        return harness, gate

    yield make
    for harness in made:
        await harness.close()


async def test_the_servers_see_exactly_max_requests(lanes) -> None:
    ended: list[str] = []
    h, _gate = lanes(Budget(Budgets(max_requests=4), ended=ended.append))
    a = h.site("a.test", [f"/p{n}" for n in range(10)])
    b = h.site("b.test", [f"/p{n}" for n in range(10)])
    h.pages.arm(a)
    h.pages.arm(b)
    await h.timer.advance(5.0)
    assert len(h.fetcher.started) == 4  # two robots.txt, two pages: not one more
    assert ended and set(ended) == {"max_requests"}


async def test_max_pages_counts_pages_not_robots_txt(lanes) -> None:
    h, _gate = lanes(Budget(Budgets(max_pages=3)))
    site = h.site("a.test", [f"/p{n}" for n in range(10)])
    h.pages.arm(site)
    await h.timer.advance(5.0)
    assert len(h.starts("a.test")) == 3
    assert len(h.starts("a.test", robots=True)) == 4  # its robots.txt came first, unpaged


async def test_a_full_site_fetches_its_refreshes_but_no_new_url(lanes) -> None:
    budget = Budget(Budgets(max_pages_per_site=3), site_pages={"a.test": 1})
    h, gate = lanes(budget)
    site = h.site("a.test", ["/new1", "/new2", "/new3"])
    site.queue.append(LeasedUrl(10, "http://a.test/old", "a.test", 1, 0, fetched_at=1.0))
    site.queue.append(LeasedUrl(11, "http://a.test/new4", "a.test", 1, 0))
    h.pages.arm(site)
    await h.timer.advance(5.0)
    fetched = [url.rsplit("/", 1)[1] for _t, url in h.fetcher.started]
    # One page in the store, two new ones here: full; the refresh still goes.
    assert fetched == ["robots.txt", "new1", "new2", "old"]
    assert sorted(gate.set_aside) == [3, 11]
    assert budget.site_pages["a.test"] == 3 and site.store_empty
    # A refill of a full site keeps what it may fetch and sets its new URLs aside.
    site.store_empty = False
    refill = [
        LeasedUrl(20, "http://a.test/new5", "a.test", 1, 0),
        LeasedUrl(21, "http://a.test/old2", "a.test", 1, 0, fetched_at=2.0),
    ]
    assert [item.id for item in gate.keep(site, refill)] == [21]
    assert site.store_empty and 20 in gate.set_aside
