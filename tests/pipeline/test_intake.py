"""One intake for every URL: page links, images for the media lanes and the redirects of
pages, media and robots.txt. A URL holding a placeholder, or a redirect to a Location that
carries a secret, is never fetched, whichever door it came to. Fake time, scripted web."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from lane_harness import Lanes, allow_all

from courtier.config import load
from courtier.pipeline.feed.intake import MAX_REDIRECTS, UrlIntake
from key_samples import B62, rep

FAST = ["limits.origin.rate=1000", "limits.cdn.rate=1000", "limits.cdn-miss.rate=1000"]
GOOGLE_KEY = "AIza" + rep(B62, 35)
MEDIA = "http://cdn.simcdn.test/shop.test/img"


@pytest.fixture
async def lanes(tmp_path: Path):
    made: list[Lanes] = []

    def make(script=allow_all) -> Lanes:
        harness = Lanes(load(None, FAST), tmp_path, script)
        harness.start()
        made.append(harness)
        return harness

    yield make
    for harness in made:
        await harness.close()


def test_a_url_holding_a_placeholder_is_refused() -> None:
    refused: Counter[str] = Counter()
    intake = UrlIntake(refused)
    assert intake.admits("http://a.test/p?q=1")
    assert not intake.admits("http://a.test/p?key=%5BREDACTED:google-api-key%5D")
    assert not intake.admits("http://a.test/[REDACTED:email]/p")
    assert refused == Counter({"secret-in-url": 2})


def test_a_redirect_keeps_its_budget_and_never_follows_a_secret() -> None:
    refused: Counter[str] = Counter()
    intake = UrlIntake(refused)
    target = intake.redirect("/next", "http://a.test/p", 0)
    assert target is not None and target.fetch_url == "http://a.test/next"
    assert intake.redirect("/next", "http://a.test/p", MAX_REDIRECTS) is None
    assert intake.redirect("/next", "http://a.test/p", 2, budget=2) is None
    assert intake.redirect(f"http://b.test/?key={GOOGLE_KEY}", "http://a.test/p", 0) is None
    assert intake.redirect("http://[bad", "http://a.test/p", 0) is None
    assert refused == Counter({"redirect-limit": 2, "secret-in-url": 1, "invalid-location": 1})


async def test_a_media_image_holding_a_placeholder_is_never_fetched(lanes) -> None:
    h = lanes()
    h.origins["shop.test"] = "platform-a"
    assert h.media.offer(f"{MEDIA}/%5BREDACTED:email%5D.jpg", "shop.test")
    h.media.offer(f"{MEDIA}/fine.jpg", "shop.test")
    await h.timer.advance(5.0)
    fetched = [url for _t, url in h.fetcher.started if url.endswith(".jpg")]
    assert fetched == [f"{MEDIA}/fine.jpg"]  # the media lane ran: only the placeholder stayed
    assert h.stats.refused["secret-in-url"] == 1


async def test_a_pages_image_that_carried_a_secret_is_never_fetched(lanes) -> None:
    """The page's key is redacted before its links are read: the image URL then holds a
    placeholder, and neither the media lanes nor the frontier may take it."""

    def script(url: str):
        if url.endswith("/robots.txt"):
            return 404, [], b""
        if url.endswith(".jpg"):
            return 200, [("Content-Type", "image/jpeg")], b"\xff\xd8image"
        body = (
            f'<html><title>t</title><img src="{MEDIA}/map.jpg?key={GOOGLE_KEY}">'
            f'<img src="{MEDIA}/plain.jpg"></html>'
        )
        return 200, [("Content-Type", "text/html")], body.encode()

    h = lanes(script)
    h.discovery.media = h.media.offer  # images on media hosts go to the media lanes
    site = h.site("shop.test", ["/"], origin="platform-a")
    h.origins["shop.test"] = "platform-a"
    h.pages.arm(site)
    await h.timer.advance(10.0)
    fetched = [url for _t, url in h.fetcher.started if ".jpg" in url]
    assert fetched == [f"{MEDIA}/plain.jpg"]
    assert GOOGLE_KEY not in str(h.fetcher.started)
    assert h.stats.refused["secret-in-url"] == 1


async def test_a_media_redirect_to_a_secret_is_never_followed(lanes) -> None:
    def script(url: str):
        if url.endswith("/robots.txt"):
            return 404, [], b""
        if url.endswith("/moved.jpg"):
            return 302, [("Location", f"/img/real.jpg?key={GOOGLE_KEY}")], b""
        if url.endswith("/hop.jpg"):
            return 302, [("Location", "/shop.test/img/real.jpg")], b""
        return 200, [("Content-Type", "image/jpeg")], b"\xff\xd8image"

    h = lanes(script)
    h.origins["shop.test"] = "platform-a"
    h.media.offer(f"{MEDIA}/moved.jpg", "shop.test")
    h.media.offer(f"{MEDIA}/hop.jpg", "shop.test")
    await h.timer.advance(10.0)
    fetched = [url for _t, url in h.fetcher.started if ".jpg" in url]
    assert fetched == [f"{MEDIA}/moved.jpg", f"{MEDIA}/hop.jpg", f"{MEDIA}/real.jpg"]
    assert h.stats.refused["secret-in-url"] == 1


async def test_a_robots_txt_redirect_to_a_secret_is_never_followed(lanes) -> None:
    def script(url: str):
        if url == "http://a.test/robots.txt":
            return 301, [("Location", f"http://b.test/robots.txt?key={GOOGLE_KEY}")], b""
        return 200, [("Content-Type", "text/html")], b"<html><title>t</title></html>"

    h = lanes(script)
    site = h.site("a.test", ["/p"])
    h.pages.arm(site)
    await h.timer.advance(10.0)
    assert [url for _t, url in h.fetcher.started][:1] == ["http://a.test/robots.txt"]
    assert not any("b.test" in url for _t, url in h.fetcher.started)
    assert h.stats.refused["secret-in-url"] == 1
