"""The ceiling and its utilisation, from synthetic server logs of clients of known speed."""

from __future__ import annotations

import io
import json
from collections import defaultdict
from collections.abc import Iterable

import pytest
from rich.console import Console
from simweb_helpers import request_record

from courtier.simweb import Behaviour, Site, World
from courtier.simweb.audit import AuditReport, _RobotsJudge, audit_records
from courtier.simweb.ceiling import WORK_KINDS, core_pages
from courtier.simweb.log import RequestRecord
from courtier.simweb.report import print_report
from courtier.simweb.world import CDN_HOST

T0 = 1_800_000_000.0
RUN = 60.0


def _work(world: World) -> dict[str, list[Site]]:
    origins: dict[str, list[Site]] = defaultdict(list)
    for host in world.seed_hosts:
        site = world.sites[host]
        if site.kind in WORK_KINDS:
            origins[site.origin].append(site)
    return origins


def _site_rate(world: World, site: Site) -> float:
    gap = max(1.0, site.crawl_delay or 0.0)
    if site.behaviours & {Behaviour.RATE_LIMIT_SECONDS, Behaviour.RATE_LIMIT_DATE}:
        gap = max(gap, world.params.rate_limit_gap)
    return 1 / gap


def _polite(
    world: World,
    *,
    speed: float = 1.0,
    skip: Iterable[str] = (),
    late: dict[str, float] | None = None,
    second_half_speed: float | None = None,
    run: float = RUN,
) -> list[RequestRecord]:
    """Details (2 units) to every origin with work, round robin over its sites, at `speed` ×
    what binds: the origin's budget (1 detail/s) or its sites' limits. `late`: origin -> the
    second its first request starts; `second_half_speed`: the speed from RUN / 2 on."""
    records = []
    for origin, sites in _work(world).items():
        if origin in skip:
            continue
        full = min(world.origin_budget(origin) / 2, sum(_site_rate(world, s) for s in sites))
        t, k = (late or {}).get(origin, 0.0), 0
        while t < run:
            site = sites[k % len(sites)]
            records.append(request_record(site.host, f"/item/{k % 40 + 1}", T0 + t))
            fast = second_half_speed is not None and t >= run / 2
            rate = full * (second_half_speed if fast and second_half_speed else speed)
            t, k = t + 1 / rate, k + 1
    return sorted(records, key=lambda r: r.start)


def _audit(world: World, records: list[RequestRecord]) -> AuditReport:
    return audit_records(records, world)


def test_a_polite_client_at_full_budget_uses_the_whole_ceiling(world: World) -> None:
    report = _audit(world, _polite(world))
    c = report.ceiling
    assert c.origins_with_work == len(_work(world))  # the bait sites are no work
    assert c.utilisation == pytest.approx(1.0, abs=0.02)
    assert c.second_half_utilisation == pytest.approx(1.0, abs=0.03)
    assert c.raw_utilisation == pytest.approx(1.0, abs=0.05)
    assert not c.late_start and not c.never_requested and not c.finished
    assert report.criterion("origin-budget").ok  # polite: within every budget
    by_origin = {o.origin: o for o in c.origins}
    assert by_origin["platform-a"].rate == 2.0  # the budget binds: 8 tenants allow 16 units/s
    delayed = world.site_with(Behaviour.CRAWL_DELAY)
    assert by_origin[delayed.origin].rate == pytest.approx(1.0)  # 0.5 request/s x 2 units
    limited = world.site_with(Behaviour.RATE_LIMIT_SECONDS)
    assert by_origin[limited.origin].rate == pytest.approx(1.0)  # 429 under 2 s: 0.5 request/s
    assert all(o.utilisation == pytest.approx(1.0, abs=0.05) for o in c.origins)


def test_a_half_speed_client_uses_half(world: World) -> None:
    c = _audit(world, _polite(world, speed=0.5)).ceiling
    assert c.utilisation == pytest.approx(0.5, abs=0.03)
    assert c.second_half_utilisation == pytest.approx(0.5, abs=0.04)


def test_the_second_half_is_measured_apart(world: World) -> None:
    c = _audit(world, _polite(world, speed=0.5, second_half_speed=1.0)).ceiling
    assert c.utilisation == pytest.approx(0.75, abs=0.04)
    assert c.second_half_utilisation == pytest.approx(1.0, abs=0.04)


def test_an_origin_never_touched_is_visible_and_charged(world: World) -> None:
    origins = _work(world)
    standalone = next(
        o for o, sites in origins.items() if len(sites) == 1 and not sites[0].behaviours
    )
    report = _audit(world, _polite(world, skip={standalone}))
    c = report.ceiling
    assert c.never_requested == (standalone,) and c.late_start == (standalone,)
    untouched = next(o for o in c.origins if o.origin == standalone)
    assert untouched.units == 0 and untouched.ceiling_units == pytest.approx(2 * c.duration)
    assert untouched.first_request is None and untouched.utilisation == 0
    assert c.utilisation < 1 - untouched.ceiling_units / c.ceiling_units + 0.01
    text = io.StringIO()
    print_report(report, Console(file=text, width=200))
    assert "utilisation" in text.getvalue() and standalone in text.getvalue()
    data = json.loads(json.dumps(report.to_json()))
    assert data["ceiling"]["never_requested"] == [standalone]
    assert data["ceiling"]["utilisation"] == pytest.approx(c.utilisation)


