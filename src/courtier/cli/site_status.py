"""``courtier status --site HOST``: one site as its crawl's store knows it.

Read from the store only (SQLite or PostgreSQL), so it works while the crawl runs or after:
the site's state in the seed, its origin, its URLs by status, what it was sent in the last
minute and when last, its robots.txt answer and what it means, the floors its keys carry (a
Retry-After pause or a backoff outlives a restart there: no start before them), and, in a
shared crawl, the worker whose shard holds it.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from courtier.frontier.base import FrontierStore, UrlStatus
from courtier.frontier.controls import SiteControl
from courtier.inputs import InputError
from courtier.politeness.keys import origin_key, site_key
from courtier.politeness.robots import RobotsStatus, rules_from_response
from courtier.url import UrlError, parse_url


def canonical_site(text: str) -> str:
    """The site ``text`` names (a host, host:port or URL), as the store keys it."""
    try:
        return parse_url(text if "://" in text else f"http://{text}/").site
    except UrlError as exc:
        raise InputError(f"--site {text!r}: {exc}") from None


_MEANINGS = {
    RobotsStatus.DISALLOW_ALL: "unreachable: nothing is fetched until it is asked again",
    RobotsStatus.PARSED: "its rules apply",
    RobotsStatus.ALLOW_ALL: "no robots.txt: everything is allowed",
}


def robots_meaning(status: int | None) -> str:
    """What a robots.txt answer means for the site, as the crawl reads it (RFC 9309's
    status rules: ``politeness.robots.rules_from_response``)."""
    rules = rules_from_response(status, b"", 0.0, max_age=1.0, retry_unreachable=1.0, max_bytes=0)
    return _MEANINGS[rules.status]


def site_status(
    store: FrontierStore, site: str, rows: list[tuple[Any, ...]], now: float | None = None
) -> dict[str, Any]:
    """``rows``: (status, count, last fetch, fetched in the last minute) of the site's URLs,
    by status, as the caller's SQL gave them."""
    now = time.time() if now is None else now
    state = store.site_states().get(site)
    if state is None:
        raise InputError(f"--site {site}: not in this store (never seeded, linked or requested)")
    origin = store.origins().get(site)
    by_status = {UrlStatus(int(s)).name.lower(): int(n) for s, n, _last, _recent in rows}
    last = max((float(last) for _s, _n, last, _r in rows if last is not None), default=None)
    robots = store.load_robots(0.0).get(site)
    floors = store.load_clock_floors(now)
    keys = [site_key(site)] + ([origin_key(origin)] if origin else [])
    status: dict[str, Any] = {
        "site": site,
        "state": state,
        "origin": origin,
        "urls": by_status,
        "fetched_last_minute": sum(int(r) for _s, _n, _l, r in rows),
        "last_fetch_s_ago": None if last is None else round(now - last, 1),
        "robots": None,
        "floors": {key: round(floors[key] - now, 1) for key in keys if floors.get(key, 0) > now},
        "control": store.site_controls().get(site, SiteControl(site)).describe(now),
        "actions": [a.line() for a in store.last_actions(5, site)],
    }
    if robots is not None:
        status["robots"] = {
            "status": robots.http_status,
            "meaning": robots_meaning(robots.http_status),
            "fetched_s_ago": round(now - robots.fetched_at, 1),
            "expires_in_s": round(robots.expires_at - now, 1),
        }
    return status


def controls_status(store: FrontierStore, now: float) -> dict[str, Any]:
    """The controls in effect and the latest actions (``courtier status``)."""
    in_effect = {
        site: text
        for site, control in sorted(store.site_controls().items())
        if (text := control.describe(now)) != "-"
    }
    budgets = {
        origin: text
        for origin, control in sorted(store.origin_controls().items())
        if (text := control.describe(now)) != "-"
    }
    watched = Counter(source.state.value for source in store.fresh_sources())
    return {
        "controls": in_effect,
        "origin_controls": budgets,
        "actions": [a.line() for a in store.last_actions(10)],
        "fast_sources": dict(sorted(watched.items())),
    }


def print_controls(status: dict[str, Any]) -> None:
    watched = status["fast_sources"]
    if watched:
        counts = ", ".join(
            f"{watched[state]} {state}" for state in FRESH_STATES if state in watched
        )
        print(f"fast sources: {counts} (courtier fresh list)")
    for site, text in status["controls"].items():
        print(f"control: {site} {text}")
    for origin, text in status["origin_controls"].items():
        print(f"control: origin {origin} {text}")
    if status["actions"]:
        print("latest actions:")
        for line in status["actions"]:
            print(f"  {line}")


FRESH_STATES = ("source", "probing", "hand", "quiet")


def print_site(status: dict[str, Any]) -> None:
    print(f"site {status['site']}: {status['state']}, origin {status['origin'] or 'unknown'}")
    urls = ", ".join(f"{k} {v}" for k, v in sorted(status["urls"].items())) or "none"
    print(f"urls: {urls}")
    last = status["last_fetch_s_ago"]
    print(
        f"fetched in the last minute: {status['fetched_last_minute']}; last fetch: "
        + ("never" if last is None else f"{last} s ago")
    )
    robots = status["robots"]
    if robots is None:
        print("robots.txt: not asked yet")
    else:
        print(
            f"robots.txt: {robots['status'] or 'no answer'} ({robots['meaning']}), fetched "
            f"{robots['fetched_s_ago']} s ago, asked again in {robots['expires_in_s']} s"
        )
    floors = status["floors"]
    if floors:
        for key, seconds in floors.items():
            print(f"{key}: no start for {seconds} s (a pause or backoff the crawl kept)")
    else:
        print("keys: no pause or backoff kept")
    print(f"operator's control: {status['control']}")
    for line in status["actions"]:
        print(f"  {line}")
    if "held_by" in status:
        print(f"held by: {status['held_by'] or 'no worker (its shard is free)'}")
