"""The audit judges media traffic: cache misses load the customer's origin, buckets have a rate."""

from __future__ import annotations

import json

from simweb_helpers import request_record as _record

from courtier.simweb import SiteKind, World
from courtier.simweb.audit import AuditReport, audit_records
from courtier.simweb.log import RequestRecord
from courtier.simweb.world import CDN_HOST, IMGSVC_HOST, STORE_HOST

T0 = 1_800_000_000.0


def _failed(report: AuditReport) -> set[str]:
    return {c.name for c in report.criteria if not c.ok}


def _plain_site(world: World) -> str:
    return next(
        h
        for h in world.seed_hosts
        if world.sites[h].kind is SiteKind.STANDALONE and not world.sites[h].behaviours
    )


def _bucket_requests(bucket: str, starts: list[float]) -> list[RequestRecord]:
    """Alternately virtual-hosted and path-style, as the store logs them."""
    return [
        _record(f"{bucket}.{STORE_HOST}", "/img/1.jpg", start, bucket=bucket)
        if i % 2
        else _record(STORE_HOST, f"/{bucket}/img/2.jpg", start, bucket=bucket)
        for i, start in enumerate(starts)
    ]


def test_a_burst_over_the_bucket_limit_fails_bucket_rate(world: World) -> None:
    bucket = next(iter(world.buckets))
    limit = world.bucket_limit(1.0)
    assert limit == 11  # SMALL: 5 requests/s, 1 s of burst
    burst = [T0 + i * 0.05 for i in range(int(limit) + 1)]
    report = audit_records(_bucket_requests(bucket, burst), world, allow_media=True)
    (figures,) = report.buckets
    assert (figures.bucket, figures.requests, figures.max_1s) == (bucket, 12, 12)
    assert (figures.limit_1s, figures.limit_5s) == (11, 31) and figures.over_limit
    assert _failed(report) == {"bucket-rate"} and report.ok  # reported, not required
    detail = report.criterion("bucket-rate").detail
    assert detail.startswith("1 of 1 buckets over") and f"worst {bucket}: 12/11" in detail
    assert report.outside_seed == {"store": 12} and report.media.requests == {"store": 12}
    assert report.origins == ()  # the store is judged per bucket, not as an origin


def test_the_same_burst_within_the_limit_passes(world: World) -> None:
    bucket = next(iter(world.buckets))
    burst = [T0 + i * 0.05 for i in range(int(world.bucket_limit(1.0)))]
    report = audit_records(_bucket_requests(bucket, burst), world, allow_media=True)
    assert report.buckets[0].max_1s == 11 and not report.buckets[0].over_limit
    assert not _failed(report)
    assert f"busiest {bucket}: 11/11" in report.criterion("bucket-rate").detail


def test_a_sustained_rate_over_the_bucket_rate_fails_the_5s_window(world: World) -> None:
    bucket = next(iter(world.buckets))
    # 7 a second: never more than 11 in a second, but 35 in 5 s against 5 × (5 + 1) + 1 = 31.
    fast = audit_records(_bucket_requests(bucket, [T0 + i / 7 for i in range(42)]), world)
    assert (fast.buckets[0].max_1s, fast.buckets[0].max_5s) == (7, 35)
    assert "bucket-rate" in _failed(fast)
    # At the bucket's own rate the burst tolerance is never touched.
    steady = audit_records(_bucket_requests(bucket, [T0 + i / 5 for i in range(100)]), world)
    assert steady.buckets[0].max_5s == 25 and "bucket-rate" not in _failed(steady)


def test_buckets_are_judged_apart_and_the_worst_is_named(world: World) -> None:
    first, second = list(world.buckets)[:2]
    records = [
        *_bucket_requests(first, [T0 + i * 0.01 for i in range(14)]),
        *_bucket_requests(second, [T0 + i * 0.01 for i in range(20)]),
    ]
    report = audit_records(records, world, allow_media=True)
    assert [b.bucket for b in report.buckets] == sorted([first, second])
    assert all(b.over_limit for b in report.buckets)
    assert f"worst {second}: 20/11" in report.criterion("bucket-rate").detail


def test_cdn_misses_push_the_customers_origin_over_budget_and_hits_do_not(world: World) -> None:
    host = _plain_site(world)
    home = _record(host, "/", T0)  # 4 units; the 1 s limit is 2 × 1 + 4 = 6
    images = [f"/{spelled}/img/{n}.jpg" for n, spelled in enumerate([host, host.upper()], 1)]
    images.append(f"/{host}./img/3.jpg")

    def cdn(cache: str) -> list[RequestRecord]:
        return [_record(CDN_HOST, t, T0 + 0.1 * (i + 1), cache=cache) for i, t in enumerate(images)]

    missed = audit_records([home, *cdn("MISS")], world, allow_media=True)
    (origin,) = missed.origins
    assert (origin.origin, origin.requests, origin.miss_requests) == (host, 1, 3)
    assert (origin.cost_units, origin.max_units_1s, origin.limit_1s) == (7, 7, 6)
    assert origin.over_budget and _failed(missed) == {"origin-budget", "cdn-misses"}
    assert missed.criterion("cdn-misses").detail == (
        f"3 cache misses reached 1 origins; 1 of them over budget with misses counted: {host}"
    )
    assert missed.media.cache_misses == 3 and missed.media.cache_hits == 0

    hit = audit_records([home, *cdn("HIT")], world, allow_media=True)
    (origin,) = hit.origins
    assert (origin.cost_units, origin.miss_requests, origin.over_budget) == (4, 0, False)
    assert not _failed(hit) and hit.media.cache_hits == 3
    assert hit.criterion("cdn-misses").detail.startswith("0 cache misses reached 0 origins")


