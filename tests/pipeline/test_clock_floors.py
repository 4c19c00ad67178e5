"""What a run leaves on its limit clocks for the next run: media keys included, capped."""

from __future__ import annotations

import asyncio
from pathlib import Path

from courtier.config import Config
from courtier.net.guard import Guard
from courtier.net.policy import AddressPolicy
from courtier.net.resolve import StaticResolver
from courtier.pipeline.crawler import Crawler


def _crawler(tmp_path: Path) -> Crawler:
    policy = AddressPolicy(allow=["127.0.0.1/32"])
    return Crawler(
        Config(),
        store_path=tmp_path / "frontier.sqlite3",
        out_dir=tmp_path,
        guard=Guard(policy, StaticResolver({})),
        address_allowed=lambda _a: True,
        seeds=[],
    )


async def test_media_keys_keep_at_most_one_image_of_their_clock(tmp_path: Path) -> None:
    crawler = _crawler(tmp_path)
    loop = asyncio.get_running_loop()
    crawler._loop = loop
    now = loop.time()
    crawler._tats.update(
        {
            "cdn-miss:cdn.simcdn.test/shop.test": now + 0.3,  # within one image: kept
            "bucket:simstore/media-a": now + 60.0,  # booked far ahead: capped
            "origin:platform-a": now + 30.0,  # capped at one index page (4 units at 2/s)
            "imgsvc:img.simresize.test/acme": now - 5.0,  # in the past: nothing to keep
            "site:s3.simstore.test": now + 0.5,  # a media host's robots.txt spacing
        }
    )
    offset = crawler._wall_offset()
    floors = {key: wall - offset for key, wall in crawler._clock_floors().items()}
    assert abs(floors["cdn-miss:cdn.simcdn.test/shop.test"] - (now + 0.3)) < 0.01
    assert now < floors["bucket:simstore/media-a"] <= now + 1.0 / 50 + 0.01
    assert abs(floors["origin:platform-a"] - (now + 2.0)) < 0.01
    assert "imgsvc:img.simresize.test/acme" not in floors
    assert abs(floors["site:s3.simstore.test"] - (now + 0.5)) < 0.01
