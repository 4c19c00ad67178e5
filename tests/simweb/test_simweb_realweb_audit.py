"""The audit knows the ground truth of the real web's shapes: who pays for what, per kind."""

from __future__ import annotations

import io
import json
from collections import defaultdict

import pytest
from rich.console import Console
from simweb_helpers import REALWEB
from simweb_helpers import request_record as _record

from courtier.simweb import Behaviour, Site, SiteKind, World, build_world
from courtier.simweb.audit import AuditReport, audit_records
from courtier.simweb.ceiling import WORK_KINDS
from courtier.simweb.log import RequestRecord
from courtier.simweb.report import print_report
from courtier.simweb.world import IMGSVC_HOST, IMGSVC_STORE, PLATFORM_A_MEDIA_HOST

T0 = 1_800_000_000.0
RUN = 40.0
KINDS = ("cname-tenant", "edge-site", "edge-tenant", "header-tenant", "standalone")


@pytest.fixture(scope="module")
def realweb() -> World:
    return build_world(REALWEB)


def _failed(report: AuditReport) -> set[str]:
    return {c.name for c in report.criteria if not c.ok}


def _of(world: World, kind: SiteKind) -> list[Site]:
    return [s for s in world.sites.values() if s.kind is kind]


def _polite(world: World, skip_kinds: frozenset[SiteKind] = frozenset()) -> list[RequestRecord]:
    """Details (2 units) to every origin with work, round robin over its sites, at what binds:
    the origin's budget (1 detail/s) or its sites' limits (Crawl-delay, the 429 gap)."""
    origins: dict[str, list[Site]] = defaultdict(list)
    for host in world.seed_hosts:
        site = world.sites[host]
        if site.kind in WORK_KINDS and site.kind not in skip_kinds:
            origins[site.origin].append(site)
    records = []
    for sites in origins.values():
        rate = min(1.0, sum(_site_rate(world, s) for s in sites))
        t, k = 0.0, 0
        while t < RUN:
            site = sites[k % len(sites)]
            records.append(_record(site.host, f"/item/{k % 40 + 1}", T0 + t))
            t, k = t + 1 / rate, k + 1
    return sorted(records, key=lambda r: r.start)


def _site_rate(world: World, site: Site) -> float:
    gap = max(1.0, site.crawl_delay or 0.0)
    if site.behaviours & {Behaviour.RATE_LIMIT_SECONDS, Behaviour.RATE_LIMIT_DATE}:
        gap = max(gap, world.params.rate_limit_gap)
    return 1 / gap


def test_platform_a_pays_for_its_media_host(realweb: World) -> None:
    tenants = _of(realweb, SiteKind.CNAME_TENANT)
    page = _record(tenants[0].host, "/item/1", T0)  # 2 units; the 1 s limit is 2 × 1 + 2 = 4
    media = [
        _record(PLATFORM_A_MEDIA_HOST, f"/{tenants[n].label}/img/1.jpg", T0 + 0.1 * (n + 1))
        for n in range(3)
    ]
    report = audit_records([page, *media], realweb, allow_media=True)
    (origin,) = report.origins
    assert (origin.origin, origin.requests, origin.media_requests) == ("platform-a", 1, 3)
    assert (origin.miss_requests, origin.cost_units, origin.max_units_1s) == (0, 5, 5)
    assert origin.over_budget and _failed(report) == {"origin-budget"}
    assert report.media.requests == {"platform-media": 3}
    assert report.outside_seed == {"platform-media": 3} and report.ok  # media allowed
    strict = audit_records([page, *media], realweb)
    assert "outside-seed" in _failed(strict)
    # Within its budget, the media host's images count as platform A's achieved units.
    spaced = [_record(PLATFORM_A_MEDIA_HOST, r.target, r.start + i) for i, r in enumerate(media)]
    c = audit_records([page, *spaced], realweb, allow_media=True).ceiling
    platform_a = next(o for o in c.origins if o.origin == "platform-a")
    assert platform_a.units == 5 and platform_a.kind == "cname-tenant"


