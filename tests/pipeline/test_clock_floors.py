"""What a run leaves on its limit clocks for the next run: media keys included, capped."""

from __future__ import annotations

from courtier.config import Config
from courtier.pipeline.scheduling.clocks import KeyClocks
from courtier.politeness.keys import LimitKey
from courtier.politeness.limiter import MemoryLimiter

NOW = 1_000_000.0


async def test_media_keys_keep_at_most_one_image_of_their_clock() -> None:
    limiter = MemoryLimiter(clock=lambda: NOW)
    clocks = KeyClocks(limiter, Config().limits.policy())
    await clocks.raise_floors(
        {
            "cdn-miss:cdn.simcdn.test/shop.test": NOW + 0.3,  # within one image: kept
            "bucket:simstore/media-a": NOW + 60.0,  # booked far ahead: capped
            "origin:platform-a": NOW + 30.0,  # capped at one index page (4 units at 2/s)
            "imgsvc:img.simresize.test/acme": NOW - 5.0,  # in the past: nothing to keep
            "site:s3.simstore.test": NOW + 0.5,  # a media host's robots.txt spacing
            "site:seed.test": NOW + 9.0,  # a seed site: its lane gives its own floor
        }
    )
    floors = await clocks.floors(
        NOW,
        dearest=4.0,
        image=1.0,
        origin_interval=lambda _origin: 0.5,
        media_spacing=lambda key: 1.0 if key.startswith("site:") else 0.0,
        owned_sites={"seed.test"},
    )
    assert abs(floors["cdn-miss:cdn.simcdn.test/shop.test"] - (NOW + 0.3)) < 0.01
    assert NOW < floors["bucket:simstore/media-a"] <= NOW + 1.0 / 50 + 0.01
    assert abs(floors["origin:platform-a"] - (NOW + 2.0)) < 0.01
    assert "imgsvc:img.simresize.test/acme" not in floors
    assert abs(floors["site:s3.simstore.test"] - (NOW + 0.5)) < 0.01
    assert "site:seed.test" not in floors


async def test_a_floor_is_hard_on_a_key_with_burst_tolerance() -> None:
    limiter = MemoryLimiter(clock=lambda: NOW)
    config = Config()
    clocks = KeyClocks(limiter, config.limits.policy())
    await clocks.raise_floors({"bucket:simstore/media-a": NOW + 5.0})
    limit = config.limits.policy().limits([LimitKey.parse("bucket:simstore/media-a")])
    slot = await clocks.book(limit, 1.0, max_lead=60.0)
    assert slot.start >= NOW + 5.0  # a Retry-After on a bucket is not shortened by its burst


async def test_a_site_leaving_a_crowded_origin_carries_only_its_own_share_of_the_clock() -> None:
    """Strangers split off a CDN edge's shared key: the new key is raised to the old one's
    clock, but no further than the moving site's own last request can demand (the cap)."""
    limiter = MemoryLimiter(clock=lambda: NOW)
    clocks = KeyClocks(limiter, Config().limits.policy())
    await clocks.raise_floors({"origin:cname:edge.test": NOW + 9.0})  # 200 sites' bookings
    await clocks.carry("origin:cname:edge.test", "origin:site:a.test", cap=NOW + 2.0)
    await clocks.carry("origin:cname:edge.test", "origin:site:b.test")
    tats = await limiter.tats(["origin:site:a.test", "origin:site:b.test"])
    assert tats["origin:site:a.test"] == NOW + 2.0
    assert tats["origin:site:b.test"] == NOW + 9.0  # uncapped: the whole clock, as before
    await clocks.carry("origin:cname:edge.test", "origin:site:c.test", cap=NOW + 20.0)
    assert (await limiter.tats(["origin:site:c.test"]))["origin:site:c.test"] == NOW + 9.0
