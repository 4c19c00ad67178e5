"""The crawl's budgets at the lanes' starts (``scheduling.budget``): what each start spends,
and the sites that are full.

Rules:
- Every start of a site lane or a media lane is a request; a site lane's start of a
  frontier URL is a page too. A start the budgets refuse does not happen (the crawl is
  ending: ``Budget.ended``); a render waiting for it is told at once (``BUDGET_SPENT``).
- A URL never fetched before (no fetch time in the store) is a new page of its site: once
  the site has ``max_pages_per_site`` URLs fetched, its new URLs are set aside, leased and
  not fetched: they never come back in this run's refills, and they go back to the store
  when the run ends (``set_aside``; after a crash, at the next start, as every lease). A
  refill that held one is the site's last look at its store until the due recheck (its
  refreshes still come first in a lease, before any new URL).
"""

from __future__ import annotations

from collections.abc import Iterable

from courtier.frontier.base import LeasedUrl
from courtier.pipeline.answers.fetching import Answer
from courtier.pipeline.lanes.media_lane import MediaItem, MediaLane, MediaWork
from courtier.pipeline.lanes.site import RenderFetch, SiteLane
from courtier.pipeline.scheduling.budget import Budget

BUDGET_SPENT = "budget-spent"
"""What a render hears of a request the budgets refused."""


def _refused(work: object) -> bool:
    """False, after telling a render waiting for ``work`` that it will not start."""
    if isinstance(work, RenderFetch) and not work.answer.done():
        work.answer.set_result(Answer(work.url, None, refusal=BUDGET_SPENT))
    return False


def is_new(lane: SiteLane, item: LeasedUrl) -> bool:
    """``item`` was never fetched (a retry of this run's first fetch is not new again)."""
    return item.fetched_at is None and not lane.attempts[item.id]


class LaneBudget:
    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.set_aside: list[int] = []
        """New URLs of full sites not fetched in this run (their ids): leased until it ends."""

    def admit_page(self, lane: SiteLane, work: object) -> bool:
        """The site lanes' ``Scheduler.admit``."""
        budget = self.budget
        if not isinstance(work, LeasedUrl):  # robots.txt, a hop, a render's request
            return budget.take(page=False) or _refused(work)
        new = is_new(lane, work)
        if new and budget.site_full(lane.site):
            self.set_aside.append(work.id)
            return False
        if not budget.take(page=True):
            return False
        if new:
            budget.new_page(lane.site)
            if budget.site_full(lane.site):
                self.purge(lane)  # the site's other new URLs wait for another run
        return True

    def admit_media(self, lane: MediaLane, work: MediaWork) -> bool:
        """The media lanes' ``Scheduler.admit``."""
        render = work.render if isinstance(work, MediaItem) else None
        return self.budget.take(page=False) or _refused(render)

    def keep(self, lane: SiteLane, items: Iterable[LeasedUrl]) -> list[LeasedUrl]:
        """What ``lane`` may take of ``items`` (leased for it): all, unless its site is full,
        then all but its new URLs. A new URL set aside makes the site's store look empty
        (``SiteLane.store_empty``) until its due recheck."""
        items = list(items)
        if not self.budget.site_full(lane.site):
            return items
        kept = [item for item in items if not is_new(lane, item)]
        if len(kept) < len(items):
            self.set_aside += [item.id for item in items if is_new(lane, item)]
            lane.store_empty = True
        return kept

    def purge(self, lane: SiteLane) -> None:
        """The site just became full: its queue keeps only what it may still fetch."""
        kept = self.keep(lane, lane.queue)
        lane.queue.clear()
        lane.queue.extend(kept)
