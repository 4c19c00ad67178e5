"""Sites that push back: 429 with both Retry-After forms, a 503 phase, rising latency, robots."""

from __future__ import annotations

import email.utils
import time

from simweb_helpers import SMALL, Client, logged

from courtier.simweb import World
from courtier.simweb.behaviours import OVERLOAD_AT, RISING_BASE, SiteTraffic, decide
from courtier.simweb.world import Behaviour

T0 = 1_800_000_000.0


def _traffic(*starts: float) -> SiteTraffic:
    traffic = SiteTraffic()
    for start in starts:
        traffic.record(start)
    return traffic


def test_rate_limited_site_refuses_gaps_under_its_threshold(world: World) -> None:
    site = world.site_with(Behaviour.RATE_LIMIT_SECONDS)
    assert decide(site, SMALL, _traffic(), T0, T0).refusal is None
    assert decide(site, SMALL, _traffic(T0), T0 + 2.0, T0).refusal is None
    refusal = decide(site, SMALL, _traffic(T0), T0 + 1.9, T0).refusal
    assert refusal is not None and refusal.status == 429
    assert refusal.retry_after == "5" and refusal.retry_until == T0 + 1.9 + 5


def test_date_limited_site_answers_an_http_date(world: World) -> None:
    site = world.site_with(Behaviour.RATE_LIMIT_DATE)
    refusal = decide(site, SMALL, _traffic(T0), T0 + 0.4, T0).refusal
    assert refusal is not None and refusal.status == 429
    assert email.utils.parsedate_to_datetime(refusal.retry_after).timestamp() == T0 + 1 + 5
    assert refusal.retry_until == T0 + 6


def test_unavailable_site_answers_503_only_in_its_first_seconds(world: World) -> None:
    site = world.site_with(Behaviour.UNAVAILABLE_AT_START)
    early = decide(site, SMALL, _traffic(), T0 + 0.2, T0).refusal
    assert early is not None and early.status == 503 and early.retry_after == "1"
    assert decide(site, SMALL, _traffic(), T0 + SMALL.unavailable_seconds, T0).refusal is None


def test_latency_rises_with_the_recent_request_rate_then_the_site_overloads(
    world: World,
) -> None:
    site = world.site_with(Behaviour.RISING_LATENCY)
    delays = []
    for recent in range(OVERLOAD_AT):
        starts = [T0 - 0.5 - i for i in range(recent)]
        verdict = decide(site, SMALL, _traffic(*sorted(starts)), T0, T0)
        assert verdict.refusal is None
        delays.append(verdict.delay)
    assert delays[0] == RISING_BASE
    assert delays == sorted(delays) and delays[-1] > 10 * RISING_BASE
    starts = [T0 - 0.5 - i for i in range(OVERLOAD_AT)]
    overloaded = decide(site, SMALL, _traffic(*sorted(starts)), T0, T0).refusal
    assert overloaded is not None and overloaded.status == 503 and overloaded.retry_after == ""


def test_ordinary_and_slow_sites_never_refuse(world: World) -> None:
    slow = world.site_with(Behaviour.SLOW)
    verdict = decide(slow, SMALL, _traffic(T0, T0 + 0.01), T0 + 0.02, T0)
    assert verdict.refusal is None and verdict.delay == SMALL.slow_latency


async def test_hammering_gets_429_with_retry_after_in_seconds(client: Client) -> None:
    host = client.web.world.site_with(Behaviour.RATE_LIMIT_SECONDS).host
    first, second, third = [await client.get(host, "/") for _ in range(3)]
    assert first.status == 200
    assert second.status == third.status == 429 and second.headers["Retry-After"] == "5"
    records = await logged(client.web)
    assert records[0].retry_until is None
    assert records[1].retry_until is not None and records[1].retry_until > time.time() + 3


async def test_hammering_the_date_site_gets_an_http_date(client: Client) -> None:
    host = client.web.world.site_with(Behaviour.RATE_LIMIT_DATE).host
    await client.get(host, "/robots.txt")
    refused = await client.get(host, "/")
    assert refused.status == 429
    until = email.utils.parsedate_to_datetime(refused.headers["Retry-After"]).timestamp()
    assert time.time() + 4 < until <= time.time() + 6


async def test_unavailable_site_starts_with_503(client: Client) -> None:
    host = client.web.world.site_with(Behaviour.UNAVAILABLE_AT_START).host
    answer = await client.get(host, "/robots.txt")
    assert answer.status == 503 and answer.headers["Retry-After"] == "1"


async def test_robots_variants_answer_as_the_world_says(client: Client) -> None:
    world = client.web.world
    broken = await client.get(world.site_with(Behaviour.ROBOTS_500).host, "/robots.txt")
    missing = await client.get(world.site_with(Behaviour.ROBOTS_404).host, "/robots.txt")
    delayed = await client.get(world.site_with(Behaviour.CRAWL_DELAY).host, "/robots.txt")
    assert (broken.status, missing.status, delayed.status) == (500, 404, 200)
    assert "Crawl-delay: 2" in delayed.text and "Disallow: /private/" in delayed.text
