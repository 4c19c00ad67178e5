"""What every lane kind uses: the shared stages of the engine, handed over as one value,
and the steps both kinds take the same way (feedback after an answer, robots.txt)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from courtier.config import Config
from courtier.frontier.base import StoredRobots
from courtier.pipeline.apply import FeedbackLane, FeedbackWriter
from courtier.pipeline.archive import Archive
from courtier.pipeline.events import RequestContext
from courtier.pipeline.feedback import Answered, Effects
from courtier.pipeline.fetching import Answer, GuardedFetch
from courtier.pipeline.robots_fetch import Get, RobotsCache, fetch_robots, rules_of
from courtier.pipeline.scheduler import Launch, Wait
from courtier.pipeline.site import RobotsWork
from courtier.pipeline.stats import CrawlStats
from courtier.pipeline.timer import Timer
from courtier.politeness.robots import RobotsRules, RobotsStatus, crawl_delay_verdict
from courtier.url import parse_url

log = logging.getLogger("courtier.pipeline.engine")


@dataclass(frozen=True, slots=True)
class LaneServices:
    config: Config
    timer: Timer
    fetch: GuardedFetch
    """The one guarded fetch."""
    robots: RobotsCache
    """robots.txt rules of every host, seed sites and media hosts alike."""
    feedback: FeedbackWriter
    stats: CrawlStats
    write_document: Callable[[dict[str, Any]], None]
    book_hop: Callable[[str], Awaitable[bool]]
    """Book a request on ``site:<site>`` and wait for its slot (robots.txt redirect hops)."""
    save_robots: Callable[[StoredRobots], Awaitable[None]]
    """Make a robots.txt answer durable (a restart uses it until it expires)."""
    archive: Archive | None = None
    """The WARC writer (None: ``[warc] enabled = false``)."""


@dataclass(frozen=True, slots=True)
class RobotsOutcome:
    rules: RobotsRules
    crawl_delay: float
    """Seconds to honour (0: none)."""
    refusal: str | None
    """Why the host is not crawled at all (a Crawl-delay beyond the crawl's maximum)."""


def context_of(
    site: str, kind: str, launch: Launch, *, origin: str | None = None, **more: Any
) -> RequestContext:
    """What a lane's launched work tells the observer about its request."""
    slot = launch.slot
    return RequestContext(
        site, kind, slot.keys, slot.cost, launch.wait, launch.late, origin=origin, **more
    )


class LaneKindBase:
    """What both lane kinds do the same way: feedback after an answer, robots.txt."""

    def __init__(self, services: LaneServices) -> None:
        config = services.config
        self.config = config
        self.timer = services.timer
        self.fetch = services.fetch
        self.robots = services.robots
        self.feedback = services.feedback
        self.stats = services.stats
        self.write_document = services.write_document
        self.book_hop = services.book_hop
        self.save_robots = services.save_robots
        self.token = config.fetch.user_agent_token

    async def answered(
        self,
        lane: FeedbackLane,
        answer: Answer,
        *,
        origin: str | None,
        extra_cost: float = 0.0,
        media: bool = False,
    ) -> Effects | None:
        """Feedback for ``answer`` (None: the guard refused for good, the server never heard
        of us, nothing to learn)."""
        if answer.result is None and not answer.transient:
            return None
        result = answer.result
        return await self.feedback.apply(
            lane,
            Answered(
                lane=lane.name,
                status=answer.status,
                retry_after=answer.retry_after,
                latency=None if result is None else result.latency,
                now=self.timer.now(),
                origin=origin,
                extra_cost=extra_cost,
            ),
            media=media,
        )

    async def fetch_rules(
        self,
        lane: FeedbackLane,
        work: RobotsWork,
        get: Get,
        context: RequestContext,
        *,
        media: bool = False,
    ) -> RobotsOutcome | None:
        """Fetch ``work``'s robots.txt (redirect hops booked on their own hosts), learn from
        the answer, and store the rules for every lane waiting on them. None: DNS trouble,
        which says nothing about robots.txt (waiters ask again after the lane's backoff)."""
        url = parse_url(f"{work.scheme}://{work.site}/robots.txt")
        max_redirects = self.config.robots.max_redirects
        answer = await fetch_robots(
            get, self.book_hop, url.fetch_url, url.host, max_redirects, context
        )
        await self.answered(lane, answer, origin=context.origin, media=media)
        if answer.transient:
            for wake in self.robots.unclaim(work.site):
                wake()
            return None
        now = self.timer.now()
        rules = rules_of(answer, now, self.config)
        result = answer.result
        await self.save_robots(
            StoredRobots(
                work.site,
                None if result is None else result.status,
                b"" if result is None else result.body[: self.config.robots.max_bytes],
                now,
                rules.expires_at,
            )
        )
        self.stats.robots[rules.status.value] += 1
        return self.outcome_of(work.site, rules)

    def outcome_of(self, site: str, rules: RobotsRules) -> RobotsOutcome:
        """What the rules mean for the host: its Crawl-delay, or why it is not crawled."""
        delay, refusal = crawl_delay_verdict(
            rules.crawl_delay(self.token), self.config.robots.max_crawl_delay
        )
        if refusal is not None:
            self.stats.refused[refusal] += 1
            log.warning("%s is not crawled this run: %s", site, refusal)
        return RobotsOutcome(rules, delay or 0.0, refusal)

    def rules_for(
        self, site: str, scheme: str, now: float, wake: Callable[[], None]
    ) -> RobotsRules | RobotsWork | Wait:
        """The rules to judge ``site``'s URLs by; or the work of fetching them (this lane
        fetches them); or a wait (another lane fetches them and ``wake`` is called, or they
        say "unreachable": nothing there until they are asked again)."""
        rules = self.robots.rules(site, now)
        if rules is None:
            if self.robots.claim(site, wake):
                return RobotsWork(site, scheme)
            return Wait()
        if rules.status is RobotsStatus.DISALLOW_ALL:
            return Wait(rules.expires_at)
        return rules

    def rules_ready(self, site: str, rules: RobotsRules) -> None:
        for wake in self.robots.store(site, rules):
            wake()
