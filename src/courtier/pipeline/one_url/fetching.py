"""One URL fetched by hand as a crawl fetches it, every step written down (``Trace``).

Rules (each the crawl's own, taken from where the crawl keeps it):
- The URL is canonical (``courtier.url.parse_url``) and its host passes the SSRF guard before
  anything is booked or sent: a refusal ends the fetch (``Trace.refusal``). An address
  literal is judged from the address alone: no DNS query, no connection.
- The operator's controls a store keeps are obeyed (``booking.Clocks.held``).
- robots.txt first, per site: the answer a crawl saved in the store while it is fresh, else
  fetched as a crawl fetches it (booked like any request, guarded, its redirects followed as
  hops to the hosts they reach: ``robots_fetch.follow_robots`` within ``[robots]
  max_redirects``), read by RFC 9309's rules (``robots_fetch.rules_of``). A URL robots.txt
  disallows is not fetched, and nothing here overrides that; an unreachable robots.txt
  disallows everything; a Crawl-delay widens the site's spacing, and one past ``[robots]
  max_crawl_delay`` stops the fetch (a crawl suspends such a site).
- Every request is booked (``booking``) and goes through the crawl's guarded fetch
  (``answers.fetching.GuardedFetch`` over the ``Fetcher``: pinned to the approved
  addresses, no cookies, redirects not followed by the client).
- A redirect is followed as a crawl follows it (``feed.intake.UrlIntake.redirect``: at most
  ``MAX_REDIRECTS`` hops, never to a Location carrying a secret): a target inside the seed
  (the URL's site, the store's seed, or a host the seed adopts, ``[scope]
  adopt_redirects``) is the next request, with its own site's robots.txt, booking and guard;
  a target outside the seed ends the chain there (a crawl records it in the horizon).
- Nothing is asked twice: a 429, a 5xx or no answer is shown as it came (a crawl would ask
  again later, at most ``MAX_ATTEMPTS`` times).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

from courtier.config import Config
from courtier.net.fetch import FetchResult
from courtier.net.guard import Guard, Resolution
from courtier.pipeline.answers.fetching import MAX_ATTEMPTS, Answer, FetcherLike, GuardedFetch
from courtier.pipeline.answers.robots_fetch import follow_robots, rules_from_stored, rules_of
from courtier.pipeline.events import RequestContext
from courtier.pipeline.feed.intake import UrlIntake
from courtier.pipeline.feed.scope import ScopeRules
from courtier.pipeline.keeping.archive import redaction_policy
from courtier.pipeline.lanes.site import target_of
from courtier.pipeline.one_url.booking import Clocks
from courtier.pipeline.stats import CrawlStats
from courtier.politeness.robots import RobotsRules, RobotsStatus, crawl_delay_verdict
from courtier.url import Url, UrlError, parse_url


@dataclass(frozen=True, slots=True)
class Sent:
    """One request: what it was booked on and what came back (or why it was not sent)."""

    kind: str
    """``robots``, ``robots-hop`` or ``page``."""
    url: str
    keys: tuple[str, ...] = ()
    cost: float = 0.0
    waited: float = 0.0
    status: int | None = None
    error: str | None = None
    refusal: str | None = None
    """The SSRF guard's reason when it refused the host (nothing was sent)."""
    elapsed_ms: float = 0.0
    address: str | None = None

    def to_json(self) -> dict[str, object]:
        record: dict[str, object] = {"kind": self.kind, "url": self.url}
        if self.refusal is not None:
            record["refusal"] = self.refusal
            return record
        record.update(keys=list(self.keys), cost=self.cost, waited_s=round(self.waited, 3))
        record.update(status=self.status, elapsed_ms=self.elapsed_ms, address=self.address)
        if self.error:
            record["error"] = self.error
        return record


