"""The audit of single-page apps: costs, path classes, the script host, probes, the ceiling."""

from __future__ import annotations

import pytest
from rich.console import Console
from simweb_helpers import SPA, request_record

from courtier.simweb import Behaviour, SiteKind, World, build_world
from courtier.simweb.audit import _RobotsJudge, audit_records, spa_path_class
from courtier.simweb.ceiling import WORK_KINDS, core_pages
from courtier.simweb.report import print_report
from courtier.simweb.world import THIRD_PARTY_SCRIPT_HOST


@pytest.fixture(scope="module")
def world() -> World:
    return build_world(SPA)


def test_spa_requests_are_counted_by_path_class_and_costed(world: World) -> None:
    spa, twin = world.spa_twin()
    spa_targets = [
        ("/robots.txt", 200),
        ("/", 200),
        ("/static/app.js", 200),
        ("/static/app.css", 200),
        ("/api/list/1", 200),
        ("/item/3", 200),
        ("/api/item/3", 200),
        ("/static/app.js", 304),
        ("/item/03", 200),
        ("/item/999", 200),
        ("/item/4", 503),
        ("/about", 200),
    ]
    records = [
        request_record(spa.host, target, 100.0 + 1.5 * i, status)
        for i, (target, status) in enumerate(spa_targets)
    ]
    records += [
        request_record(twin.host, target, 100.0 + 1.5 * i)
        for i, target in enumerate(("/robots.txt", "/", "/item/3", "/item/4", "/list/2"))
    ]
    report = audit_records(records, world)
    by_host = {f.host: f for f in report.spa}
    assert set(by_host) == {spa.host, twin.host}
    app = by_host[spa.host]
    assert (app.kind, app.render_hang, app.not_modified, app.items_reached) == ("spa", False, 1, 1)
    assert app.requests == {
        "api-item": 1,
        "api-list": 1,
        "home": 1,
        "item": 4,
        "other": 1,
        "robots": 1,
        "static": 3,
    }
    plain = by_host[twin.host]
    assert (plain.kind, plain.items_reached, plain.not_modified) == ("spa-twin", 2, 0)
    assert plain.requests == {"home": 1, "item": 2, "listing": 1, "robots": 1}
    origins = {o.origin: o for o in report.origins}
    # robots 1, home 4, static 1 × 3, API list 4, API item 2, item shells 2 × 4, other 2
    assert origins[spa.origin].cost_units == 1 + 4 + 3 + 4 + 2 + 8 + 2
    assert origins[twin.origin].cost_units == 1 + 4 + 2 + 2 + 4
    assert report.ok and report.to_json()["spa"][0]["host"] == min(spa.host, twin.host)
    console = Console(record=True, width=200)
    print_report(report, console)
    printed = console.export_text()
    assert "Single-page apps" in printed and "spa-twin" in printed and "3 (1)" in printed


def test_the_script_host_is_outside_the_seed_and_probes_reaching_the_canary_are_hits(
    world: World,
) -> None:
    spa, _ = world.spa_twin()
    records = [
        request_record(spa.host, "/", 100.0),
        request_record(THIRD_PARTY_SCRIPT_HOST, "/t.js", 100.2),
        request_record("127.101.0.66:8080", "/", 100.3, canary=True),
    ]
    report = audit_records(records, world)
    assert report.outside_seed == {"third-party": 1}
    assert report.canary_hits == 1
    outside = [v for v in report.violations if v.kind == "outside-seed"]
    assert [(v.host, v.target, v.detail) for v in outside] == [
        (THIRD_PARTY_SCRIPT_HOST, "/t.js", "third-party")
    ]
    assert not report.criterion("outside-seed").ok and not report.criterion("canary").ok
    assert not report.ok
    # Allowing media hosts does not allow the script host.
    assert not audit_records(records[:2], world, allow_media=True).criterion("outside-seed").ok


def test_spa_path_classes() -> None:
    assert [
        spa_path_class(p)
        for p in ("/robots.txt", "/", "/list/2", "/item/1", "/api/list/2", "/api/item/1")
    ] == ["robots", "home", "listing", "item", "api-list", "api-item"]
    assert [spa_path_class(p) for p in ("/static/app.js", "/api/x", "/about")] == [
        "static",
        "other",
        "other",
    ]


def test_spa_sites_are_work_and_a_hanging_one_has_only_its_home_to_find(world: World) -> None:
    assert {SiteKind.SPA, SiteKind.SPA_TWIN} <= WORK_KINDS
    allowed = _RobotsJudge().allowed
    spa, twin = world.spa_twin()
    hang = world.site_with(Behaviour.RENDER_HANG)
    assert core_pages(world, hang, allowed) == {"/robots.txt", "/"}
    for site in (spa, twin):
        pages = core_pages(world, site, allowed)
        assert {"/", "/list/1", f"/item/{world.params.n_items}"} <= pages
    records = [request_record(h, "/", 100.0 + i) for i, h in enumerate(world.seed_hosts)]
    kinds = audit_records(records, world).ceiling.by_kind()
    assert kinds["spa"].origins == 3 and kinds["spa-twin"].origins == 1
