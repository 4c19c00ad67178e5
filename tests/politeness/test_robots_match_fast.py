"""The compiled robots.txt matcher judges every URL as protego does, fast, and pickles."""

import pickle
import time

from hypothesis import given, settings
from hypothesis import strategies as st
from protego import Protego

from courtier.politeness import robots
from courtier.politeness.robots import parse_robots, rules_from_response

PIECES = st.sampled_from(["/", "a", "b", "*", "$", "?", "=", ".html", "index.html", "%2F", "é"])
PATTERN = st.lists(PIECES, min_size=1, max_size=6).map("".join)
RULE = st.tuples(st.sampled_from(["Allow", "Disallow"]), PATTERN)
AGENT = st.sampled_from(["*", "courtier", "otherbot", "court"])
GROUP = st.tuples(AGENT, st.lists(RULE, max_size=8))
PATH = st.lists(
    st.sampled_from(["/", "a", "b", "?", "=", "$", ".html", "index.html", "é"]), max_size=8
)


def _text(groups: list[tuple[str, list[tuple[str, str]]]]) -> str:
    lines = []
    for agent, rules in groups:
        lines.append(f"User-agent: {agent}")
        lines += [f"{field}: {pattern}" for field, pattern in rules]
        lines.append("")
    return "\n".join(lines)


@settings(max_examples=400, deadline=None)
@given(st.lists(GROUP, max_size=3), st.lists(PATH, min_size=1, max_size=10), AGENT)
def test_every_verdict_is_protegos(groups, paths, token):
    text = _text(groups)
    reference, compiled = Protego.parse(text), parse_robots(text)
    for parts in paths:
        url = "http://a.test/" + "".join(parts)
        assert compiled.can_fetch(url, token) == reference.can_fetch(url, token), (text, url)
        assert compiled.can_fetch(url, token) == reference.can_fetch(url, token)  # cached
    assert compiled.crawl_delay(token) == reference.crawl_delay(token)


def test_robots_txt_itself_is_always_allowed():
    compiled = parse_robots("User-agent: *\nDisallow: /\n")
    assert compiled.can_fetch("http://a.test/robots.txt", "courtier")
    assert compiled.can_fetch("http://a.test/robots.txt?x=1", "courtier")
    assert not compiled.can_fetch("http://a.test/robots.txtx", "courtier")


def test_a_parsed_file_pickles_without_its_indexes_and_still_judges():
    compiled = parse_robots("User-agent: *\nDisallow: /private\nSitemap: http://a.test/s.xml\n")
    assert not compiled.can_fetch("http://a.test/private/x", "courtier")
    copy = pickle.loads(pickle.dumps(compiled))
    assert copy._compiled == {}
    assert not copy.can_fetch("http://a.test/private/x", "courtier")
    assert copy.can_fetch("http://a.test/public", "courtier")
    assert list(copy.sitemaps) == ["http://a.test/s.xml"]


def test_the_verdict_cache_is_bounded(monkeypatch):
    monkeypatch.setattr(robots, "VERDICTS_KEPT", 8)
    compiled = parse_robots("User-agent: *\nDisallow: /*x$\n")
    for n in range(50):
        assert compiled.can_fetch(f"http://a.test/{n}", "courtier")
        assert not compiled.can_fetch(f"http://a.test/{n}x", "courtier")
    matcher = compiled._compiled["courtier"][1]
    assert 0 < len(matcher._verdicts) <= 8


HUGE = "User-agent: *\n" + "".join(f"Disallow: /a{i % 5000}*b*c$\n" for i in range(25_000))


def test_a_500_kib_robots_txt_judges_a_url_in_well_under_a_millisecond():
    body = HUGE.encode()
    assert len(body) >= 500_000
    rules = rules_from_response(
        200, body, 0.0, max_age=86400.0, retry_unreachable=600.0, max_bytes=len(body)
    )
    assert not rules.allows("http://a.test/a42/b/c", "courtier")
    started = time.perf_counter()
    for n in range(2000):
        assert rules.allows(f"http://a.test/p/{n}", "courtier")
    assert (time.perf_counter() - started) / 2000 < 1e-3


def test_repeated_rules_are_read_once_and_judge_alike():
    text = "User-agent: *\n" + "Disallow: /a*b$\n" * 1000 + "User-agent: x\nDisallow: /a*b$\n"
    compiled = parse_robots(text)
    assert compiled.groups[0].rules == "D/a*b%24\nD/a*b$"
    assert compiled.groups[1].rules == "D/a*b%24\nD/a*b$"  # the next group keeps its own
    assert not compiled.can_fetch("http://a.test/a/b", "courtier")
    assert not compiled.can_fetch("http://a.test/a/b", "x")
