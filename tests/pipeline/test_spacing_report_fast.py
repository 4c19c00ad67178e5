"""The spacing report: achieved start-to-start spacing against the allowed one, per key type,
judged only where the work waited for the key."""

from __future__ import annotations

import json
from pathlib import Path

from lane_harness import Lanes, allow_all

from courtier.config import load
from courtier.observe.probe import stats_copy
from courtier.pipeline.spacing_report import SpacingReport, describe
from courtier.pipeline.stats import CrawlStats
from courtier.politeness.gcra import KeyParams, Limit

SITE = Limit("site:a.test", KeyParams(1.02, 0.0, 0.25, weighted=False))
ORIGIN = Limit("origin:site:a.test", KeyParams(0.5, 0.0, 0.25, weighted=True))


def test_starts_at_the_allowance_report_one() -> None:
    report = SpacingReport()
    for n in range(5):
        start = 1.02 * n
        report.started("a", (SITE, ORIGIN), 2.0, booked_at=start - 0.01, now=start)
    site = report.as_dict()["site"]
    assert site["starts"] == 4 and site["median_ratio"] == 1.0
    # The origin allowed 1.0 s, the site 1.02: the site set each start, the origin is not
    # judged short for it.
    assert "origin" not in report.as_dict()


def test_a_start_is_judged_on_the_key_that_should_have_set_it() -> None:
    """A site's page after its own image on the origin: the origin bound it, not the site."""
    report = SpacingReport()
    report.started("a", (SITE, ORIGIN), 2.0, booked_at=0.0, now=0.0)  # a page: origin to 1.0
    report.started("a", (SITE, ORIGIN), 1.0, booked_at=1.0, now=1.02)  # an image: origin to 1.52
    report.started("a", (SITE, ORIGIN), 2.0, booked_at=2.04, now=2.04)
    rows = report.as_dict()
    assert rows["site"]["starts"] == 2 and rows["site"]["median_ratio"] == 1.0
    assert "origin" not in rows


def test_keys_with_burst_tolerance_are_not_judged() -> None:
    bucket = Limit("bucket:s/b", KeyParams(0.02, 5.0, 0.25, weighted=False))
    report = SpacingReport()
    for n in range(5):
        report.started("a", (bucket,), 1.0, booked_at=0.0, now=0.001 * n)
    assert report.as_dict() == {}


def test_work_that_waited_a_whole_extra_interval_shows_twice_the_allowance() -> None:
    """The shape a crawl must never hide: booked in time, started one interval late."""
    report = SpacingReport()
    for n in range(5):
        previous = 2.04 * (n - 1)
        report.started("a", (SITE, ORIGIN), 2.0, booked_at=previous + 1.02, now=2.04 * n)
    rows = report.as_dict()
    assert rows["site"]["median_ratio"] == 2.0
    assert rows["site"]["mean_gap_s"] == 2.04 and rows["site"]["mean_allowed_s"] == 1.02
    assert "site x2.00" in describe(rows)


def test_a_lane_with_no_work_waiting_is_not_a_shortfall() -> None:
    report = SpacingReport()
    report.started("a", (SITE,), 2.0, booked_at=0.0, now=0.0)
    report.started("a", (SITE,), 2.0, booked_at=5.0, now=5.0)  # its next URL came late
    assert report.as_dict() == {}
    assert describe(report.as_dict()) == "no key was waited on"


def test_the_allowance_follows_the_cost_and_interval_each_start_was_booked_at() -> None:
    report = SpacingReport()
    slowed = Limit("origin:o", KeyParams(1.0, 0.0, 0.25, weighted=True))  # latency: half rate
    report.started("a", (Limit("origin:o", ORIGIN.params),), 4.0, booked_at=0.0, now=0.0)  # 2 s
    report.started("a", (slowed,), 1.0, booked_at=1.0, now=2.0)
    report.started("a", (slowed,), 1.0, booked_at=2.5, now=3.0)  # an image at the slowed rate: 1 s
    row = report.as_dict()["origin"]
    assert row["starts"] == 2 and row["median_ratio"] == 1.0


async def test_the_scheduler_feeds_the_report_with_what_it_started(tmp_path: Path) -> None:
    harness = Lanes(load(None, ["limits.origin.rate=1000"]), tmp_path, allow_all)
    harness.start()
    try:
        site = harness.site("a.test", [f"/p{n}" for n in range(6)])
        harness.pages.arm(site)
        await harness.timer.advance(10.0)
        row = harness.stats.spacing.as_dict()["site"]
        assert row["starts"] >= 5
        assert 0.99 <= row["median_ratio"] <= 1.05  # each page as soon as the site allows
        assert "spacing" in harness.stats.as_dict()
    finally:
        await harness.close()


def test_stats_json_carries_the_report_as_plain_values() -> None:
    stats = CrawlStats()
    for n in range(3):
        stats.spacing.started("a", (SITE,), 2.0, booked_at=1.02 * n, now=1.02 * n)
    copied = json.loads(json.dumps(stats_copy(stats)))
    assert copied["spacing"]["site"]["starts"] == 2


def test_two_hosts_on_one_site_clock_show_twice_their_allowance() -> None:
    """www.X and X booking on one site key take turns: the key is used at its allowance, but
    each host, as its server sees it, gets half of it."""
    report = SpacingReport()
    for n in range(8):
        lane = "www.a.test" if n % 2 else "a.test"
        report.started(lane, (SITE,), 2.0, booked_at=1.02 * (n - 1), now=1.02 * n)
    row = report.as_dict()["site"]
    assert row["median_ratio"] == 2.0 and row["starts"] == 6


def test_tenants_queued_on_their_platforms_origin_are_judged_on_the_origin() -> None:
    platform = Limit("origin:platform", KeyParams(0.5, 0.0, 0.25, weighted=True))
    report = SpacingReport()
    for n in range(12):  # six tenants, a detail page each in turn, back to back on the origin
        site = Limit(f"site:t{n % 6}.test", SITE.params)
        report.started(f"t{n % 6}.test", (site, platform), 2.0, booked_at=0.0, now=1.0 * n)
    rows = report.as_dict()
    assert rows["origin"]["median_ratio"] == 1.0 and rows["origin"]["starts"] == 11
    assert "site" not in rows  # a tenant waiting 6 s for its turn is not a slow site
