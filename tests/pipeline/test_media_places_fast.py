"""Media found where it lives: image hosts placed by their DNS (a platform's own media host,
vanity names CNAMEd to a CDN, an image service or a bucket, real providers' names among them)
are fetched on the right keys; others stay horizon."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from test_media_lanes import FAST, Harness

from courtier.config import load
from courtier.pipeline.lanes import media_places
from courtier.pipeline.lanes.media_places import HostFacts, MediaPlaces, Placement, place
from courtier.politeness.keys import KeyRules, MediaSource

RULES = KeyRules()
SEED_ORIGINS = {"platform-a", "site:shop.test"}


def test_a_vanity_name_cnamed_to_a_bucket_is_keyed_on_the_bucket() -> None:
    facts = HostFacts(("media-shop.s3.simstore.test",), "site:images.shop.test")
    placement = place("images.shop.test", facts, SEED_ORIGINS, RULES)
    assert placement is not None and placement.source is MediaSource.STORE
    assert [str(k) for k in placement.keys] == ["bucket:simstore/media-shop"]
    aws = place("img.agent.test", HostFacts(("img.agent.test.s3.amazonaws.com",), None), (), RULES)
    assert aws is not None and [str(k) for k in aws.keys] == ["bucket:aws-s3/img.agent.test"]


def test_a_vanity_name_cnamed_to_a_cdn_is_that_cdns_customer() -> None:
    facts = HostFacts(("d123abc.cloudfront.net",), "site:images.agent.test")
    placement = place("images.agent.test", facts, SEED_ORIGINS, RULES)
    assert placement is not None and placement.source is MediaSource.CDN
    keys = placement.keys_for(miss_expected=True, customer_origin="site:agent.test")
    assert [str(k) for k in keys] == [
        "cdn:cloudfront.net",
        "cdn-miss:images.agent.test",
        "origin:site:agent.test",
    ]
    assert [str(k) for k in placement.keys_for(miss_expected=False, customer_origin="x")] == [
        "cdn:cloudfront.net"
    ]


def test_a_host_on_a_seed_origins_servers_is_same_origin_media() -> None:
    placement = place("media.platform-a.test", HostFacts((), "platform-a"), SEED_ORIGINS, RULES)
    assert placement is not None and placement.source is MediaSource.SAME_ORIGIN
    assert [str(k) for k in placement.keys] == ["site:media.platform-a.test", "origin:platform-a"]


def test_an_ordinary_host_is_not_media() -> None:
    own = HostFacts((), "site:www.other.test")
    assert place("www.other.test", own, SEED_ORIGINS, RULES) is None
    lb = HostFacts(("lb.hosting.test",), "cname:lb")
    assert place("x.test", lb, SEED_ORIGINS, RULES) is None


@pytest.fixture
async def harness(tmp_path: Path):
    made = Harness(load(None, FAST), tmp_path)
    made.origins.update({"shop.test": "platform-a", "agent.test": "site:agent.test"})
    made.start()
    yield made
    await made.close()


def with_places(harness: Harness, table: dict[str, HostFacts]) -> list[list[str]]:
    asked: list[list[str]] = []

    async def look_up(hosts: list[str]) -> dict[str, HostFacts]:
        asked.append(hosts)
        return {h: table[h] for h in hosts if h in table}

    media = harness.media
    media.places = MediaPlaces(
        look_up,
        lambda: {"platform-a", "site:agent.test"},
        RULES,
        lambda url, referrer, placement: media.offer(url, referrer, placement=placement),
        harness.tasks,
        harness.timer,
    )
    return asked


async def test_images_of_hosts_placed_by_dns_are_fetched_on_their_keys(harness) -> None:
    asked = with_places(
        harness,
        {
            "media.platform-a.test": HostFacts((), "platform-a"),
            "images.agent.test": HostFacts(("d9.cloudfront.net",), "site:images.agent.test"),
            "pics.agent.test": HostFacts(("media-agent.s3.simstore.test",), None),
            "www.elsewhere.test": HostFacts((), "site:www.elsewhere.test"),
        },
    )
    media = harness.media
    first = [
        ("http://media.platform-a.test/shop/img/1.jpg", "shop.test"),
        ("http://media.platform-a.test/shop/img/2.jpg", "shop.test"),
        ("http://images.agent.test/img/1.jpg", "agent.test"),
        ("http://pics.agent.test/img/1.jpg", "agent.test"),
        ("http://www.elsewhere.test/logo.png", "agent.test"),
    ]
    for url, referrer in first:
        assert not media.offer(url, referrer)  # unknown yet: horizon, and looked up
    await harness.timer.advance(2.0)
    assert len(asked) == 1  # one lookup for every host found together
    assert set(asked[0]) == {
        "media.platform-a.test",
        "images.agent.test",
        "pics.agent.test",
        "www.elsewhere.test",
    }
    # Known now: a later image of a placed host is media at once; an ordinary host is not.
    assert media.offer("http://media.platform-a.test/shop/img/3.jpg", "shop.test")
    assert not media.offer("http://www.elsewhere.test/logo2.png", "agent.test")
    await harness.timer.advance(10.0)
    keys = {d["url"]: d["keys"] for d in harness.documents}
    assert keys["http://media.platform-a.test/shop/img/1.jpg"] == [
        "site:media.platform-a.test",
        "origin:platform-a",
    ]
    assert "http://media.platform-a.test/shop/img/3.jpg" in keys
    assert keys["http://images.agent.test/img/1.jpg"] == [
        "cdn:cloudfront.net",
        "cdn-miss:images.agent.test",
        "origin:site:agent.test",
    ]
    assert keys["http://pics.agent.test/img/1.jpg"] == ["bucket:simstore/media-agent"]
    # A customer's CDN hostname: its robots.txt, missed by the cache, reaches the customer.
    robots = {e.url: list(e.context.keys) for e in harness.events if e.url.endswith("robots.txt")}
    assert robots["http://images.agent.test/robots.txt"] == [
        "site:images.agent.test",
        "cdn-miss:images.agent.test",
        "origin:site:agent.test",
    ]
    assert robots["http://pics.agent.test/robots.txt"] == ["site:pics.agent.test"]
    # A platform's own media host: its robots.txt goes to the platform's servers too.
    assert robots["http://media.platform-a.test/robots.txt"] == [
        "site:media.platform-a.test",
        "origin:platform-a",
    ]
    assert not any("elsewhere" in url for url in keys)
    same_origin = [e for e in harness.events if "media.platform-a.test/shop" in e.url]
    assert all(e.context.cost == 1.0 for e in same_origin)  # the image cost, on the origin


async def test_same_origin_media_is_spaced_on_its_host_and_charged_to_the_origin(harness) -> None:
    with_places(harness, {"media.platform-a.test": HostFacts((), "platform-a")})
    media = harness.media
    media.offer("http://media.platform-a.test/shop/img/0.jpg", "shop.test")
    await harness.timer.advance(1.0)
    for n in range(1, 5):
        assert media.offer(f"http://media.platform-a.test/shop/img/{n}.jpg", "shop.test")
    await harness.timer.advance(20.0)
    starts = sorted(t for t, u in harness.media_fetches() if "media.platform-a" in u)
    assert len(starts) == 5
    assert all(b - a >= 1.0 - 1e-9 for a, b in itertools.pairwise(starts))
    assert "origin:platform-a" in harness.tats


async def test_a_placement_never_overrides_a_host_that_is_media_by_name(harness) -> None:
    with_places(harness, {})
    placement = Placement(MediaSource.SAME_ORIGIN, ())
    assert harness.media.offer(
        "http://cdn.simcdn.test/shop.test/img/1.jpg", "shop.test", placement=placement
    )
    await harness.timer.advance(5.0)
    (doc,) = harness.documents
    assert doc["keys"][0] == "cdn:cdn.simcdn.test"


async def test_image_hosts_looked_up_are_bounded(harness, monkeypatch) -> None:
    monkeypatch.setattr(media_places, "MAX_HOSTS", 3)
    asked = with_places(harness, {})
    for n in range(6):
        harness.media.offer(f"http://img{n}.elsewhere.test/a.png", "shop.test")
    await harness.timer.advance(2.0)
    assert sorted(asked[0]) == [f"img{n}.elsewhere.test" for n in range(3)]


async def test_vanity_names_of_real_providers_are_fetched_as_their_customers(harness) -> None:
    """The held-out web's shapes: vanity names CNAMEd to Contentful, Cloudinary, imgix, an
    Azure storage account and GCS, with the chains real DNS gives them."""
    with_places(
        harness,
        {
            "images.agent.test": HostFacts(
                ("images.ctfassets.net", "images.ctfassets.net.cdn.cloudflare.net"), None
            ),
            "pics.agent.test": HostFacts(("res.cloudinary.com",), None),
            "img.agent.test": HostFacts(("agent.imgix.net", "imgix.map.fastly.net"), None),
            "blobs.agent.test": HostFacts(
                ("agentmedia.blob.core.windows.net", "blob.ams07prdstr02a.store.core.windows.net"),
                None,
            ),
            "static.agent.test": HostFacts(("c.storage.googleapis.com",), None),
        },
    )
    media = harness.media
    images = [
        "http://images.agent.test/7xq2/4Fz/9a1c/flat.jpg",
        "http://pics.agent.test/image/upload/w_320/flat.jpg",
        "http://img.agent.test/flat.jpg?w=320",
        "http://blobs.agent.test/listings/flat.jpg",
        "http://blobs.agent.test/agents/jane.jpg",
        "http://static.agent.test/img/flat.jpg",
    ]
    for url in images:
        assert not media.offer(url, "agent.test")  # looked up first
    await harness.timer.advance(2.0)
    assert media.offer("http://blobs.agent.test/listings/flat2.jpg", "agent.test")
    await harness.timer.advance(10.0)
    keys = {d["url"]: d["keys"] for d in harness.documents}
    assert set(images) <= set(keys), sorted(keys)
    assert keys[images[0]] == [
        "cdn:images.ctfassets.net",
        "cdn-miss:images.agent.test",
        "origin:site:agent.test",
    ]
    assert keys[images[1]] == [
        "imgsvc:res.cloudinary.com/pics.agent.test",
        "origin:site:agent.test",
    ]
    assert keys[images[2]] == ["imgsvc:imgix.net/agent.imgix.net", "origin:site:agent.test"]
    assert keys[images[3]] == ["bucket:azure-blob/agentmedia/listings"]
    assert keys["http://blobs.agent.test/listings/flat2.jpg"] == [
        "bucket:azure-blob/agentmedia/listings"
    ]
    assert keys[images[4]] == ["bucket:azure-blob/agentmedia/agents"]
    assert keys[images[5]] == ["bucket:gcs/static.agent.test"]
    sources = {d["url"]: d["source"] for d in harness.documents}
    assert [sources[u] for u in images] == ["cdn", "imgsvc", "imgsvc", "store", "store", "store"]