def test_misses_alone_can_overrun_an_origin_nobody_fetched_directly(world: World) -> None:
    host = _plain_site(world)
    misses = [
        _record(CDN_HOST, f"/{host}/img/{n}.jpg", T0 + n * 0.1, cache="MISS") for n in (1, 2, 3, 4)
    ]
    report = audit_records(misses, world, allow_media=True)
    (origin,) = report.origins
    assert (origin.requests, origin.miss_requests, origin.limit_1s) == (0, 4, 3)
    assert origin.over_budget and {"origin-budget", "cdn-misses"} == _failed(report)
    assert report.sites == ()  # no request reached the site itself


def test_image_service_misses_are_attributed_by_label(world: World) -> None:
    tenants = [h for h in world.seed_hosts if world.sites[h].kind is SiteKind.CNAME_TENANT]
    records = [
        _record(IMGSVC_HOST, f"/{world.sites[h].label}/w_{w}/img/1.jpg", T0 + i * 0.1, cache="MISS")
        for i, (h, w) in enumerate([(tenants[0], 320), (tenants[0], 640), (tenants[1], 320)])
    ]
    records.append(_record(IMGSVC_HOST, "/nobody/w_320/img/1.jpg", T0 + 0.5, cache="MISS"))
    records.append(
        _record(
            IMGSVC_HOST, f"/{world.sites[tenants[0]].label}/w_320/img/1.jpg", T0 + 0.6, cache="HIT"
        )
    )
    report = audit_records(records, world, allow_media=True)
    (origin,) = report.origins
    assert (origin.origin, origin.miss_requests, origin.cost_units) == ("platform-a", 3, 3)
    assert not origin.over_budget and not _failed(report)  # 3 units against 2 × 1 + 1
    assert report.media.requests == {"imgsvc": 5}
    assert (report.media.cache_hits, report.media.cache_misses) == (1, 4)
    assert report.media.unattributed_misses == 1
    detail = report.criterion("cdn-misses").detail
    assert detail.startswith("3 cache misses reached 1 origins") and "1 misses for no" in detail


def test_misses_count_with_the_origins_own_requests_across_tenants(world: World) -> None:
    tenants = [h for h in world.seed_hosts if world.sites[h].kind is SiteKind.CNAME_TENANT]
    pages = [_record(tenants[0], "/item/1", T0)]  # 2 units; limit 2 + 2 = 4
    misses = [
        _record(CDN_HOST, f"/{tenants[1]}/img/{n}.jpg", T0 + 0.1 * n, cache="MISS")
        for n in (1, 2, 3)
    ]
    report = audit_records([*pages, *misses], world, allow_media=True)
    (origin,) = report.origins
    assert (origin.origin, origin.requests, origin.miss_requests) == ("platform-a", 1, 3)
    assert (origin.max_units_1s, origin.limit_1s) == (5, 4) and origin.over_budget
    assert _failed(report) == {"origin-budget", "cdn-misses"}


def test_media_hosts_stay_outside_the_seed_unless_allowed(world: World) -> None:
    host = _plain_site(world)
    bucket = world.sites[host].bucket
    assert bucket is not None
    records = [
        _record(CDN_HOST, f"/{host}/img/1.jpg", T0, cache="MISS"),
        _record(IMGSVC_HOST, f"/{world.sites[host].label}/w_1/img/1.jpg", T0 + 2, cache="MISS"),
        *_bucket_requests(bucket, [T0 + 4, T0 + 6]),
    ]
    strict = audit_records(records, world)
    assert strict.outside_seed == {"cdn": 1, "imgsvc": 1, "store": 2}
    assert _failed(strict) == {"outside-seed"} and not strict.ok
    lenient = audit_records(records, world, allow_media=True)
    assert lenient.ok and not _failed(lenient) and lenient.media_requests == 4


def test_report_json_carries_buckets_and_the_media_summary(world: World) -> None:
    bucket = next(iter(world.buckets))
    host = _plain_site(world)
    records = [
        *_bucket_requests(bucket, [T0 + i * 0.01 for i in range(12)]),
        _record(CDN_HOST, f"/{host}/img/1.jpg", T0, cache="MISS"),
    ]
    data = json.loads(json.dumps(audit_records(records, world, allow_media=True).to_json()))
    assert data["buckets"] == [
        {
            "bucket": bucket,
            "requests": 12,
            "max_1s": 12,
            "max_5s": 12,
            "limit_1s": 11.0,
            "limit_5s": 31.0,
            "over_limit": True,
        }
    ]
    assert data["media"] == {
        "requests": {"cdn": 1, "store": 12},
        "cache_hits": 0,
        "cache_misses": 1,
        "unattributed_misses": 0,
    }
    assert data["origins"][0]["miss_requests"] == 1
    criteria = {c["name"]: c for c in data["criteria"]}
    assert not criteria["bucket-rate"]["ok"] and criteria["cdn-misses"]["ok"]
    assert not criteria["bucket-rate"]["required"] and not criteria["cdn-misses"]["required"]
