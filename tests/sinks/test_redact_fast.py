"""The cheap paths of redaction give exactly what running every rule gives."""

from __future__ import annotations

import random
import re
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from courtier.sinks import redact as r
from courtier.sinks.redact import KEY_RULES, RedactionPolicy, redact, redact_url
from key_samples import KEYS


def every_rule(text: str, policy: RedactionPolicy) -> tuple[str, Counter[str]]:
    """The reference: each rule tried on the text the previous ones left, no pre-check."""
    counts: Counter[str] = Counter()
    for rule in KEY_RULES:
        if rule.kind not in policy.skip:
            text = r._apply(rule, text, text.lower(), counts)
    if policy.emails and ("@" in text or "%40" in text.lower()):
        text = r._emails(text, counts)
    return text, counts


def samples() -> list[str]:
    rng = random.Random(7)
    secrets = [template.format(secret) for _k, template, secret in KEYS]
    plain = [
        "https://site-0421.test:8080/catalog/item-1234?page=2&sort=price",
        "private, max-age=0", "Accept-Encoding", "text/html; charset=utf-8",
        "https://x.test/cb?email=jane%40example.com", "/api/v1/items?access=1",
    ]  # fmt: skip
    out = secrets + plain
    for _ in range(300):  # secrets glued into ordinary URLs and to each other
        parts = rng.sample(secrets, 2) + rng.sample(plain, 2)
        rng.shuffle(parts)
        out.append(rng.choice(["", "&", " ", "/"]).join(parts))
    return out


@pytest.mark.parametrize("skip", [frozenset(), frozenset({"jwt", "google-api-key"})])
def test_urls_are_redacted_as_by_every_rule(skip):
    policy = RedactionPolicy(phones=False, skip=skip)
    for text in samples():
        result = redact_url(text, RedactionPolicy(skip=skip))
        assert (result.text, result.counts) == every_rule(text, policy), text


def test_anchors_are_literals_every_match_contains():
    for _kind, template, secret in KEYS:
        text = template.format(secret)
        for rule in KEY_RULES:
            for match in rule.pattern.finditer(text):
                found = match.group(0).lower() if rule.anchored else match.group(0)
                assert any(a in found for a in rule.anchors), (rule.kind, match.group(0))


def test_the_screen_finds_each_anchor_and_nothing_else():
    _policy, screen = r._url_plan(RedactionPolicy())
    for rule in KEY_RULES:
        for anchor in rule.anchors:
            text = f"zz {anchor} zz"
            hit = screen.search(text.lower(), folded=True) if rule.anchored else screen.search(text)
            assert hit is not None, anchor
    for plain in ("nginx/1.24.0", "Tue, 01 Dec 2026 11:35:43 GMT", "https://a.test/x?q=1"):
        assert screen.search(plain) is None and screen.search(plain, folded=True) is None


def test_a_trie_of_literals_matches_where_any_literal_does():
    rng = random.Random(3)
    words = sorted({"".join(rng.choices("ab-.", k=rng.randint(1, 4))) for _ in range(12)})
    pattern = re.compile(r._trie(words))
    for _ in range(500):
        text = "".join(rng.choices("ab-.x", k=rng.randint(0, 8)))
        assert (pattern.search(text) is not None) == any(w in text for w in words), text


def test_policies_change_what_a_url_loses_and_the_caches_stay_bounded():
    url = "https://x.test/?k=AIza" + "a1B2" * 8 + "xyz&to=a%40example.com"
    assert redact_url(url).counts.keys() == {"google-api-key", "email"}
    assert redact_url(url, RedactionPolicy(emails=False)).counts.keys() == {"google-api-key"}
    assert redact_url(url, RedactionPolicy(keys=False)).counts.keys() == {"email"}
    assert not redact_url(url, RedactionPolicy(keys=False, emails=False, phones=False)).changed
    for i in range(100):
        redact_url(url, RedactionPolicy(skip=frozenset({f"kind-{i}"})))
    assert r._url_plan.cache_info().currsize <= 64 and r._rules_of.cache_info().currsize <= 64


def test_pages_are_redacted_as_by_every_rule():
    page = " ".join(samples()[:80])
    assert (lambda res: (res.text, res.counts))(redact(page, RedactionPolicy(phones=False))) == (
        every_rule(page, RedactionPolicy(phones=False))
    )


_ANCHORS = sorted({a for rule in KEY_RULES for a in rule.anchors})


@given(
    st.lists(
        st.one_of(st.sampled_from(_ANCHORS), st.text(alphabet="aAkK_-.sSgGpP0123 ", max_size=6)),
        max_size=12,
    )
)
def test_the_anchor_scan_finds_what_a_scan_per_anchor_finds(parts: list[str]) -> None:
    """Overlapping and nested anchors included: the automaton misses no rule."""
    text = "".join(parts)
    rules = r._rules_of(frozenset())
    lower = text.lower()
    expected = sorted(
        {i for a, ids in rules.exact.items() if a in text for i in ids}
        | {i for a, ids in rules.folded.items() if a in lower for i in ids}
    )
    assert rules.occurring(text, lower, 0) == (expected, {a for a in rules.folded if a in lower})


_PHONE_TEXT = st.text(
    alphabet=st.sampled_from([*"0123456789 +()-./x\n", "\u00a0", "é", "ж", "\u0663", "\U0001f600"]),
    max_size=60,
)


@given(st.lists(st.one_of(_PHONE_TEXT, st.sampled_from(["+33\u00a01 23 45 67 89", "\udc80"]))))
def test_phone_candidates_by_re2_are_those_re_finds(parts: list[str]) -> None:
    """RE2 on UTF-8 (ASCII digits) finds the candidates ``re`` finds, at character offsets."""
    text = "".join(parts)
    expected = [match.span() for match in r._CANDIDATES.finditer(text)]
    assert list(r._candidates(text)) == expected
    ascii_only = text.encode("ascii", "replace").decode("ascii")
    expected = [match.span() for match in r._CANDIDATES.finditer(ascii_only)]
    assert list(r._candidates(ascii_only)) == expected
