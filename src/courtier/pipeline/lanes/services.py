"""What every lane kind uses: the shared stages of the engine, handed over as one value,
and the steps both kinds take the same way (feedback after an answer, robots.txt).

A robots.txt larger than ``ROBOTS_INLINE_BYTES`` is parsed in the parse pool (with its time
budget) when the services have one, else in a thread: a 500 KiB file takes protego ~0.2 s,
which must not hold the event loop. A small one is parsed in place, cheaper than the round
trip. A file the pool could not parse in its budget gave no permission: it is taken as
unreachable (disallow all, asked again after ``robots.retry_unreachable``).

Every robots.txt answer (each redirect hop's too) is redacted as any other text body is and
archived as a ``response`` record (``keeping.keeper``) before its rules are read: the
archive shows what the crawl obeyed. It gets no document record. The rules come
from the body as received; the store keeps the redacted body (nothing unredacted is written
anywhere), which a restart reads its rules from. A site whose chain ends in the robots.txt
cache (a redirect to another host's robots.txt) saves, under its own name, the answer that
host's rules were read from (``RobotsCache.answer``): the target's rules are the source's
(RFC 9309), and a restart must find them without asking the source's robots.txt again.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from courtier.config import Config
from courtier.frontier.base import StoredRobots
from courtier.net.fetch import FetchResult
from courtier.net.spool import body_bytes, body_size
from courtier.pipeline.answers.feedback import Answered, Effects
from courtier.pipeline.answers.feedback_writer import FeedbackLane, FeedbackWriter
from courtier.pipeline.answers.fetching import Answer, GuardedFetch
from courtier.pipeline.answers.robots_fetch import (
    BookHop,
    Get,
    RobotsCache,
    follow_robots,
    robots_arguments,
    unparsed_rules,
)
from courtier.pipeline.events import RequestContext
from courtier.pipeline.feed.intake import UrlIntake
from courtier.pipeline.keeping.archive import Archive
from courtier.pipeline.keeping.keeper import Keeper, Kept
from courtier.pipeline.lanes.robots_hops import RobotsHops
from courtier.pipeline.lanes.site import RobotsWork
from courtier.pipeline.scheduling.lanes import Launch, Wait
from courtier.pipeline.scheduling.timer import Timer
from courtier.pipeline.stats import CrawlStats
from courtier.pipeline.workers.jobs import ParseTimeout, PoolClosed, WorkerLost
from courtier.politeness.robots import (
    RobotsRules,
    RobotsStatus,
    crawl_delay_verdict,
    rules_from_response,
)
from courtier.url import Url, parse_url

log = logging.getLogger(__name__)

Parse = Callable[..., Awaitable[Any]]
T = TypeVar("T")
"""``ParsePool.run``: a picklable function and its arguments, run in a parse worker."""
ROBOTS_INLINE_BYTES = 4096
"""A robots.txt up to this size is parsed on the event loop (about a millisecond)."""


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
    book_hop: BookHop
    """Book a request on the keys of a host and wait for its slot (robots.txt redirect hops)."""
    intake: UrlIntake
    """The one door of every URL fetched (placeholders, redirect budgets, secrets)."""
    save_robots: Callable[[StoredRobots], Awaitable[None]]
    """Make a robots.txt answer durable (a restart uses it until it expires)."""
    archive: Archive | None = None
    """The WARC writer (None: ``[warc] enabled = false``)."""
    parse: Parse | None = None
    """The parse pool's ``run`` for large robots.txt files (None: a thread)."""


@dataclass(frozen=True, slots=True)
class RobotsOutcome:
    rules: RobotsRules
    crawl_delay: float
    """Seconds to honour (0: none)."""
    refusal: str | None
    """Why the host is not crawled at all (a Crawl-delay beyond the crawl's maximum)."""
    saved: StoredRobots | None = None
    """The answer saved for the host that ``rules`` were read from (None: none was saved)."""


