"""robots.txt for every host the crawl fetches from: one cache, one fetch, one set of rules.

Rules:
- One ``RobotsCache`` holds the rules of seed sites and media hosts alike; a host's rules
  are fetched by one lane at a time, and the other lanes on that host wait for them.
- The first request is booked by the lane that needs the rules. Up to ``max_redirects``
  redirect hops are followed (RFC 9309: at least five), and every hop is a request to the
  host it goes to, booked as that host's own requests are (``lanes.robots_hops``), so
  robots.txt files that all redirect to one innocent host, or to the hosts of one
  platform, cannot make it a target. A chain that does not end in time, or a ``Location``
  that is no URL, ends at that 3xx answer (RFC 9309: "unavailable").
- A hop to a host's robots.txt ends the chain in this cache: the source takes that host's
  rules (RFC 9309: the final target's rules apply to the source) once they are in, and
  nothing is fetched twice. Chains waiting on each other's hosts (robots.txt files that
  redirect in a loop) would wait forever: the one that would close the loop fetches its hop
  instead (``loops``), and the loop ends at the budget.
- The answer becomes rules by ``politeness.robots.rules_from_response``: 2xx parsed, 4xx
  allow all, 429, 5xx and no answer disallow all until asked again (at the Retry-After when
  the server gave one, clamped to ``max_retry_after``).
- A host's entry keeps, beside its rules, the saved answer they were read from (its own, or
  the one its chain reached): a source whose chain ends in this cache saves that answer under
  its own name too (``LaneKindBase.fetch_rules``), so a restart finds the source's rules in
  the store and does not ask its robots.txt again while they are fresh.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from courtier.config import Config
from courtier.frontier.base import StoredRobots
from courtier.pipeline.answers.fetching import Answer
from courtier.pipeline.events import RequestContext
from courtier.pipeline.scheduling.hops import HopSlot
from courtier.politeness.robots import RobotsRules, rules_from_response
from courtier.url import Url

Get = Callable[[str, str, RequestContext], Awaitable[Answer]]
"""(fetch URL, its host, why) -> the answer."""
BookHop = Callable[[str, str], Awaitable[HopSlot | None]]
"""(site, host): book a redirect hop on the keys of the host it goes to and wait for its
slot (None: the crawl is stopping, do not send it)."""
Follow = Callable[[str, str, int], Url | None]
"""(Location, the URL it answered, hops so far) -> the next hop's URL (None: stop there)."""
Hop = Callable[[Url, int], Awaitable[Answer | None]]
"""(the hop's URL, its number in the chain) -> its answer, sent as a request to its host
(None: the crawl stopped first, nothing was sent)."""
RulesOf = Callable[[str], Awaitable[RobotsRules | None]]
"""(a site) -> its rules from the cache once they are in (None: the chain fetches the hop)."""


@dataclass(slots=True)
class _Entry:
    rules: RobotsRules | None = None
    answer: StoredRobots | None = None
    """The saved answer ``rules`` were read from (None: not saved, e.g. not redactable)."""
    fetching: bool = False
    waiters: list[Callable[[], None]] = field(default_factory=list)