def test_a_late_start_is_reported(world: World) -> None:
    c = _audit(world, _polite(world, late={"platform-a": 15.0, "platform-b": 9.0})).ceiling
    assert c.late_start == ("platform-a",) and not c.never_requested
    late = next(o for o in c.origins if o.origin == "platform-a")
    assert late.first_request == pytest.approx(15.0) and late.work_from == 0.0
    assert late.utilisation == pytest.approx(45 / 60, abs=0.03)  # charged from the start


def test_a_site_that_ran_out_of_pages_stops_counting(world: World) -> None:
    plain = next(
        s
        for s in world.seed_hosts
        if world.sites[s].kind in WORK_KINDS
        and not world.sites[s].behaviours
        and world.sites[s].origin == s
    )
    site = world.sites[plain]
    pages = sorted(core_pages(world, site, _RobotsJudge().allowed))
    assert "/robots.txt" in pages and "/" in pages and "/list/4" in pages
    assert "/private/x" not in pages and "/item/40" in pages
    # Its whole core at its budget (2 s for the home page and the listings: 4 units each), then
    # nothing for the rest of the run; the other origins run on for 100 s.
    others = [r for r in _polite(world, run=100) if world.site_of_host(r.host) is not site]
    t, mine = 0.0, []
    for page in pages:
        mine.append(request_record(plain, page, T0 + t))
        t += 2.0 if page == "/" or page.startswith("/list/") else 1.0
    c = _audit(world, sorted(others + mine, key=lambda r: r.start)).ceiling
    done = next(o for o in c.origins if o.origin == plain)
    assert done.finished and c.finished == (plain,) and not c.neglected
    assert done.work_until == pytest.approx(mine[-1].end - T0)
    assert done.utilisation == pytest.approx(1.0, abs=0.06)
    assert c.utilisation == pytest.approx(1.0, abs=0.02)

    # The same site given only a few pages and then left idle was neglected: charged to the end.
    c = _audit(world, sorted(others + mine[:5], key=lambda r: r.start)).ceiling
    left = next(o for o in c.origins if o.origin == plain)
    assert not left.finished and c.neglected == (plain,)
    assert left.work_until == pytest.approx(c.duration)
    assert left.utilisation < 0.2


def test_retry_after_windows_lower_the_ceiling(world: World) -> None:
    site = world.site_with(Behaviour.UNAVAILABLE_AT_START)
    records = [r for r in _polite(world) if r.host != site.host]
    refusal = request_record(site.host, "/", T0, status=503, retry_until=T0 + 20.01)
    mine = [refusal] + [request_record(site.host, f"/item/{n}", T0 + 20 + n) for n in range(40)]
    c = _audit(world, sorted(records + mine, key=lambda r: r.start)).ceiling
    origin = next(o for o in c.origins if o.origin == site.origin)
    assert origin.ceiling_units == pytest.approx(2 * (c.duration - 20), abs=0.1)


def test_cache_misses_add_their_rate_to_the_sites_limits(world: World) -> None:
    delayed = world.site_with(Behaviour.CRAWL_DELAY)
    misses = [
        request_record(CDN_HOST, f"/{delayed.host}/img/{n}.jpg", T0 + n, cache="MISS")
        for n in range(1, 9)
    ]
    c = _audit(world, sorted([*_polite(world), *misses], key=lambda r: r.start)).ceiling
    origin = next(o for o in c.origins if o.origin == delayed.origin)
    # 0.5 request/s x 2 units, and 8 misses over the run's 59 s
    assert origin.site_bound == pytest.approx(1.0 + 8 / c.duration)
    assert origin.units == 68  # 30 details and the misses
    assert origin.utilisation == pytest.approx(1.0, abs=0.03)


def test_an_empty_log_has_no_ceiling(world: World) -> None:
    c = _audit(world, []).ceiling
    assert c.ceiling_units == 0 and c.utilisation == 0 and c.duration == 0
    assert len(c.never_requested) == len(_work(world))


def test_extra_seeds_count_from_their_first_request(world: World) -> None:
    horizon = world.horizon_hosts[0]
    records = [*_polite(world), request_record(horizon, "/", T0 + 30)]
    report = audit_records(sorted(records, key=lambda r: r.start), world, extra_seeds=[horizon])
    origin = next(o for o in report.ceiling.origins if o.origin == horizon)
    assert origin.work_from == pytest.approx(30.0) and horizon not in report.ceiling.late_start
    unused = audit_records(_polite(world), world, extra_seeds=[horizon]).ceiling
    assert horizon not in {o.origin for o in unused.origins}


def test_a_known_start_charges_the_crawlers_start_up(world: World) -> None:
    records = _polite(world)
    c = audit_records(records, world, run_start=T0 - 6.0).ceiling
    assert c.first_request == pytest.approx(6.0) and c.duration == pytest.approx(65.01)
    assert c.utilisation == pytest.approx(59.01 / 65.01, abs=0.02)
    assert not c.late_start
    assert audit_records(records, world, run_start=T0 - 12.0).ceiling.late_start
