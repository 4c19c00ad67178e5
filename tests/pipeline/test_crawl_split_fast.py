"""The crawl's discovery-versus-refresh split, inside the engine on fake time: one target for
the whole crawl from its backlog's drain time, and a realised share that follows it over a
thousand decisions as the backlog drains."""

from __future__ import annotations

from pathlib import Path

from lane_harness import Lanes, allow_all

from courtier.config import load
from courtier.frontier.base import LeasedUrl, UrlLane

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
