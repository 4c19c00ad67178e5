"""The crawl's discovery-versus-refresh split, inside the engine on fake time: one target for
the whole crawl from its backlog's drain time, and a realised share that follows it over a
thousand decisions as the backlog drains."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from lane_harness import Lanes, allow_all

from courtier.config import load
from courtier.frontier.base import LeasedUrl, UrlLane
from courtier.frontier.split import Lane, SplitPolicy, target_discovery_share
from courtier.pipeline.lanes.crawl_split import CrawlSplit

SETTINGS = [
    "limits.origin.rate=100000",
    "limits.site.rate=20",
    "frontier.split_half_drain=5",  # the target moves as this small backlog drains
    "crawl.max_in_flight=1000",
]


async def test_the_realised_share_follows_the_crawls_target_as_the_backlog_drains(
    tmp_path: Path,
) -> None:
    h = Lanes(load(None, SETTINGS), tmp_path, allow_all)
    h.start()
    try:
        sites = []
        for n in range(20):
            paths = [f"/d{k}" for k in range(80)]
            site = h.site(f"s{n}.test", paths)
            for k in range(80):  # refresh work beside the discovery
                site.queue.append(
                    LeasedUrl(1000 + k, f"http://s{n}.test/r{k}", site.site, 1, 0, UrlLane.REFRESH)
                )
            site.backlog = 40
            sites.append(site)
        split = h.site_lanes.split
        targets: list[float] = []
        for site in sites:
            h.pages.arm(site)
        for _ in range(60):
            await h.timer.advance(0.1)
            targets.append(split.target)
            # The crawl's backlog is every site's, kept between two sums as discovery
            # drains it; the target is its drain time at the crawl's summed rate.
            assert split.backlog == sum(site.backlog for site in sites)
            drain_rate = split.rate or 1.0
            assert split.target in (
                pytest.approx(target_discovery_share(backlog, drain_rate, split.policy))
                for backlog in (split.backlog, split.backlog + 1)  # before its own decision
            ), (split.target, split.backlog, split.rate)
        assert split.rate > 20.0, split.rate  # every site's requests: one site's are 20/s at most
        shares = split.shares()
        assert shares["contested"] >= 1000, shares
        # The credit accumulator: within half a decision of the targets' sum; and the targets
        # the decisions were given are the crawl's (sampled here as time went by).
        assert abs(shares["realised"] - shares["mean_target"]) <= 0.02, shares
        sampled = sum(targets) / len(targets)
        assert abs(shares["realised"] - sampled) <= 0.03, (shares, sampled)
        # One target for the crawl, and it moved as the backlog drained.
        assert max(targets) - min(targets) >= 0.05, (min(targets), max(targets))
        assert split.backlog < 800
        assert h.stats.split["contested"] > 0  # published for the metrics and stats
    finally:
        await h.close()


@dataclass
class _Meter:
    per_second: float

    def rate(self, now: float) -> float:
        return self.per_second


@dataclass
class _Site:
    backlog: int
    emit: _Meter


def test_the_target_is_the_drain_time_of_every_sites_backlog_at_every_sites_rate() -> None:
    policy = SplitPolicy(floor=0.1, ceiling=0.9, half_share_drain_seconds=600.0)
    lanes = {
        "a.test": _Site(300, _Meter(0.5)),
        "b.test": _Site(0, _Meter(2.0)),
        "c.test": _Site(900, _Meter(0.5)),
    }
    shares: dict[str, float] = {}
    split = CrawlSplit(policy, lanes, shares)
    chosen = split.decide(0.0, discovery_ready=True, refresh_ready=True)
    # 1,200 URLs at 3 requests/s: 400 s to drain, 0.1 + 0.8 * 400 / (400 + 600).
    assert (split.backlog + (chosen is Lane.DISCOVERY), split.rate) == (1200, 3.0)
    assert split.target == pytest.approx(0.42)
    assert shares["target"] == 0.42  # published with the sum
    # Between two sums the target follows what the crawl's own decisions drained.
    for _ in range(99):
        split.decide(0.5, discovery_ready=True, refresh_ready=True)
    drained = split.state.discovery
    assert split.backlog == 1200 - drained
    # A second on, the lanes are summed again: their backlogs and rates as they are now.
    lanes["b.test"].backlog = 600
    lanes["a.test"].emit.per_second = 3.5
    split.decide(1.0, discovery_ready=True, refresh_ready=True)
    assert split.rate == 6.0
    drain = (300 + 600 + 900) / 6.0
    assert split.target == pytest.approx(0.1 + 0.8 * drain / (drain + 600.0))


def test_before_any_request_is_measured_the_crawl_is_taken_to_emit_one_a_second() -> None:
    policy = SplitPolicy(floor=0.1, ceiling=0.9, half_share_drain_seconds=600.0)
    lanes = {"a.test": _Site(500, _Meter(0.0)), "b.test": _Site(700, _Meter(0.0))}
    split = CrawlSplit(policy, lanes, {})
    split.decide(0.0, discovery_ready=True, refresh_ready=True)
    assert split.target == pytest.approx(0.1 + 0.8 * 1200 / (1200 + 600))
