import math

from hypothesis import given
from hypothesis import strategies as st

from courtier.config import Config
from courtier.politeness.robots import (
    CRAWL_DELAY_TOO_LONG,
    RobotsStatus,
    crawl_delay_verdict,
    rules_from_response,
)

KW = {"max_age": 86400.0, "retry_unreachable": 600.0, "max_bytes": 500 * 1024}
BODY = b"User-agent: *\nDisallow: /private\nCrawl-delay: 2.5\n\nUser-agent: otherbot\nDisallow: /\n"


def test_parsed_robots_disallow_rule_applies_to_our_token():
    rules = rules_from_response(200, BODY, 0.0, **KW)
    assert rules.status is RobotsStatus.PARSED
    assert not rules.allows("http://a.test/private/x", "courtier")
    assert rules.allows("http://a.test/public", "courtier")
    assert rules.crawl_delay("courtier") == 2.5


def test_4xx_robots_allows_everything():
    rules = rules_from_response(404, b"", 0.0, **KW)
    assert rules.status is RobotsStatus.ALLOW_ALL
    assert rules.allows("http://a.test/anything", "courtier")
    assert rules.crawl_delay("courtier") is None


def test_5xx_or_unreachable_robots_disallows_everything_and_expires_early():
    for status in (500, 503, None):
        rules = rules_from_response(status, b"", 100.0, **KW)
        assert rules.status is RobotsStatus.DISALLOW_ALL
        assert not rules.allows("http://a.test/", "courtier")
        assert rules.expires_at == 700.0


def test_robots_cache_lifetime_is_bounded_by_max_age():
    assert rules_from_response(200, BODY, 10.0, **KW).expires_at == 86410.0


def test_only_the_first_max_bytes_of_robots_are_parsed():
    padding = b"# " + b"x" * 600 * 1024 + b"\n"
    rules = rules_from_response(200, padding + b"User-agent: *\nDisallow: /\n", 0.0, **KW)
    assert rules.allows("http://a.test/page", "courtier")


def test_garbage_robots_does_not_raise():
    rules = rules_from_response(200, b"\xff\xfe\x00garbage:::\n\n<html>", 0.0, **KW)
    assert rules.allows("http://a.test/page", "courtier")


# Hostile answers: 429, Retry-After, byte-order marks, absurd Crawl-delay values.
RULES = "User-agent: *\nDisallow: /private\nCrawl-delay: 3\n"


def test_429_gave_no_permission_and_disallows_everything():
    rules = rules_from_response(429, b"User-agent: *\nAllow: /\n", 100.0, **KW)
    assert rules.status is RobotsStatus.DISALLOW_ALL
    assert not rules.allows("http://a.test/", "courtier")
    assert rules.expires_at == 700.0  # retry_unreachable without a Retry-After


def test_unreachable_robots_is_asked_again_after_retry_after():
    for status in (429, 503, 500, None):
        rules = rules_from_response(status, b"", 100.0, retry_after=3600.0, **KW)
        assert rules.status is RobotsStatus.DISALLOW_ALL
        assert rules.expires_at == 3700.0


def test_retry_after_on_robots_is_clamped_and_never_negative():
    huge = rules_from_response(503, b"", 100.0, retry_after=1e300, max_retry_after=7200.0, **KW)
    assert huge.expires_at == 7300.0
    assert rules_from_response(429, b"", 100.0, retry_after=1e9, **KW).expires_at == 86500.0
    assert rules_from_response(429, b"", 100.0, retry_after=-50.0, **KW).expires_at == 100.0
    assert rules_from_response(429, b"", 100.0, retry_after=math.inf, **KW).expires_at == 86500.0
    assert rules_from_response(429, b"", 100.0, retry_after=math.nan, **KW).expires_at == 700.0


def test_retry_after_does_not_change_answered_robots():
    assert rules_from_response(200, BODY, 0.0, retry_after=5.0, **KW).expires_at == 86400.0
    assert rules_from_response(404, b"", 0.0, retry_after=5.0, **KW).expires_at == 86400.0


def test_statuses_that_are_no_http_answer_count_as_unreachable():
    for status in (0, 100, 199, 600, 999):
        assert rules_from_response(status, BODY, 0.0, **KW).status is RobotsStatus.DISALLOW_ALL
    for status in (400, 401, 403, 404, 410, 451, 499, 300, 399):
        assert rules_from_response(status, BODY, 0.0, **KW).status is RobotsStatus.ALLOW_ALL


def _honoured(rules):
    assert rules.status is RobotsStatus.PARSED
    assert not rules.allows("http://a.test/private/x", "courtier")
    assert rules.allows("http://a.test/public", "courtier")
    assert rules.crawl_delay("courtier") == 3.0