def context_of(
    site: str, kind: str, launch: Launch, *, origin: str | None = None, **more: Any
) -> RequestContext:
    """What a lane's launched work tells the observer about its request."""
    slot = launch.slot
    return RequestContext(
        site,
        kind,
        slot.keys,
        slot.cost,
        launch.wait,
        launch.late,
        origin=origin,
        sent=launch.sent,
        **more,
    )


class LaneKindBase:
    """What both lane kinds do the same way: feedback after an answer, robots.txt."""

    book_wait = 0.0  # a request that may start now is booked at once

    def __init__(self, services: LaneServices) -> None:
        config = services.config
        self.config = config
        self.timer = services.timer
        self.fetch = services.fetch
        self.robots = services.robots
        self.feedback = services.feedback
        self.stats = services.stats
        self.write_document = services.write_document
        self.intake = services.intake
        self.save_robots = services.save_robots
        self.parse_robots = services.parse
        self.token = config.fetch.user_agent_token
        self.robots_keeper = Keeper(config, services.stats, services.archive, services.parse)
        self.robots_hops = RobotsHops(services.robots, services.timer, services.book_hop)
        """Where robots.txt redirect hops go (the site lanes' own, shared with the media's)."""

    def follow_robots_redirect(self, location: str, base: str, hops: int) -> Url | None:
        """A robots.txt redirect's target through the intake, on robots.txt's own budget."""
        return self.intake.redirect(location, base, hops, self.config.robots.max_redirects)

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
        latency = None if result is None else result.latency
        if latency is not None and result is not None and result.sent_at is not None:
            # The fetch reads the answer when the loop gets to it: what the loop lagged
            # meanwhile is the crawler's own delay, not the server's (it must not slow sites).
            lag = self.stats.recent_lag.since(result.sent_at, time.time())
            latency = max(0.0, latency - lag)
        return await self.feedback.apply(
            lane,
            Answered(
                lane=lane.name,
                status=answer.status,
                retry_after=answer.retry_after,
                latency=latency,
                now=self.timer.now(),
                origin=origin,
                extra_cost=extra_cost,
                origin_latency=not media,
            ),
            media=media,
        )

    async def fetch_rules(
        self,
        lane: FeedbackLane,
        work: RobotsWork,
        get: Get,
        launch: Launch,
        *,
        origin: str | None = None,
        media: bool = False,
    ) -> RobotsOutcome | None:
        """Fetch ``work``'s robots.txt (its redirects: ``robots_hops``), learn from the answer,
        and store the rules for every lane waiting on them. None: DNS trouble, which says
        nothing about robots.txt (waiters ask again after the lane's backoff), or a stop."""
        url = parse_url(f"{work.scheme}://{work.site}/robots.txt")
        context = context_of(work.site, "robots", launch, origin=origin)
        kept: dict[int, Kept | None] = {}
        answer = await self._keep(await get(url.fetch_url, url.host, context), work.site, kept)
        await self.answered(lane, answer, origin=context.origin, media=media)
        hops = self.robots_hops

        def release() -> None:  # the server has answered: the chain waits on others
            launch.answered()
            launch.detach()

        async def hop(target: Url, n: int) -> Answer | None:
            release()
            sent = await hops.send(target, n, get)
            return None if sent is None else await self._keep(sent, target.site, kept)

        reached: list[str] = []  # the site whose rules, from the cache, end the chain

        async def rules_of(target: str) -> RobotsRules | None:
            release()
            rules = await hops.rules_of(work.site, target)
            if rules is not None:
                reached.append(target)
            return rules

        final = await follow_robots(
            answer, url.fetch_url, hop, self.follow_robots_redirect, rules_of
        )
        if final is not answer and isinstance(final, Answer) and final.transient:
            # DNS trouble down the chain: the source waits as after its own.
            await self.answered(lane, final, origin=context.origin, media=media)
        if final is None or (isinstance(final, Answer) and final.transient):
            for wake in self.robots.unclaim(work.site):
                wake()
            return None
        if isinstance(final, RobotsRules):
            # Another host's rules, as the cache has them: the answer they were read from is
            # saved under the source too, so a restart finds the source's rules (not saved:
            # the target's answer was not either, and both are asked again after a restart).
            stored = self.robots.answer(reached[-1], final) if reached else None
            saved = None if stored is None else dataclasses.replace(stored, site=work.site)
            if saved is not None:
                await self.save_robots(saved)
            self.stats.robots[final.status.value] += 1
            return self.outcome_of(work.site, final, saved)
        now = self.timer.now()
        rules = await self._rules_of(final, now)
        if rules is None:  # the pool closed under us: the crawl is stopping
            for wake in self.robots.unclaim(work.site):
                wake()
            return None
        result = final.result
        body = b"" if result is None else self._stored_body(result, kept)
        saved = None
        if body is not None:
            status = None if result is None else result.status
            saved = StoredRobots(work.site, status, body, now, rules.expires_at)
            await self.save_robots(saved)
        self.stats.robots[rules.status.value] += 1
        return self.outcome_of(work.site, rules, saved)

    async def _keep(self, answer: Answer, site: str, kept: dict[int, Kept | None]) -> Answer:
        """``answer``, redacted and archived first (see the module docs), what was kept put
        in ``kept`` by the id of the answer's result (None: the parse pool closed under it,
        the crawl is stopping)."""
        result = answer.result
        if result is not None and result.status is not None:
            try:
                kept[id(result)] = await self.robots_keeper.keep(result, site)
            except PoolClosed:
                kept[id(result)] = None
        return answer

    def _stored_body(self, result: FetchResult, kept: dict[int, Kept | None]) -> bytes | None:
        """The robots.txt body the store keeps: redacted, as everything written is. None:
        it could not be redacted, nothing is stored (the rules hold for this run)."""
        if id(result) not in kept:
            return b""  # no answer
        done = kept[id(result)]
        if done is None or (result.size and not body_size(done.payload)):
            log.warning("robots.txt of %s not stored: it could not be redacted", result.url)
            return None
        return body_bytes(done.payload)[: self.config.robots.max_bytes]

    async def _rules_of(self, answer: Answer, now: float) -> RobotsRules | None:
        """The rules ``answer`` gives, parsed off the event loop when the file is large
        (see the module docs). None: the parse pool was closed."""
        args, kwargs = robots_arguments(answer, now, self.config)
        body: bytes = args[1]
        if len(body) <= ROBOTS_INLINE_BYTES or not (200 <= (args[0] or 0) < 300):
            return rules_from_response(*args, **kwargs)
        parse = self.parse_robots
        if parse is None:
            return await asyncio.to_thread(rules_from_response, *args, **kwargs)
        try:
            rules: RobotsRules = await parse(rules_from_response, *args, **kwargs)
        except PoolClosed:
            return None
        except (ParseTimeout, WorkerLost, MemoryError) as exc:
            reason = {ParseTimeout: "robots-timeout", WorkerLost: "robots-crash"}.get(
                type(exc), "robots-memory"
            )
            self.stats.parse_failures[reason] += 1
            log.warning("%s: %s", reason, answer.url)
            return unparsed_rules(answer, now, self.config)
        return rules

    def outcome_of(
        self, site: str, rules: RobotsRules, saved: StoredRobots | None = None
    ) -> RobotsOutcome:
        """What the rules mean for the host: its Crawl-delay, or why it is not crawled
        (``saved``: the answer saved for the host that the rules were read from)."""
        delay, refusal = crawl_delay_verdict(
            rules.crawl_delay(self.token), self.config.robots.max_crawl_delay
        )
        if refusal is not None:
            self.stats.refused[refusal] += 1
            log.warning("%s is not crawled this run: %s", site, refusal)
        return RobotsOutcome(rules, delay or 0.0, refusal, saved)

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

    def rules_ready(self, site: str, outcome: RobotsOutcome) -> None:
        """``site``'s rules are in the cache, with the answer they were read from (a chain
        that reaches them saves it under its own site too)."""
        for wake in self.robots.store(site, outcome.rules, outcome.saved):
            wake()