@dataclass(frozen=True, slots=True)
class RobotsNote:
    """A site's robots.txt as it was judged: where the answer came from and what it says."""

    site: str
    source: str
    """``store`` (a crawl's saved answer) or ``fetched``."""
    status: str
    """``parsed``, ``allow-all`` or ``disallow-all`` (RFC 9309: ``RobotsStatus``)."""
    http_status: int | None
    crawl_delay: float | None

    def to_json(self) -> dict[str, object]:
        return {
            "site": self.site,
            "source": self.source,
            "rules": self.status,
            "http_status": self.http_status,
            "crawl_delay": self.crawl_delay,
        }


@dataclass(slots=True)
class Trace:
    """Every step of one URL by hand."""

    asked: Url
    url: str
    """The URL of the last answer (after the redirects followed)."""
    site: str
    seed: set[str]
    requests: list[Sent] = field(default_factory=list)
    robots: list[RobotsNote] = field(default_factory=list)
    redirects: list[tuple[int, str, str]] = field(default_factory=list)
    """(status, from, to) of each redirect followed (or the one that ended the chain)."""
    result: FetchResult | None = None
    """The last answer (a redirect's when the chain ended at one)."""
    stopped: str | None = None
    """Why the chain ended before an answer, or at a redirect it did not follow."""
    refusal: Resolution | None = None
    """The guard's verdict when it refused the URL's own host (nothing was sent)."""
    notes: list[str] = field(default_factory=list)
    origin: str | None = None
    """The origin the URL's own site was booked on."""


