"""The fast paths of ``traps`` (caches, split query, ``admit_pattern``) give exactly the
patterns and verdicts of the plain rules, which are restated here as the reference."""

from __future__ import annotations

from collections import Counter
from urllib.parse import parse_qsl, urlsplit

from hypothesis import given, settings
from hypothesis import strategies as st

from courtier.frontier import traps
from courtier.frontier.traps import PatternCounter, TrapPolicy, pattern_of, url_pattern


def _reference_path(path: str, policy: TrapPolicy) -> tuple[str, bool]:
    segments = [segment.split(";", 1)[0] for segment in path.split("/")[1:]]
    volatile = any(";" in s and traps._is_session_parameter(s) for s in path.split("/"))
    collapsed = []
    for segment in segments:
        shape, segment_volatile = traps._segment_shape(segment)
        collapsed.append(shape)
        volatile |= segment_volatile
    repeats = Counter(shape for shape in collapsed if shape)
    if repeats and max(repeats.values()) >= 3:
        return "/{loop}/" + "/".join(dict.fromkeys(collapsed)), True
    if len(collapsed) > policy.max_pattern_segments:
        collapsed = [*collapsed[: policy.max_pattern_segments], "{deep}"]
        volatile = True
    return "/" + "/".join(collapsed), volatile


def _reference_query(query: str, policy: TrapPolicy) -> tuple[str, bool]:
    if not query:
        return "", False
    pairs = parse_qsl(query, keep_blank_values=True)
    keys = [traps._DIGITS.sub("{n}", key.lower()) for key, _ in pairs]
    volatile = len(set(keys)) < len(keys)
    for key, value in pairs:
        if key.lower() in traps.SESSION_KEYS or traps._looks_volatile_value(value):
            volatile = True
    distinct = sorted(set(keys))
    if len(distinct) > policy.max_query_keys:
        return "{many}", True
    repeated = ["{repeated}"] if len(distinct) < len(keys) else []
    return "&".join(distinct + repeated), volatile


def _reference_pattern(url: str, policy: TrapPolicy) -> tuple[str, str, bool]:
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    path_key, path_volatile = _reference_path(parts.path, policy)
    query_key, query_volatile = _reference_query(parts.query, policy)
    key = f"{host}{path_key}" + (f"?{query_key}" if query_key else "")
    return key, host, path_volatile or query_volatile


_PIECES = st.sampled_from(
    ["2026", "11", "30", "2026-11-30", "item", "a", "b", "x7Kq9zP2mL4vB8nQ1wE5", "deadbeef" * 2,
     "f1", "f2", "sid", "SID", "page", "", "%41", "a+b", "%zz", "x;jsessionid=1", "x;v=2", "é", "0",
     "best-spades-2026-review", "a" * 70, "1" * 70]
)  # fmt: skip
_SEPARATORS = st.sampled_from(["/", "&", "=", "?", ";", "/", "&", "="])


@st.composite
def _urls(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.tuples(_PIECES, _SEPARATORS), max_size=16))
    tail = "".join(piece + separator for piece, separator in parts)
    return "https://Shop.Example/" + tail


@settings(max_examples=600, deadline=None)
@given(
    _urls(), st.sampled_from([TrapPolicy(), TrapPolicy(max_query_keys=2, max_pattern_segments=2)])
)
def test_patterns_equal_the_plain_rules(url: str, policy: TrapPolicy) -> None:
    expected = _reference_pattern(url, policy)
    got = url_pattern(url, policy)
    assert (got.key, got.host, got.volatile) == expected
    parts = urlsplit(url)
    assert pattern_of("shop.example", parts.path, parts.query, policy) == expected


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_any_query_gives_the_plain_rules_pattern(query: str) -> None:
    expected = _reference_query(query, TrapPolicy())
    assert traps._query_pattern(query, TrapPolicy().max_query_keys) == expected
    assert traps._cached_query_pattern(query, TrapPolicy().max_query_keys) == expected


@settings(max_examples=200, deadline=None)
@given(st.lists(_urls(), max_size=80))
def test_admit_pattern_gives_the_verdicts_of_admit(urls: list[str]) -> None:
    policy = TrapPolicy(per_pattern_cap=3, volatile_pattern_cap=2, max_patterns_per_host=4)
    plain, fast = PatternCounter(policy), PatternCounter(policy)
    for url in urls:
        key, host, volatile = pattern_of(*_split(url), policy)
        assert fast.admit_pattern(key, host, volatile) == plain.admit(url).admitted
    assert fast.counts() == plain.counts()


def _split(url: str) -> tuple[str, str, str]:
    parts = urlsplit(url)
    return (parts.hostname or "").lower(), parts.path, parts.query


def test_admit_pattern_caps_and_overflows_like_admit() -> None:
    policy = TrapPolicy(per_pattern_cap=2, volatile_pattern_cap=1, max_patterns_per_host=1)
    counter = PatternCounter(policy, counts={"h/a": 0})
    assert counter.admit_pattern("h/a", "h", False)
    assert counter.admit_pattern("h/a", "h", False)
    assert not counter.admit_pattern("h/a", "h", False)  # the large cap
    # The host has its one pattern: a new one shares the (non-volatile) overflow pattern.
    assert counter.admit_pattern("h/b", "h", True) and counter.admit_pattern("h/c", "h", True)
    assert not counter.admit_pattern("h/d", "h", True)
    assert counter.counts() == {"h/a": 2, "h/{overflow}": 2}
    assert counter.policy == policy
