import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from courtier.frontier.traps import (
    PatternCounter,
    TrapPolicy,
    UrlPattern,
    clear_pattern_caches,
    url_pattern,
)


@pytest.fixture(autouse=True)
def _as_a_new_process():
    """Each test judges its segments, keys and values afresh, as a new process would."""
    clear_pattern_caches()


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


@pytest.mark.parametrize(
    ("segment", "random_looking"),
    [
        ("abcdefghijklmnopq1r22s", True),  # three digits, four switches
        ("1234567890123456x7y8z", True),  # three letters, five switches
        ("abcdefghijklmnopqr1s2", False),  # two digits only
        ("1234567890123456x7y8", False),  # two letters only
        ("abcdefghijklmnopq1r22", False),  # three switches only
    ],
)
def test_a_token_looks_generated_with_three_letters_three_digits_and_four_switches(
    segment: str, random_looking: bool
):
    pattern = url_pattern(f"http://a.test/p/{segment}")
    assert (pattern.key == "a.test/p/{id}") is random_looking
    assert pattern.volatile is random_looking


def test_each_admission_says_its_count_and_the_cap_it_counts_against():
    counter = PatternCounter(TrapPolicy(per_pattern_cap=3, volatile_pattern_cap=2))
    shop = [counter.admit(f"http://a.test/product/{n}") for n in range(4)]
    assert [(v.admitted, v.count, v.cap) for v in shop] == [
        (True, 1, 3),
        (True, 2, 3),
        (True, 3, 3),
        (False, 3, 3),
    ]
    calendar = [counter.admit(f"http://a.test/day/2026/1/{n}") for n in range(1, 4)]
    assert [(v.admitted, v.count, v.cap) for v in calendar] == [
        (True, 1, 2),
        (True, 2, 2),
        (False, 2, 2),
    ]


def test_a_counter_patterns_urls_under_its_own_policy():
    counter = PatternCounter(TrapPolicy(max_query_keys=2))
    verdict = counter.admit("http://a.test/s?a=1&b=2&c=3")
    assert verdict.pattern == url_pattern("http://a.test/s?a=1&b=2&c=3", counter.policy)
    assert verdict.pattern != url_pattern("http://a.test/s?a=1&b=2&c=3")
    assert verdict.pattern.volatile


def test_the_overflow_pattern_is_the_hosts_and_not_volatile():
    counter = PatternCounter(TrapPolicy(max_patterns_per_host=1))
    counter.admit("http://mint.test/a")
    verdict = counter.admit("http://mint.test/b")
    assert verdict.pattern == UrlPattern("mint.test/{overflow}", "mint.test", False)
    assert verdict.cap == TrapPolicy().per_pattern_cap


def test_a_restored_counter_still_bounds_each_hosts_patterns():
    policy = TrapPolicy(max_patterns_per_host=2)
    first = PatternCounter(policy)
    for path in ("/p/a", "/q/b"):
        first.admit(f"http://mint.test{path}")
    first.admit("http://other.test/x")
    resumed = PatternCounter(policy, counts=first.counts())
    assert resumed.admit("http://mint.test/r/c").pattern.key == "mint.test/{overflow}"
    assert resumed.admit("http://other.test/y").pattern.key == "other.test/y"


def test_a_counter_knows_whether_it_counts_under_the_default_policy():
    assert PatternCounter().default_policy
    assert PatternCounter(TrapPolicy()).default_policy
    assert not PatternCounter(TrapPolicy(per_pattern_cap=5)).default_policy


@pytest.mark.parametrize(
    ("value", "volatile"),
    [
        ("2026", True),  # a year
        ("2026-11-30", True),  # a date
        ("abcdefghijklmnopq1r22s", True),  # a generated token
        ("0123456789abcdef0123", True),  # a long hex id
        ("hello-world-this-is-long-text", False),  # long, but words
        ("books", False),
    ],
)
def test_a_query_value_that_is_a_date_or_an_id_makes_the_pattern_volatile(
    value: str, volatile: bool
):
    pattern = url_pattern(f"http://a.test/list?x={value}")
    assert (pattern.key, pattern.volatile) == ("a.test/list?x", volatile)


def test_a_session_id_path_parameter_is_volatile_whatever_its_value():
    assert url_pattern("http://a.test/p;jsessionid=YWJj==").volatile
    assert url_pattern("http://a.test/p;JSESSIONID=0A1B").volatile
    assert not url_pattern("http://a.test/p;lang=en").volatile
    # Not only the first path parameter: a session id after another one is still one.
    assert url_pattern("http://a.test/p;lang=en;jsessionid=0A1B").volatile
    assert url_pattern("http://a.test/p;lang=en; JSESSIONID=0A1B").volatile
    assert not url_pattern("http://a.test/p;lang=en;page=2").volatile


@pytest.mark.parametrize(
    ("url", "key"),
    [
        ("http://[::1/x?y=1", "?raw:http://[::{n}/x"),
        ("http://[::1/a?b?c", "?raw:http://[::{n}/a"),
        ("http://[::1/a b?c", "?raw:http://[::{n}/a b"),
    ],
)
def test_a_url_that_does_not_parse_is_patterned_from_its_text_before_the_query(url: str, key: str):
    assert url_pattern(url) == UrlPattern(key, "", True)


def test_a_url_without_a_host_has_an_empty_host():
    assert url_pattern("/rel/1?x=2") == UrlPattern("/rel/{n}?x", "", False)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: TrapPolicy(per_pattern_cap=0), "per_pattern_cap must be >= 1"),
        (lambda: TrapPolicy(volatile_pattern_cap=0), "volatile_pattern_cap must be >= 1"),
        (lambda: TrapPolicy(max_patterns_per_host=0), "max_patterns_per_host must be >= 1"),
        (
            lambda: TrapPolicy(max_query_keys=0),
            "max_query_keys and max_pattern_segments must be >= 1",
        ),
        (
            lambda: TrapPolicy(max_pattern_segments=0),
            "max_query_keys and max_pattern_segments must be >= 1",
        ),
    ],
)
def test_a_policy_out_of_range_is_refused_saying_which_setting(build, message):
    with pytest.raises(ValueError) as refused:
        build()
    assert str(refused.value) == message


def test_the_smallest_policy_is_accepted():
    policy = TrapPolicy(1, 1, 1, 1, 1)
    counter = PatternCounter(policy)
    assert counter.admit("http://a.test/a/b?x=1&y=2").pattern.key == "a.test/a/{deep}?{many}"
