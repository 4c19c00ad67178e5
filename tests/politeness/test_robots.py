from courtier.politeness.robots import RobotsStatus, rules_from_response

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
