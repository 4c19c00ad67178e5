"""``courtier status --origin NAME|SITE``: one origin as its crawl's store knows it.

Read from the store (SQLite or PostgreSQL), so it works while the crawl runs or after:
- its sites (the operator's placements over inference: ``courtier.cli.origin_names``, which
  also says how ``NAME`` is read) and the sum of their URLs by status, the queue being those
  not fetched yet (queued or leased);
- its budget: ``[limits.origin]`` with any ``origin:<id>`` override of the configuration
  given (``--config``, ``-s``, the environment), or the operator's (``origins limit``), which
  a running crawl books by over both; a Retry-After pause or backoff its key carries;
- its recent rate against the budget: its sites' URLs fetched in the last minute (from the
  store), and with ``--out`` the cost units its requests were booked for in the last minute
  (from the request log, which is written in batches: its last seconds may be missing);
- the operator's controls of its sites in effect, and the latest actions on the origin;
- in a shared crawl, the workers whose shards hold its sites.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from courtier.cli.origin_names import members, origins_of_sites, resolve_origin
from courtier.cli.store_input import UsageError
from courtier.config import Config
from courtier.frontier.base import FrontierStore, UrlStatus
from courtier.frontier.controls import OriginControl
from courtier.inputs import InputError
from courtier.politeness.keys import KeyType, LimitKey, origin_key

Query = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]
"""Runs one SQL statement on the store's database (``?`` placeholders) and gives its rows."""

WINDOW_S = 60.0
_UNSENT = (UrlStatus.QUEUED, UrlStatus.LEASED)


def origin_status(
    store: FrontierStore,
    text: str,
    config: Config,
    query: Query,
    *,
    out: Path | None = None,
    now: float | None = None,
) -> dict[str, Any]:
    """The status of the origin ``text`` names; InputError (exit 2) when it names none."""
    now = time.time() if now is None else now
    try:
        origin = resolve_origin(store, text)
    except UsageError as exc:
        raise InputError(f"--origin {exc}") from None
    sites = members(origins_of_sites(store), origin)
    urls: dict[str, int] = {}
    recent = 0
    if sites:
        marks = ", ".join("?" for _ in sites)
        rows = query(
            "SELECT status, count(*), sum(CASE WHEN fetched_at > ? THEN 1 ELSE 0 END) "
            f"FROM urls WHERE site IN ({marks}) GROUP BY status",
            [now - WINDOW_S, *sites],
        )
        for code, count, fetched in rows:
            name = UrlStatus(int(code)).name.lower()
            urls[name] = urls.get(name, 0) + int(count)
            recent += int(fetched or 0)
    key = origin_key(origin)
    operator = store.origin_controls().get(origin, OriginControl(origin))
    status: dict[str, Any] = {
        "origin": origin,
        "sites": sites,
        "urls": urls,
        "queue": sum(urls.get(s.name.lower(), 0) for s in _UNSENT),
        "budget": budget(config, origin, operator, now),
        "fetched_last_minute": recent,
        "floor_s": None,
        "site_controls": {
            site: text
            for site, control in sorted(store.site_controls().items())
            if site in sites and (text := control.describe(now)) != "-"
        },
        "actions": [a.line() for a in store.last_actions(5, origin)],
    }
    floor = store.load_clock_floors(now).get(key, 0.0)
    if floor > now:
        status["floor_s"] = round(floor - now, 1)
    if out is not None:
        log = request_log_rate(out, origin, now)
        rate = float(status["budget"]["rate"])
        log["use"] = round(log["units_per_s"] / rate, 3) if rate else None
        status["requests_last_minute"] = log
    return status


def budget(config: Config, origin: str, operator: OriginControl, now: float) -> dict[str, Any]:
    """The budget a crawl with ``config`` books ``origin`` by: rate (cost units per second),
    burst (seconds) and where they come from."""
    policy = config.limits.policy()
    configured = policy.params(LimitKey(KeyType.ORIGIN, origin))
    source = "override" if origin_key(origin) in policy.overrides else "configured"
    rate, burst = 1.0 / configured.interval, configured.burst
    if operator.in_effect(now) and operator.rate is not None:
        source = "operator"
        rate = operator.rate
        burst = burst if operator.burst is None else operator.burst
    return {
        "rate": round(rate, 6),
        "burst": burst,
        "source": source,
        "operator": operator.describe(now),
    }


def request_log_rate(out: Path, origin: str, now: float) -> dict[str, Any]:
    """Requests on ``origin`` in the request log's last minute, and their cost units."""
    from courtier.observe.query import QueryError, run_query

    if not out.is_dir():
        raise InputError(f"--out: {out}: not a directory (a crawl's output directory)")
    sql = (
        "SELECT count(*), coalesce(sum(cost_units + extra_units), 0) FROM requests "
        f"WHERE origin = '{origin.replace(chr(39), chr(39) * 2)}' AND refusal IS NULL "
        f"AND epoch(time) > {now - WINDOW_S!r}"
    )
    try:
        _columns, rows = run_query(out, sql)
    except QueryError as exc:
        raise InputError(f"--out: {exc}") from None
    count, units = rows[0] if rows else (0, 0.0)
    return {
        "requests": int(count),
        "units": round(float(units), 3),
        "units_per_s": round(float(units) / WINDOW_S, 3),
    }


def print_origin(status: dict[str, Any]) -> None:
    sites = status["sites"]
    shown = ", ".join(sites[:10]) + (f" and {len(sites) - 10} more" if len(sites) > 10 else "")
    print(f"origin {status['origin']}: {len(sites)} sites{': ' + shown if sites else ''}")
    b = status["budget"]
    print(f"budget: {b['rate']:g} cost units/s, burst {b['burst']:g} s ({b['source']})")
    urls = ", ".join(f"{k} {v}" for k, v in sorted(status["urls"].items())) or "none"
    print(f"urls: {urls}; queue {status['queue']}")
    print(f"fetched in the last minute: {status['fetched_last_minute']} URLs")
    log = status.get("requests_last_minute")
    if log is not None:
        use = "" if log["use"] is None else f", {100 * log['use']:.0f}% of the budget"
        print(
            f"request log, last minute: {log['requests']} requests, {log['units']:g} units "
            f"({log['units_per_s']:g}/s{use})"
        )
    if status["floor_s"] is not None:
        print(f"origin key: no start for {status['floor_s']} s (a pause or backoff the crawl kept)")
    else:
        print("origin key: no pause or backoff kept")
    print(f"operator's budget: {b['operator']}")
    for site, text in status["site_controls"].items():
        print(f"  site {site}: {text}")
    for line in status["actions"]:
        print(f"  {line}")
    if "held_by" in status:
        held = status["held_by"]
        text = ", ".join(f"{w} ({n} sites)" for w, n in held.items()) or "no worker"
        print(f"held by: {text}")
