"""End to end, no hand list: a news site whose home page gains a listing every 30 s is found
to be a fast source by the crawl itself, and its new listings are fetched within 90 s of
appearing (p90, from the servers' log); pages that never change are not fetched again
before their interval (a home page that does not change is looked at no sooner than a
minute after the last look, each look later than the one before, and stops being looked at
after three looks; any other page is fetched once)."""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import math
import time
from collections import defaultdict
from pathlib import Path

import pytest

from courtier.cli import main
from courtier.frontier.fresh import FreshState
from courtier.frontier.sqlite_store import SqliteFrontier
from courtier.simweb.audit import audit
from courtier.simweb.log import read_log
from courtier.simweb.news import published
from courtier.simweb.process import SimWebProcess
from courtier.simweb.world import SIZE_PRESETS, SiteKind

pytestmark = [pytest.mark.slow, pytest.mark.long]

DURATION = 240.0


def _host(record: object) -> str:
    return str(record.host).split(":")[0].rstrip(".").lower()  # type: ignore[attr-defined]


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)]


def test_a_news_site_is_found_fast_and_still_pages_wait_their_interval(tmp_path: Path) -> None:
    params = SIZE_PRESETS["news"]
    with SimWebProcess(tmp_path / "web", params) as web:
        args = ["crawl", "--seeds", str(web.seeds_path), "--dns", web.dns]
        args += ["--allow-net", web.allow_net, "--out", str(tmp_path / "out")]
        args += ["--duration", str(DURATION), "--json", "-s", "media.fetch=false"]
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            assert main(args) == 0
        ended = time.time()
        started = float(web.info["started_at"])  # type: ignore[arg-type]
    records = list(read_log(web.log_path))
    world = web.world
    news = world.sites_of_kind(SiteKind.NEWS)[0].host

    # New listings: fetched within 90 s of appearing (those that appeared 90 s before the
    # crawl ended; the first ones were there before it began).
    first_fetch: dict[int, float] = {}
    for r in records:
        if _host(r) == news and r.target.startswith("/news/") and r.status == 200:
            n = int(r.target.removeprefix("/news/"))
            first_fetch.setdefault(n, r.start)
    delays = []
    for n in range(1, 1000):
        appeared = started + published(params, n)
        if appeared > ended - 90:
            break
        if published(params, n) > 0:
            assert n in first_fetch, (
                f"listing {n} (appeared at +{appeared - started:.0f} s) never fetched"
            )
            delays.append(first_fetch[n] - appeared)
    assert len(delays) >= 4, delays
    assert _p90(delays) <= 90.0, delays

    # Pages that never change.
    fetches: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in records:
        if r.target != "/robots.txt" and r.status == 200:
            fetches[(_host(r), r.target)].append(r.start)
    still_homes = 0
    for (host, target), times in fetches.items():
        if host == news and target in ("/", "/feed.xml"):
            continue
        if target == "/" and world.sites[host].kind is not SiteKind.NEWS:
            gaps = [b - a for a, b in itertools.pairwise(times)]
            assert all(gap >= 59.0 for gap in gaps), (host, gaps)
            assert gaps == sorted(gaps), (host, gaps)  # each look later than the last
            assert len(times) <= 4, (host, times)
            still_homes += len(times) > 1
        else:
            assert len(times) == 1, (host, target, times)
    assert still_homes >= 3  # they were looked at again, and judged still

    # The store says which page is a fast source, and why.
    store = SqliteFrontier(tmp_path / "out" / "frontier.sqlite3")
    try:
        sources = {s.url: s for s in store.fresh_sources()}
    finally:
        store.close()
    home = next(s for url, s in sources.items() if news in url and url.endswith("/"))
    assert home.state is FreshState.SOURCE, home
    assert home.evidence == "home page"
    assert 60.0 <= home.interval <= 90.0, home
    quiet = [s for url, s in sources.items() if news not in url]
    assert quiet and all(s.state is not FreshState.SOURCE for s in quiet), quiet

    report = audit(web.log_path, world)
    assert report.ok, [c for c in report.criteria if not c.ok]
    stats = json.loads(buffer.getvalue().strip().splitlines()[-1])
    assert stats["requests"] > 0
