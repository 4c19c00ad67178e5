"""The audit catches a rude client on every criterion and passes a polite one."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from pathlib import Path

from simweb_helpers import Client, logged
from simweb_helpers import request_record as _record

from courtier.simweb import SiteKind, World, build_world
from courtier.simweb.audit import AuditReport, audit, audit_records
from courtier.simweb.log import RequestLog
from courtier.simweb.world import CDN_HOST, IMGSVC_HOST, ROBOTS_VARIANTS, STORE_HOST, Behaviour

T0 = 1_800_000_000.0
REQUIRED = {"site-gap", "robots", "canary", "outside-seed"}


def _plain_site(world: World, *, robots: str = "User-agent: *\nDisallow: /private/\n") -> str:
    return next(
        s.host
        for s in world.sites.values()
        if s.kind is SiteKind.STANDALONE and not s.behaviours and s.robots_text == robots
    )


def _failed(report: AuditReport) -> set[str]:
    return {c.name for c in report.criteria if not c.ok}


def test_gaps_and_busiest_second_are_measured_per_site(world: World) -> None:
    host = _plain_site(world)
    starts = [T0, T0 + 1.0, T0 + 1.3, T0 + 1.9, T0 + 3.5]
    report = audit_records(
        [_record(host, f"/item/{i + 1}", s) for i, s in enumerate(starts)], world
    )
    (site,) = report.sites
    assert site.requests == 5 and abs((site.min_gap or 0) - 0.3) < 1e-6
    assert site.max_per_second == 3
    # Three details (2 units each) inside 0.9 s also overrun the origin's 1 s limit of 2 + 2.
    assert _failed(report) == {"site-gap", "origin-budget"} and not report.ok


def test_spelled_hosts_count_as_one_site(world: World) -> None:
    host = _plain_site(world)
    records = [
        _record(spelled, "/", T0 + i * 0.1)
        for i, spelled in enumerate((host, host.upper(), host + ".", f"{host}:80"))
    ]
    (site,) = audit_records(records, world).sites
    assert site.requests == 4 and site.max_per_second == 4


def test_origin_windows_add_request_costs_across_tenants(world: World) -> None:
    tenants = [s.host for s in world.sites.values() if s.kind is SiteKind.CNAME_TENANT]
    # Four tenants, one listing (4 units) each within a second: 16 units; limit 2*1 + 4 = 6.
    records = [_record(h, "/list/1", T0 + i * 0.2) for i, h in enumerate(tenants[:4])]
    report = audit_records(records, world)
    origin = next(o for o in report.origins if o.origin == "platform-a")
    assert (origin.max_units_1s, origin.max_units_5s, origin.cost_units) == (16, 16, 16)
    assert origin.limit_1s == 6 and origin.limit_5s == 14 and origin.over_budget
    assert not report.criterion("origin-budget").ok and report.ok  # informational only


def test_origin_within_budget_is_not_flagged(world: World) -> None:
    tenants = [s.host for s in world.sites.values() if s.kind is SiteKind.CNAME_TENANT]
    records = [_record(h, "/item/1", T0 + i * 1.0) for i, h in enumerate(tenants)]  # 2 units/s
    origin = next(o for o in audit_records(records, world).origins if o.origin == "platform-a")
    assert not origin.over_budget


def test_robots_rules_are_judged_per_site(world: World) -> None:
    host = _plain_site(world)
    broken = world.site_with(Behaviour.ROBOTS_500).host
    missing = world.site_with(Behaviour.ROBOTS_404).host
    records = [
        _record(host, "/robots.txt", T0),
        _record(host, "/private/account", T0 + 2),
        _record(host, "/item/1", T0 + 4),
        _record(broken, "/robots.txt", T0),
        _record(broken, "/", T0 + 2),
        _record(missing, "/private/x", T0),
    ]
    report = audit_records(records, world)
    robots = [(v.host, v.target) for v in report.violations if v.kind == "robots"]
    assert robots == [(host, "/private/account"), (broken, "/")] or sorted(robots) == sorted(
        [(host, "/private/account"), (broken, "/")]
    )
    assert _failed(report) == {"robots"}


def test_token_specific_group_overrides_the_star_group(world: World) -> None:
    variant = ROBOTS_VARIANTS[1]
    assert "User-agent: courtier" in variant
    host = next(h for h in world.seed_hosts if world.sites[h].robots_text == variant)
    report = audit_records([_record(host, "/search?q=tea", T0)], world)
    assert report.sites[0].robots_violations == 1


def test_crawl_delay_and_retry_after_windows(world: World) -> None:
    delayed = world.site_with(Behaviour.CRAWL_DELAY).host
    limited = world.site_with(Behaviour.RATE_LIMIT_SECONDS).host
    records = [
        _record(delayed, "/", T0),
        _record(delayed, "/item/1", T0 + 1.5),
        _record(delayed, "/item/2", T0 + 3.6),
        _record(limited, "/", T0),
        _record(limited, "/item/1", T0 + 1, status=429, retry_until=T0 + 6.01),
        _record(limited, "/item/1", T0 + 4),
        _record(limited, "/item/1", T0 + 6.1),
    ]
    report = audit_records(records, world)
    figures = {s.host: s for s in report.sites}
    assert figures[delayed].crawl_delay_violations == 1
    assert figures[limited].retry_after_violations == 1
    assert {"crawl-delay", "retry-after"} <= _failed(report) and report.ok


def test_duplicates_ignore_query_order_and_retries_after_refusals(world: World) -> None:
    host = _plain_site(world)
    records = [
        _record(host, "/search?q=a&page=2", T0),
        _record(host, "/search?page=2&q=a", T0 + 2),  # duplicate
        _record(host, "/item/1", T0 + 4, status=503),
        _record(host, "/item/1", T0 + 6),  # a retry, not a duplicate
        _record(host, "/item/1", T0 + 8),  # duplicate
    ]
    report = audit_records(records, world)
    assert report.duplicate_fetches == 2 and report.ok


def test_asking_again_for_a_page_the_server_hung_on_is_a_retry(world: World) -> None:
    """A hanging site still answering a request 20 s on: the crawler gave up and asked again
    (a retry). Asked again while the first was answered within a second, or after it was
    answered, it is a duplicate."""
    host = _plain_site(world)
    records = [
        _record(host, "/item/1", T0, end=T0 + 30),
        _record(host, "/item/1", T0 + 22),  # gave up after 22 s: a retry
        _record(host, "/item/2", T0 + 1, end=T0 + 1.5),
        _record(host, "/item/2", T0 + 1.2),  # two at once: a duplicate
        _record(host, "/item/1", T0 + 40),  # after its answer: a duplicate
    ]
    assert audit_records(records, world).duplicate_fetches == 2


def test_outside_seed_counts_by_kind_and_media_can_be_allowed(world: World) -> None:
    records = [
        _record(world.popular_horizon_host, "/", T0),
        _record(world.farm_hosts[0], "/", T0),
        _record("nowhere.test", "/", T0),
        _record(CDN_HOST, f"/{world.seed_hosts[0]}/img/1.jpg", T0),
        _record("x", "/ssrf", T0, canary=True),
    ]
    strict = audit_records(records, world)
    assert strict.outside_seed == {"cdn": 1, "farm": 1, "horizon": 1, "unknown": 1}
    assert strict.canary_hits == 1 and _failed(strict) == {"outside-seed", "canary"}
    lenient = audit_records(records, world, allow_media=True)
    assert lenient.criterion("outside-seed").detail.startswith("3 requests")
    assert lenient.media_requests == 1


def test_an_empty_log_passes_with_zero_throughput(world: World) -> None:
    report = audit_records([], world)
    assert report.ok and report.requests == 0 and report.throughput == 0.0


def test_audit_reads_100k_lines_in_seconds(world: World, tmp_path: Path) -> None:
    hosts = [h for h in world.seed_hosts if not world.sites[h].behaviours]
    log = RequestLog(tmp_path / "big.jsonl")
    for i in range(100_000):
        log.write(_record(hosts[i % len(hosts)], f"/item/{i % 40 + 1}?p={i % 7}", T0 + i / 800))
    log.close()
    began = time.perf_counter()
    report = audit(tmp_path / "big.jsonl", world)
    elapsed = time.perf_counter() - began
    assert report.requests == 100_000 and abs(report.throughput - 800) < 1
    assert elapsed < 10, f"audit of 100k lines took {elapsed:.1f}s"


def test_report_serialises_to_json(world: World) -> None:
    report = audit_records([_record(_plain_site(world), "/", T0)], world)
    data = json.loads(json.dumps(report.to_json()))
    assert data["ok"] is True and data["requests"] == 1
    assert {c["name"] for c in data["criteria"]} >= REQUIRED


# -- over real sockets ---------------------------------------------------------------------------


async def test_rude_client_is_caught_on_every_criterion(client: Client) -> None:
    """Back-to-back requests, robots ignored, a horizon host fetched, the canary hit, a
    customer's images pulled through the CDN and the image service uncached, a bucket
    hammered."""
    web = client.web
    world = web.world
    host = _plain_site(world)
    for target in ("/", "/item/1", "/private/account", "/item/1"):  # no robots.txt, no pause
        await client.get(host, target)
    customer = world.sites[next(h for h in world.seed_hosts if h != host and world.sites[h].bucket)]
    for n in range(1, world.params.n_images + 1):  # every object a miss: load on the customer
        assert (await client.get(CDN_HOST, f"/{customer.host}/img/{n}.jpg")).status == 200
    for width in (320, 640):
        await client.get(IMGSVC_HOST, f"/{customer.label}/w_{width}/img/1.jpg")
    bucket = customer.bucket
    assert bucket is not None
    hammer = int(world.bucket_limit(1.0)) + 4
    await asyncio.gather(
        *(
            client.get(f"{bucket}.{STORE_HOST}", "/img/1.jpg")
            if i % 2
            else client.get(STORE_HOST, f"/{bucket}/img/1.jpg")
            for i in range(hammer)
        )
    )
    await client.get(world.popular_horizon_host, "/")
    await client.get("static.test", "/", address=web.network.canary_address)
    limited = world.site_with(Behaviour.RATE_LIMIT_SECONDS).host
    for _ in range(3):
        await client.get(limited, "/")
    delayed = world.site_with(Behaviour.CRAWL_DELAY).host
    await client.get(delayed, "/")
    await client.get(delayed, "/list/1")
    report = audit_records(await logged(web), world)
    assert not report.ok
    assert _failed(report) == REQUIRED | {
        "crawl-delay",
        "retry-after",
        "duplicates",
        "origin-budget",
        "cdn-misses",
        "bucket-rate",
    }
    media = {"cdn": world.params.n_images, "imgsvc": 2, "store": hammer}
    assert report.canary_hits == 1 and report.outside_seed == {"horizon": 1, **media}
    assert report.media.cache_misses == world.params.n_images + 2
    (figures,) = report.buckets
    assert (figures.bucket, figures.requests) == (bucket, hammer) and figures.over_limit
    missed = next(o for o in report.origins if o.origin == customer.origin)
    assert missed.miss_requests == world.params.n_images + 2 and missed.over_budget
    assert {v.kind for v in report.violations} >= {
        "canary",
        "outside-seed",
        "robots",
        "duplicate",
        "retry-after",
        "crawl-delay",
    }


async def test_polite_slow_client_passes(client: Client) -> None:
    """robots.txt first, obeyed, more than a second between requests to a site, seed only."""
    web = client.web
    world = web.world
    sites = [s for s in world.sites.values() if s.is_seed and not s.behaviours]
    standalone = [s.host for s in sites if s.kind is SiteKind.STANDALONE][:4]
    tenants = [
        next(s.host for s in sites if s.kind is kind)
        for kind in (SiteKind.CNAME_TENANT, SiteKind.HEADER_TENANT)
    ]

    async def visit(host: str) -> None:
        for target in ("/robots.txt", "/", "/item/2"):
            began = time.monotonic()
            await client.get(host, target)
            await asyncio.sleep(max(0.0, 1.1 - (time.monotonic() - began)))

    await asyncio.gather(*(visit(h) for h in standalone + tenants))
    report = audit_records(await logged(web), world)
    assert [c for c in report.criteria if not c.ok] == []
    assert report.requests == 3 * len(standalone + tenants) >= 12
    assert all((s.min_gap or 0) >= 1.0 for s in report.sites)


def test_site_interval_and_tolerance_change_the_verdict(world: World) -> None:
    host = _plain_site(world)
    records = [_record(host, "/", T0), _record(host, "/item/1", T0 + 0.97)]
    assert audit_records(records, world).ok
    assert not audit_records(records, world, tolerance=0.01).ok
    assert audit_records(records, world, site_interval=0.5, tolerance=0.0).ok
    assert dataclasses.replace(audit_records(records, world), criteria=()).ok
    assert build_world(world.params) == world


def test_overload_errors_of_the_rising_latency_site_fail_latency_feedback(world: World) -> None:
    host = world.site_with(Behaviour.RISING_LATENCY).host
    calm = [_record(host, f"/list/{i}", 100.0 + 3 * i) for i in range(4)]
    assert "latency-feedback" not in _failed(audit_records(calm, world))
    pushed = [*calm, _record(host, "/list/9", 113.0, status=503)]
    report = audit_records(pushed, world)
    assert "latency-feedback" in _failed(report)
    assert report.ok  # informative: it does not decide the skeleton's verdict