class RobotsCache:
    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}
        self.following: dict[str, str] = {}
        """A site whose robots.txt chain waits on another site's rules -> that site."""

    def rules(self, site: str, now: float) -> RobotsRules | None:
        """The site's rules, or None when they must be (re)fetched first."""
        entry = self._entries.get(site)
        if entry is None or entry.rules is None or now >= entry.rules.expires_at:
            return None
        return entry.rules

    def known(self, site: str) -> RobotsRules | None:
        """The last rules fetched for ``site``, expired or not."""
        entry = self._entries.get(site)
        return None if entry is None else entry.rules

    def claim(self, site: str, wake: Callable[[], None]) -> bool:
        """True: the caller fetches the rules now. False: someone already does; ``wake`` is
        called when the rules are in."""
        entry = self._entries.setdefault(site, _Entry())
        if entry.fetching:
            entry.waiters.append(wake)
            return False
        entry.fetching = True
        return True

    def unclaim(self, site: str) -> list[Callable[[], None]]:
        """The fetch ended without rules (stopping, DNS trouble): waiters try again."""
        entry = self._entries.setdefault(site, _Entry())
        entry.fetching = False
        waiters, entry.waiters = entry.waiters, []
        return waiters

    def store(
        self, site: str, rules: RobotsRules, answer: StoredRobots | None = None
    ) -> list[Callable[[], None]]:
        """``site``'s rules are in, with the saved answer they were read from (None: none
        was saved); the waiters to wake."""
        entry = self._entries.setdefault(site, _Entry())
        entry.rules, entry.answer = rules, answer
        return self.unclaim(site)

    def answer(self, site: str, rules: RobotsRules) -> StoredRobots | None:
        """The saved answer ``site``'s ``rules`` were read from, while they are its rules
        (None: none was saved, or the site has other rules now)."""
        entry = self._entries.get(site)
        if entry is None or entry.rules is not rules:
            return None
        return entry.answer

    def fetching(self, site: str) -> bool:
        entry = self._entries.get(site)
        return entry is not None and entry.fetching

    def subscribe(self, site: str, wake: Callable[[], None]) -> None:
        """``wake`` is called when the site's rules are in, or its fetch ended without them."""
        self._entries.setdefault(site, _Entry()).waiters.append(wake)

    def unsubscribe(self, site: str, wake: Callable[[], None]) -> None:
        entry = self._entries.get(site)
        if entry is not None and wake in entry.waiters:
            entry.waiters.remove(wake)

    def loops(self, source: str, target: str) -> bool:
        """Would the chain of ``source`` waiting on ``target``'s rules close a loop of chains
        waiting on each other (``source`` itself among them)?"""
        seen: set[str] = set()
        site: str | None = target
        while site is not None and site not in seen:
            if site == source:
                return True
            seen.add(site)
            site = self.following.get(site)
        return False


async def follow_robots(
    answer: Answer, url: str, hop: Hop, follow: Follow, rules_of: RulesOf
) -> Answer | RobotsRules | None:
    """Where the first ``answer`` (for ``url``, a robots.txt fetch URL) leads: the final
    answer after its redirects, each taken through ``follow`` (the crawl's intake: budget,
    secrets); or the rules of the host whose robots.txt a hop reaches, from the cache; None
    when the crawl stopped first."""
    n = 0
    while answer.redirect is not None:
        target = follow(answer.redirect, url, n)
        if target is None:
            return answer
        n += 1
        if target.target == "/robots.txt":
            rules = await rules_of(target.site)
            if rules is not None:
                return rules
        sent = await hop(target, n)
        if sent is None:
            return None
        url, answer = target.fetch_url, sent
    return answer


def rules_from_stored(stored: StoredRobots, config: Config) -> RobotsRules:
    """The rules a saved robots.txt answer gave, valid until it was due to expire."""
    robots = config.robots
    rules = rules_from_response(
        stored.http_status,
        stored.body,
        stored.fetched_at,
        max_age=robots.max_age,
        retry_unreachable=robots.retry_unreachable,
        max_bytes=robots.max_bytes,
    )
    return dataclasses.replace(rules, expires_at=stored.expires_at)


def robots_arguments(
    answer: Answer, now: float, config: Config
) -> tuple[tuple[int | None, bytes, float], dict[str, Any]]:
    """The arguments of ``rules_from_response`` for ``answer`` (to run it anywhere: the
    body is cut to ``robots.max_bytes`` first, so no more than that crosses to a worker)."""
    robots = config.robots
    result = answer.result
    status = None if result is None else result.status
    body = b"" if result is None else result.body[: robots.max_bytes]
    kwargs: dict[str, Any] = {
        "max_age": robots.max_age,
        "retry_unreachable": robots.retry_unreachable,
        "max_bytes": robots.max_bytes,
        "retry_after": answer.retry_after,
        "max_retry_after": config.politeness.max_retry_after,
    }
    return (status, body, now), kwargs


def rules_of(answer: Answer, now: float, config: Config) -> RobotsRules:
    args, kwargs = robots_arguments(answer, now, config)
    return rules_from_response(*args, **kwargs)


def unparsed_rules(answer: Answer, now: float, config: Config) -> RobotsRules:
    """The rules of a robots.txt that could not be parsed within the parse budget: no
    permission was given, so it counts as unreachable (disallow all until asked again)."""
    _args, kwargs = robots_arguments(answer, now, config)
    kwargs["retry_after"] = None
    return rules_from_response(None, b"", now, **kwargs)