def test_vanity_media_is_charged_to_its_site_and_its_bucket(realweb: World) -> None:
    vanity = [s for s in realweb.sites.values() if s.media_host]
    cdn = next(s for s in vanity if realweb.sites[s.media_host or ""].kind is SiteKind.CDN)
    store = next(s for s in vanity if realweb.sites[s.media_host or ""].kind is SiteKind.STORE)
    assert cdn.media_host and store.media_host
    distribution = realweb.dns.cnames[cdn.media_host]
    records = [
        _record(cdn.media_host, "/img/1.jpg", T0, cache="MISS"),
        _record(distribution, "/img/2.jpg", T0 + 0.1, cache="MISS"),
        _record(distribution.upper(), "/img/2.jpg", T0 + 0.2, cache="HIT"),
        # what the store logs for a request to the vanity host: the site's bucket
        *(_record(store.media_host, "/img/1.jpg", T0 + i, bucket=store.bucket) for i in range(3)),
    ]
    report = audit_records(records, realweb, allow_media=True)
    (origin,) = report.origins
    assert (origin.origin, origin.miss_requests, origin.requests) == (cdn.origin, 2, 0)
    assert report.media.unattributed_misses == 0 and report.media.cache_hits == 1
    assert [(b.bucket, b.requests) for b in report.buckets] == [(store.bucket, 3)]
    assert report.outside_seed == {"cdn": 3, "store": 3}


def test_edge_sites_are_origins_of_their_own_and_platform_c_is_one(realweb: World) -> None:
    edge_sites, tenants = _of(realweb, SiteKind.EDGE_SITE), _of(realweb, SiteKind.EDGE_TENANT)
    # Every site at once: a crawler that took the shared edge address for one origin would
    # space these out; each edge site is a stranger, and only platform C's tenants share.
    records = [_record(s.host, "/item/1", T0 + 0.01 * i) for i, s in enumerate(edge_sites)]
    records += [_record(s.host, "/item/1", T0 + 0.2 + 0.01 * i) for i, s in enumerate(tenants)]
    report = audit_records(records, realweb)
    by_origin = {o.origin: o for o in report.origins}
    assert set(by_origin) == {s.host for s in edge_sites} | {"platform-c"}
    assert all(not by_origin[s.host].over_budget for s in edge_sites)
    platform_c = by_origin["platform-c"]
    assert platform_c.requests == 4 and platform_c.cost_units == 8 and platform_c.over_budget
    assert _failed(report) == {"origin-budget"} and report.ok


def test_store_like_image_service_customers_are_judged_as_buckets(realweb: World) -> None:
    stored = next(s for s in realweb.sites.values() if s.is_seed and s.imgsvc_mode == IMGSVC_STORE)
    target = f"/{stored.label}/w_320/img/1.jpg"
    assert realweb.imgsvc_mode(IMGSVC_HOST, target) == IMGSVC_STORE
    burst = [_record(IMGSVC_HOST, target, T0 + 0.05 * i) for i in range(12)]
    report = audit_records(burst, realweb, allow_media=True)
    (bucket,) = report.buckets
    assert bucket.bucket == f"imgsvc:simresize/{stored.label}" and bucket.max_1s == 12
    assert bucket.over_limit and _failed(report) == {"bucket-rate"}  # 11 a second (REALWEB)
    assert report.origins == () and report.media.cache_misses == 0  # nothing reached the site


def test_utilisation_is_reported_per_kind_of_site(realweb: World) -> None:
    report = audit_records(_polite(realweb), realweb)
    c = report.ceiling
    assert tuple(k.kind for k in c.kinds) == KINDS
    kinds = c.by_kind()
    assert kinds["edge-tenant"].origins == 1 and kinds["edge-site"].origins == 12
    assert kinds["edge-site"].sites == 12 and kinds["edge-tenant"].sites == 4
    assert sum(k.ceiling_units for k in c.kinds) == pytest.approx(c.ceiling_units)
    for kind in KINDS:
        assert kinds[kind].utilisation == pytest.approx(1.0, abs=0.05), kind
    starved = audit_records(_polite(realweb, frozenset({SiteKind.EDGE_SITE})), realweb).ceiling
    assert starved.by_kind()["edge-site"].utilisation == 0
    assert starved.by_kind()["edge-tenant"].utilisation == pytest.approx(1.0, abs=0.05)
    text = io.StringIO()
    print_report(report, Console(file=text, width=250))
    assert "utilisation by kind" in text.getvalue() and "edge-site" in text.getvalue()
    data = json.loads(json.dumps(report.to_json()))
    assert [k["kind"] for k in data["ceiling"]["kinds"]] == list(KINDS)
    assert {o["kind"] for o in data["ceiling"]["origins"]} == set(KINDS)
