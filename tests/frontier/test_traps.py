import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from courtier.frontier.traps import PatternCounter, TrapPolicy, url_pattern


@pytest.mark.parametrize(
    ("url", "key", "volatile"),
    [
        ("http://Cal.test/calendar/2026/11/30", "cal.test/calendar/{year}/{n}/{n}", True),
        ("http://cal.test/calendar/1999/1/2", "cal.test/calendar/{year}/{n}/{n}", True),
        ("http://a.test/events/20261130", "a.test/events/{date}", True),
        ("http://a.test/ev?date=2026-11-30", "a.test/ev?date", True),
        ("http://a.test/page?sid=a81f9c0e2b7d4a6f8e1c", "a.test/page?sid", True),
        ("http://a.test/page;jsessionid=ABC123?x=1", "a.test/page?x", True),
        ("http://a.test/x7Kq9zP2mL4vB8nQ1wE5/page", "a.test/{id}/page", True),
        ("http://a.test/search?q=a&page=1&page=2", "a.test/search?page&q&{repeated}", True),
        ("http://a.test/a/b/a/b/a/b/a/b", "a.test/{loop}/a/b", True),
        ("http://a.test/product/12345", "a.test/product/{n}", False),
        ("http://a.test/product/77?ref=home&page=2", "a.test/product/{n}?page&ref", False),
        ("http://a.test/p/item42.html", "a.test/p/item{n}.html", False),
        ("http://a.test/blog/best-spades-2026-review", "a.test/blog/best-spades-{n}-review", False),
        ("https://a.test:8443/", "a.test/", False),
    ],
)
def test_pattern_collapses_variable_parts(url: str, key: str, volatile: bool):
    pattern = url_pattern(url)
    assert (pattern.key, pattern.volatile) == (key, volatile)


def test_query_key_order_and_values_do_not_matter():
    assert url_pattern("http://a.test/s?b=2&a=1").key == url_pattern("http://a.test/s?a=9&b=0").key


def test_too_many_query_keys_collapse_to_one_volatile_pattern():
    policy = TrapPolicy(max_query_keys=3)
    query = "&".join(f"{name}=1" for name in "abcdef")
    pattern = url_pattern(f"http://a.test/s?{query}", policy)
    assert pattern.key == "a.test/s?{many}" and pattern.volatile


def test_very_deep_path_is_cut():
    path = "/".join(f"dir{chr(97 + i)}x" for i in range(20))
    pattern = url_pattern(f"http://a.test/{path}", TrapPolicy(max_pattern_segments=5))
    assert pattern.key.endswith("/{deep}") and pattern.volatile


def _crawl(seed_url: str, links_of, counter: PatternCounter, budget: int = 10_000) -> int:
    """Follow links breadth-first until ``budget`` URLs were considered; count admissions."""
    queue, seen, admitted, considered = [seed_url], {seed_url}, 0, 0
    while queue and considered < budget:
        url = queue.pop(0)
        considered += 1
        if not counter.admit(url).admitted:
            continue
        admitted += 1
        for link in links_of(url):
            if link not in seen:
                seen.add(link)
                queue.append(link)
    return admitted


def test_endless_calendar_costs_a_few_dozen_requests():
    def calendar(url: str) -> list[str]:
        """Month pages link the next and previous months and two days; day pages link the
        next day: forever, in both directions."""
        if "/day/" in url:
            year, month, day = (int(part) for part in url.rsplit("/", 3)[-3:])
            return [f"http://cal.test/day/{year}/{month}/{day % 28 + 1}"]
        year, month = (int(part) for part in url.rsplit("/", 2)[-2:])
        following = (year + month // 12, month % 12 + 1)
        previous = (year - (month == 1), (month - 2) % 12 + 1)
        days = [f"http://cal.test/day/{year}/{month}/{day}" for day in (1, 15)]
        return [f"http://cal.test/month/{y}/{m}" for y, m in (following, previous)] + days

    admitted = _crawl("http://cal.test/month/2026/11", calendar, PatternCounter())
    assert admitted <= 2 * 30  # one month pattern and one day pattern, 30 each


def test_session_id_trap_costs_a_few_dozen_requests():
    rng = random.Random(1)

    def session_links(url: str) -> list[str]:
        token = "".join(rng.choice("abcdef0123456789") for _ in range(24))
        return [f"http://shop.test/cart?sid={token}", f"http://shop.test/;jsessionid={token}"]

    admitted = _crawl("http://shop.test/", session_links, PatternCounter())
    assert admitted <= 1 + 2 * 30


def test_ever_growing_query_string_and_looping_path_are_bounded():
    def growing(url: str) -> list[str]:
        return [url + ("&" if "?" in url else "?") + "filter=x", url.split("?")[0] + "/a/b"]

    admitted = _crawl("http://grow.test/list", growing, PatternCounter(), budget=20_000)
    assert admitted < 200


def test_legitimate_catalogue_is_crawled_in_full_up_to_the_large_cap():
    counter = PatternCounter(TrapPolicy(per_pattern_cap=1000))
    verdicts = [counter.admit(f"http://shop.test/product/{n}") for n in range(1, 1001)]
    assert all(v.admitted for v in verdicts)
    refused = counter.admit("http://shop.test/product/5000")
    assert not refused.admitted and refused.count == 1000 and refused.cap == 1000
    # Another host's catalogue has its own budget.
    assert counter.admit("http://other.test/product/1").admitted


def test_a_host_minting_endless_patterns_shares_one_overflow_pattern():
    counter = PatternCounter(TrapPolicy(max_patterns_per_host=3, per_pattern_cap=5))
    for name in "abc":
        assert counter.admit(f"http://mint.test/{name}").pattern.key == f"mint.test/{name}"
    overflow = [counter.admit(f"http://mint.test/{name}x") for name in "defghijkl"]
    assert {v.pattern.key for v in overflow} == {"mint.test/{overflow}"}
    assert [v.admitted for v in overflow] == [True] * 5 + [False] * 4
    assert counter.admit("http://mint.test/a").pattern.key == "mint.test/a"  # known stays


def test_counts_carry_over_a_restart():
    first = PatternCounter()
    for day in range(1, 21):
        first.admit(f"http://cal.test/day/2026/1/{day}")
    resumed = PatternCounter(counts=first.counts())
    verdicts = [resumed.admit(f"http://cal.test/day/2026/2/{day}") for day in range(1, 21)]
    assert sum(v.admitted for v in verdicts) == 10


@pytest.mark.parametrize("url", ["http://[::1/x", "", "not a url", "http://a.test/%zz?%%=1&=&"])
def test_malformed_urls_get_a_pattern_and_never_raise(url: str):
    verdict = PatternCounter().admit(url)
    assert verdict.admitted and verdict.pattern.key


def test_invalid_policy_is_refused():
    with pytest.raises(ValueError):
        TrapPolicy(volatile_pattern_cap=0)


@given(st.text(max_size=200))
def test_any_text_gets_a_pattern_without_raising(text: str):
    assert url_pattern(text).key is not None
    assert url_pattern("http://a.test/" + text).host == "a.test"
