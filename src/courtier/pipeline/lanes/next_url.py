"""Which URL a seed site fetches next.

Rules:
- Fastlane first (on-demand recrawls), then freshlane (fast sources' links), then refresh or
  discovery as the crawl's split decides (``crawl_split``: one share for the crawl, from its
  backlog's drain time at the rate it really emits; a site with one kind of work is served
  that kind).
- Within a kind, the oldest URL held goes first.
"""

from __future__ import annotations

from courtier.frontier.base import LeasedUrl, UrlLane
from courtier.frontier.split import Lane as SplitLane
from courtier.pipeline.lanes.crawl_split import CrawlSplit
from courtier.pipeline.lanes.site import SiteLane


def next_url(lane: SiteLane, now: float, split: CrawlSplit) -> LeasedUrl:
    """The URL the site fetches next from the ones it holds (its queue is not empty)."""
    first: dict[UrlLane, int] = {}
    for index, queued in enumerate(lane.queue):
        first.setdefault(queued.lane, index)
    for kind in (UrlLane.FASTLANE, UrlLane.FRESHLANE):
        if kind in first:
            return _take(lane, first[kind])
    chosen = split.decide(
        now, discovery_ready=UrlLane.DISCOVERY in first, refresh_ready=UrlLane.REFRESH in first
    )
    if chosen is SplitLane.REFRESH:
        return _take(lane, first[UrlLane.REFRESH])
    if UrlLane.DISCOVERY in first:
        lane.backlog = max(0, lane.backlog - 1)
        return _take(lane, first[UrlLane.DISCOVERY])
    return lane.queue.popleft()


def _take(lane: SiteLane, index: int) -> LeasedUrl:
    item = lane.queue[index]
    del lane.queue[index]
    return item
