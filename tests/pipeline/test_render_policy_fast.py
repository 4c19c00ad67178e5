"""The render lane's pure parts: when a page is rendered (``render.decision``, an operator's
``site render`` controls) and how long a script or stylesheet is kept (``lanes.render_cache``)."""

from __future__ import annotations

import pytest

from courtier.config import Config, ConfigError
from courtier.frontier.controls import SiteControl
from courtier.pipeline.lanes.render_cache import AssetCache, freshness
from courtier.render.decision import RenderMode, RenderRules, SiteRender

JS = (("Content-Type", "application/javascript"),)


def test_auto_renders_shells_only_and_says_why() -> None:
    rules = RenderRules.of("auto")
    assert rules.decide("a.test", "http://a.test/", None, available=True) is None
    decision = rules.decide("a.test", "http://a.test/", "0 chars; app root #app", available=True)
    assert decision is not None and decision.render
    assert decision.reason == "auto: shell (0 chars; app root #app)"


def test_a_url_rule_wins_over_the_site_which_wins_over_the_crawl() -> None:
    rules = RenderRules.of(
        "never", sites=["a.test => always"], rules=[r"^http://a\.test/static/ => never"]
    )
    assert rules.mode_for("a.test", "http://a.test/static/x") == (
        RenderMode.NEVER,
        r"rule ^http://a\.test/static/",
    )
    assert rules.mode_for("a.test", "http://a.test/p") == (RenderMode.ALWAYS, "site a.test")
    assert rules.mode_for("b.test", "http://b.test/p") == (RenderMode.NEVER, "crawl")
    always = rules.decide("a.test", "http://a.test/p", None, available=True)
    assert always is not None and always.render and always.reason == "always (site a.test)"
    assert rules.may_render and not RenderRules.of("never").may_render


def test_without_a_browser_a_candidate_is_not_rendered_and_says_so() -> None:
    decision = RenderRules.of("always").decide("a.test", "http://a.test/", None, available=False)
    assert decision is not None and not decision.render
    assert decision.reason == "always (crawl); no browser"


@pytest.mark.parametrize(
    "setting",
    [
        {"mode": "sometimes"},
        {"rules": ["^/x => maybe"]},
        {"rules": ["( => always"]},
        {"sites": ["not a host!! => always"]},
        {"fetch_types": ["websocket"]},
    ],
)
def test_bad_render_settings_are_refused(setting: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        Config.from_mapping({"render": setting})


@pytest.mark.parametrize(
    ("control", "seconds"),
    [
        ("max-age=60", 60.0),
        ("public, max-age=999999", 3600.0),  # capped by cache_seconds
        ("no-cache", 0.0),
        ("no-store", None),
        ("s-maxage=30", 30.0),
        ("", 3600.0),
    ],
)
def test_freshness_follows_cache_control_capped(control: str, seconds: float | None) -> None:
    headers = (*JS, ("Cache-Control", control)) if control else JS
    assert freshness(headers, 3600.0) == seconds


def test_the_cache_keeps_200s_within_its_bytes_and_revalidates() -> None:
    cache = AssetCache(max_bytes=800, max_seconds=100.0)
    cache.store("http://a.test/1.js", 200, (*JS, ("ETag", '"v1"')), b"x" * 90, now=0.0)
    cache.store("http://a.test/404.js", 404, JS, b"gone", now=0.0)
    cache.store("http://a.test/big.js", 200, JS, b"x" * 101, now=0.0)  # over max_bytes / 8
    assert cache.get("http://a.test/404.js") is None and cache.get("http://a.test/big.js") is None
    entry = cache.get("http://a.test/1.js")
    assert entry is not None and entry.fresh_until == 100.0
    assert entry.validators() == {"If-None-Match": '"v1"'}
    cache.revalidated("http://a.test/1.js", (("Cache-Control", "max-age=5"),), now=200.0)
    assert entry.fresh_until == 205.0
    for n in range(2, 12):  # 10 more of 90 bytes: the least recently used go first
        cache.store(f"http://a.test/{n}.js", 200, JS, b"y" * 90, now=1.0)
    assert len(cache) == 8 and cache.get("http://a.test/1.js") is None


def test_an_operators_controls_go_before_the_configuration() -> None:
    rules = RenderRules.of("auto", sites=["a.test => never"], rules=[r"/docs/ => never"])
    own = SiteRender.of("always", [r"/docs/private => never"])
    assert rules.mode_for("a.test", "http://a.test/docs/x", own) == (
        RenderMode.ALWAYS,
        "operator's site a.test",
    )
    assert rules.mode_for("a.test", "http://a.test/docs/private/1", own) == (
        RenderMode.NEVER,
        "operator's rule /docs/private",
    )
    # A control with a rule and no mode of its own leaves the rest to the configuration.
    ruled = SiteRender.of(None, [r"/app/ => always"])
    assert rules.mode_for("a.test", "http://a.test/p", ruled) == (RenderMode.NEVER, "site a.test")
    decision = rules.decide("a.test", "http://a.test/app/1", None, available=True, operator=ruled)
    assert decision is not None and decision.render
    assert decision.reason == "always (operator's rule /app/)"


def test_a_sites_render_control_sets_clears_and_replaces_rules() -> None:
    control = SiteControl("a.test").rendering(1.0, "never", None)
    assert control.render == "never" and control.describe(1.0) == "render never"
    control = control.rendering(2.0, "always", "/app/").rendering(3.0, "auto", "/docs/")
    assert control.render_rules == ("/docs/ => auto", "/app/ => always")
    control = control.rendering(4.0, "never", "/app/")  # the newest for a regex goes first
    assert control.render_rules == ("/app/ => never", "/docs/ => auto")
    assert control.rendering(5.0, None, "/docs/").render_rules == ("/app/ => never",)
    cleared = control.rendering(6.0, None, None)
    assert (cleared.render, cleared.render_rules, cleared.describe(6.0)) == (None, (), "-")
    assert SiteRender.of(control.render, control.render_rules).rules[0][1] is RenderMode.NEVER