def test_utf8_bom_is_dropped():
    _honoured(rules_from_response(200, b"\xef\xbb\xbf" + RULES.encode(), 0.0, **KW))


def test_utf16_with_bom_rules_are_honoured():
    _honoured(rules_from_response(200, b"\xff\xfe" + RULES.encode("utf-16-le"), 0.0, **KW))
    _honoured(rules_from_response(200, b"\xfe\xff" + RULES.encode("utf-16-be"), 0.0, **KW))
    # Python's "utf-16" codec writes the BOM of the machine's byte order.
    _honoured(rules_from_response(200, RULES.encode("utf-16"), 0.0, **KW))


def test_max_bytes_counts_raw_bytes_even_for_utf16():
    raw = b"\xff\xfe" + RULES.encode("utf-16-le")
    cut = rules_from_response(200, raw, 0.0, **{**KW, "max_bytes": 2 + 2 * len("User-agent: *\n")})
    assert cut.allows("http://a.test/private/x", "courtier")  # the Disallow line was cut off


def test_undecodable_utf8_is_replaced_not_fatal():
    rules = rules_from_response(200, b"User-agent: *\nDisallow: /\xff\xfe\n", 0.0, **KW)
    assert rules.status is RobotsStatus.PARSED


def test_absurd_crawl_delays_are_no_delay_and_huge_finite_ones_are_kept():
    for value in ("inf", "-inf", "nan", "-1", "-5", "0", "1e400", "²", "soon"):
        body = f"User-agent: *\nCrawl-delay: {value}\n".encode()
        assert rules_from_response(200, body, 0.0, **KW).crawl_delay("courtier") is None, value
    body = b"User-agent: *\nCrawl-delay: 1e308\n"
    assert rules_from_response(200, body, 0.0, **KW).crawl_delay("courtier") == 1e308


def test_crawl_delay_verdict():
    assert crawl_delay_verdict(None, 300.0) == (None, None)
    assert crawl_delay_verdict(2.5, 300.0) == (2.5, None)
    assert crawl_delay_verdict(300.0, 300.0) == (300.0, None)
    assert crawl_delay_verdict(300.5, 300.0) == (None, CRAWL_DELAY_TOO_LONG)
    assert crawl_delay_verdict(1e308, 300.0) == (None, "crawl-delay-too-long")
    assert crawl_delay_verdict(math.inf, 300.0) == (None, CRAWL_DELAY_TOO_LONG)
    assert crawl_delay_verdict(math.nan, 300.0) == (None, None)
    assert crawl_delay_verdict(0.0, 300.0) == (None, None)
    assert crawl_delay_verdict(-1.0, 300.0) == (None, None)


def test_config_defaults_for_hostile_values():
    config = Config()
    assert config.robots.max_crawl_delay == 300.0
    assert config.politeness.max_retry_after == 24 * 3600.0


_robots_lines = st.lists(
    st.sampled_from(
        [
            "User-agent: *",
            "User-agent: courtier",
            "Disallow: /",
            "Disallow: /private",
            "Allow: /*$",
            "Disallow: /*?*",
            "Crawl-delay: 1e308",
            "Crawl-delay: nan",
            "Crawl-delay: 2",
            "Sitemap: http://a.test/s.xml",
            "\x00\ud800",
        ]
    )
    | st.text(max_size=40),
    max_size=12,
).map(lambda lines: "\n".join(lines))
_robots_bodies = st.one_of(
    st.binary(max_size=2000),
    _robots_lines.map(lambda t: t.encode("utf-8", errors="surrogatepass")),
    _robots_lines.map(lambda t: b"\xff\xfe" + t.encode("utf-16-le", errors="surrogatepass")),
    _robots_lines.map(lambda t: b"\xfe\xff" + t.encode("utf-16-be", errors="surrogatepass")),
    st.binary(max_size=200).map(lambda b: b"\xff\xfe" + b),
)


@given(
    st.none() | st.integers(min_value=0, max_value=999),
    _robots_bodies,
    st.none() | st.floats(),
    st.integers(min_value=0, max_value=4000),
)
def test_rules_from_response_never_raises(status, body, retry_after, max_bytes):
    rules = rules_from_response(
        status, body, 1000.0, retry_after=retry_after, **{**KW, "max_bytes": max_bytes}
    )
    assert isinstance(rules.status, RobotsStatus)
    assert 1000.0 <= rules.expires_at <= 1000.0 + 86400.0
    assert isinstance(rules.allows("http://a.test/private/x?y", "courtier"), bool)
    delay = rules.crawl_delay("courtier")
    assert delay is None or (math.isfinite(delay) and delay > 0)
    assert isinstance(rules.sitemaps(), list)
    if status == 429 or status is None or status >= 500:
        assert rules.status is RobotsStatus.DISALLOW_ALL