class OneUrl:
    """Fetches one URL as a crawl would (see the module's rules)."""

    def __init__(self, config: Config, guard: Guard, fetcher: FetcherLike, clocks: Clocks) -> None:
        self.config = config
        self.guard = guard
        self.clocks = clocks
        self.stats = CrawlStats()
        self.fetch = GuardedFetch(
            guard, fetcher, self.stats, time.time, opted_out=self._opted_out()
        )
        self.intake = UrlIntake(self.stats.refused, redaction_policy(config))
        self.scope_rules = ScopeRules(config.scope)
        self.token = config.fetch.user_agent_token
        self.robots: dict[str, RobotsRules] = {}
        self.delays: dict[str, float] = {}

    def _opted_out(self) -> frozenset[str]:
        view = self.clocks.view
        hosts = {site.rpartition(":")[0] or site for site in view.opted_out}
        return frozenset(hosts | {s for s, c in view.controls.items() if c.opted_out})

    async def run(self, url: Url) -> Trace:
        trace = Trace(url, url.fetch_url, url.site, {url.site, *self.clocks.seed})
        trace.notes.extend(self.clocks.notes)
        resolution = await self.guard.resolve(url.host)
        if not resolution.allowed:
            trace.refusal = resolution
            return trace
        current, hops = url, 0
        while True:
            why = self.clocks.held(current.site, time.time()) or await self._judge(current, trace)
            if why is not None:
                trace.stopped = why
                return trace
            answer = await self._send(current, "page", trace)
            if answer.result is None:
                trace.stopped = f"{current.fetch_url}: refused by the SSRF guard ({answer.refusal})"
                return trace
            trace.result, trace.url, trace.site = answer.result, current.fetch_url, current.site
            if answer.retryable:
                wait = "" if answer.retry_after is None else f", after {answer.retry_after:g} s"
                trace.notes.append(
                    f"a crawl would ask {current.fetch_url} again later (at most "
                    f"{MAX_ATTEMPTS} times{wait}), backing the site off"
                )
            location = answer.redirect
            if location is None:
                return trace
            refused = Counter(self.stats.refused)
            target = self.intake.redirect(location, current.fetch_url, hops)
            status = answer.result.status or 0
            if target is None:
                why = ", ".join(self.stats.refused - refused) or "not followed"
                trace.stopped = f"redirect to {location[:200]!r} not followed: {why}"
                return trace
            trace.redirects.append((status, current.fetch_url, target.fetch_url))
            if target.site not in trace.seed:
                if not self.scope_rules.adopts_redirect(current.site, target.site):
                    trace.stopped = (
                        f"redirect to {target.fetch_url} leaves the seed: a crawl records it "
                        "in the horizon and does not fetch it"
                    )
                    return trace
                trace.seed.add(target.site)
                trace.notes.append(f"{target.site} joins the seed: a redirect into its domain")
            current, hops = target, hops + 1

    async def _judge(self, url: Url, trace: Trace) -> str | None:
        """Why robots.txt keeps ``url`` from being fetched, or None (it may be)."""
        site = url.site
        rules = self.robots.get(site)
        if rules is None:
            stored = self.clocks.stored_robots(site)
            source = "store" if stored is not None else "fetched"
            if stored is not None:
                rules = rules_from_stored(stored, self.config)
            else:
                rules = await self._fetch_robots(url, trace)
            delay = rules.crawl_delay(self.token)
            self.robots[site] = rules
            status = rules.status.value
            trace.robots.append(RobotsNote(site, source, status, rules.http_status, delay))
        delay, refusal = crawl_delay_verdict(
            rules.crawl_delay(self.token), self.config.robots.max_crawl_delay
        )
        self.delays[site] = delay or 0.0
        if rules.status is RobotsStatus.DISALLOW_ALL:
            return (
                f"robots.txt of {site} is unreachable (status {rules.http_status}): RFC 9309 "
                "reads that as disallow all, until it is asked again"
            )
        if refusal is not None:
            return (
                f"robots.txt of {site} asks a Crawl-delay past [robots] max_crawl_delay "
                f"({self.config.robots.max_crawl_delay:g} s): a crawl suspends the site "
                f"({refusal})"
            )
        if not rules.allows(url.fetch_url, self.token):
            return f"robots.txt of {site} disallows {url.fetch_url} for {self.token!r}"
        return None

    async def _fetch_robots(self, url: Url, trace: Trace) -> RobotsRules:
        location = parse_url(f"{url.scheme}://{url.site}/robots.txt")
        budget = self.config.robots.max_redirects

        def follow(where: str, base: str, hops: int) -> Url | None:
            return self.intake.redirect(where, base, hops, budget)

        async def hop(target: Url, _n: int) -> Answer:
            return await self._send(target, "robots-hop", trace)

        async def known(site: str) -> RobotsRules | None:
            return self.robots.get(site)

        first = await self._send(location, "robots", trace)
        final = await follow_robots(first, location.fetch_url, hop, follow, known)
        if isinstance(final, RobotsRules):
            return final
        assert final is not None  # ``hop`` always answers
        return rules_of(final, time.time(), self.config)

    async def _send(self, url: Url, kind: str, trace: Trace) -> Answer:
        """One request: guarded, booked on its site's keys, fetched pinned."""
        resolution = await self.guard.resolve(url.host)
        if not resolution.allowed:
            trace.requests.append(Sent(kind, url.fetch_url, refusal=resolution.reason))
            return Answer(url.fetch_url, None, resolution.reason)
        target = "/robots.txt" if kind != "page" else target_of(url.fetch_url)
        booked = await self.clocks.book(
            url,
            resolution.addresses,
            target=target,
            crawl_delay=self.delays.get(url.site, 0.0) if kind == "page" else 0.0,
            scope=frozenset(trace.seed),
        )
        if kind == "page" and url.site == trace.asked.site:
            trace.origin = booked.origin
        context = RequestContext(
            url.site, kind, booked.keys, booked.cost, booked.waited, origin=booked.origin
        )
        answer = await self.fetch(url.fetch_url, url.host, context)
        result = answer.result
        if result is None:
            trace.requests.append(Sent(kind, url.fetch_url, refusal=answer.refusal))
            return answer
        trace.requests.append(
            Sent(
                kind,
                url.fetch_url,
                booked.keys,
                booked.cost,
                booked.waited,
                status=result.status,
                error=result.error,
                elapsed_ms=round(result.elapsed * 1000, 1),
                address=result.address,
            )
        )
        return answer


def parse_target(text: str) -> Url:
    """``text`` as an http(s) URL; ``UrlError`` otherwise."""
    url = parse_url(text.strip())
    if url.scheme not in ("http", "https"):
        raise UrlError(f"not an http(s) URL (scheme {url.scheme!r})")
    return url
