"""robots.txt as RFC 9309 says to read it, decided from what the fetch returned.

Rules (RFC 9309 section 2.3.1):
- 2xx: parse the first ``max_bytes`` of the body (protego does the matching). The body is
  UTF-8 (RFC 9309 2.3); a UTF-8 byte-order mark is dropped, and a UTF-16 LE/BE byte-order
  mark means the file is UTF-16 (its rules must not be lost to a wrong decode). Undecodable
  bytes become U+FFFD. ``max_bytes`` counts raw bytes, before decoding.
- 3xx: the fetcher follows up to five hops; past that the file counts as unavailable.
- 4xx except 429 ("unavailable"): the crawler may access any resource.
- 429, 5xx, no answer at all, or a status that is no HTTP answer (below 200, above 599)
  ("unreachable"): assume complete disallow, and ask again after ``retry_unreachable``, or
  after the answer's Retry-After when there was one (at least 0, at most
  ``max_retry_after``). A server that says "too many requests" gave no permission.
- A cached result is used for at most 24 hours.
``Crawl-delay`` is not in the RFC; we honour it as a start-to-start gap that only ever slows
a site down. ``RobotsRules.crawl_delay`` gives a finite, positive delay or None; a delay
longer than the crawl is willing to honour is judged by ``crawl_delay_verdict``: the engine
suspends such a site (reason ``crawl-delay-too-long``) rather than freezing it.

Matching (``RobotsFile``): protego parses; its groups are then kept as plain, picklable
data (so a parse worker can do the parsing and hand the result back cheaply) and, per
user-agent token, compiled into an index that finds the longest matching rule without
trying every rule: plain prefixes and ``$``-exact rules by dictionary lookups, wildcard
rules only in the buckets whose literal head is a prefix of the path, duplicates dropped.
Verdicts are cached per path (bounded). The winner is the one protego would pick: the
longest pattern, ``Allow`` over ``Disallow`` at equal length.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any
from urllib.parse import urlsplit

from protego import Protego
from protego._utils import _quote_path

CRAWL_DELAY_TOO_LONG = "crawl-delay-too-long"
_UTF8_BOM = b"\xef\xbb\xbf"
_UTF16_LE_BOM = b"\xff\xfe"
_UTF16_BE_BOM = b"\xfe\xff"


VERDICTS_KEPT = 4096
"""Paths whose verdict a compiled group remembers (the queue of one site at a time)."""


@dataclass(frozen=True, slots=True)
class RobotsGroup:
    """One ``User-agent`` group as protego read it: its rules in protego's order of
    precedence (longest first, ``Allow`` first at equal length), duplicates dropped, packed
    one a line as ``A<pattern>`` or ``D<pattern>`` (quoted as protego quotes). One string
    crosses from a parse worker in well under a millisecond where 25,000 tuples take tens;
    a pattern holds no newline (it is one line of the file)."""

    agent: str
    rules: str
    crawl_delay: float | None = None

    def pairs(self) -> list[tuple[str, bool]]:
        """(pattern, allow) of every rule, in order."""
        return [(line[1:], line[0] == "A") for line in self.rules.split("\n")] if self.rules else []

    def applies_to(self, token: str) -> int:
        """protego's score: 1 for ``*``, the agent's length when it is ``token`` (or a
        word of it), 0 otherwise."""
        token = token.strip().lower()
        if self.agent == "*":
            return 1
        index = token.find(self.agent)
        while index != -1:
            if index == 0 or not (token[index - 1].isalnum() or token[index - 1] in "-_"):
                return len(self.agent)
            index = token.find(self.agent, index + 1)
        return 0


def _wildcard_match(pattern: str, path: str) -> bool:
    """Does ``pattern`` (with ``*``, perhaps ending in ``$``) match ``path``? Its literal
    pieces are found left to right, as protego does."""
    anchored = pattern.endswith("$")
    parts = (pattern[:-1] if anchored else pattern).split("*")
    pos = len(parts[0])
    for part in parts[1:-1]:
        found = path.find(part, pos)
        if found == -1:
            return False
        pos = found + len(part)
    last = parts[-1]
    if anchored:
        return len(path) - len(last) >= pos and path.endswith(last)
    return not last or path.find(last, pos) != -1


class _Matcher:
    """One group's rules indexed for the longest match (see the module's rules)."""

    __slots__ = ("_buckets", "_exact", "_heads", "_lengths", "_plain", "_verdicts")

    def __init__(self, rules: Iterable[tuple[str, bool]]) -> None:
        self._plain: dict[str, bool] = {}
        self._exact: dict[str, bool] = {}
        buckets: dict[str, list[tuple[int, bool, str]]] = {}
        # Rules come in protego's order of precedence, without duplicates: the first of a
        # pattern wins a tie, and each bucket is in that order as it is filled.
        for pattern, allow in rules:
            star = pattern.find("*")
            if star >= 0:
                buckets.setdefault(pattern[:star], []).append((len(pattern), allow, pattern))
            elif pattern.endswith("$"):
                self._exact.setdefault(pattern[:-1], allow)
            else:
                self._plain.setdefault(pattern, allow)
        self._buckets = buckets
        self._lengths = sorted({len(p) for p in self._plain}, reverse=True)
        self._heads = sorted({len(h) for h in buckets}, reverse=True)
        self._verdicts: dict[str, bool] = {}

    def allows(self, path: str) -> bool:
        verdict = self._verdicts.get(path)
        if verdict is None:
            verdict = self._judge(path)
            if len(self._verdicts) >= VERDICTS_KEPT:
                self._verdicts.clear()
            self._verdicts[path] = verdict
        return verdict

    def _judge(self, path: str) -> bool:
        best: tuple[int, bool] = (-1, True)
        exact = self._exact.get(path)
        if exact is not None:
            best = (len(path) + 1, exact)
        size = len(path)
        for length in self._lengths:
            if (length, True) <= best:
                break
            allow = self._plain.get(path[:length]) if length <= size else None
            if allow is not None:
                best = max(best, (length, allow))
                break
        for length in self._heads:
            bucket = self._buckets.get(path[:length]) if length <= size else None
            for priority, allow, pattern in bucket or ():
                if (priority, allow) <= best:
                    break
                if _wildcard_match(pattern, path):
                    best = (priority, allow)
                    break
        return best[1]


class RobotsFile:
    """A parsed robots.txt as plain data (picklable, cheap to send between processes), with
    each user-agent token's group compiled for matching on first use."""

    __slots__ = ("_compiled", "groups", "sitemaps")

    def __init__(self, groups: tuple[RobotsGroup, ...], sitemaps: tuple[str, ...]) -> None:
        self.groups = groups
        self.sitemaps = sitemaps
        self._compiled: dict[str, tuple[RobotsGroup, _Matcher] | None] = {}

    def __getstate__(self) -> tuple[tuple[RobotsGroup, ...], tuple[str, ...]]:
        return self.groups, self.sitemaps  # indexes are rebuilt where they are used

    def __setstate__(self, state: tuple[tuple[RobotsGroup, ...], tuple[str, ...]]) -> None:
        self.groups, self.sitemaps = state
        self._compiled = {}

    def _group(self, token: str) -> tuple[RobotsGroup, _Matcher] | None:
        if token in self._compiled:
            return self._compiled[token]
        found = None
        if self.groups:
            score, group = max(((g.applies_to(token), g) for g in self.groups), key=_score)
            if score:
                found = (group, _Matcher(group.pairs()))
        self._compiled[token] = found
        return found

    def can_fetch(self, url: str, token: str) -> bool:
        if "/robots.txt" in url and urlsplit(url).path == "/robots.txt":
            return True  # as protego: robots.txt itself is always allowed
        path = _quote_path(url)
        found = self._group(token)
        return True if found is None else found[1].allows(path)

    def crawl_delay(self, token: str) -> float | None:
        found = self._group(token)
        return None if found is None else found[0].crawl_delay


def _score(pair: tuple[int, RobotsGroup]) -> int:
    return pair[0]


def compile_robots(parsed: Protego) -> RobotsFile:
    """protego's reading of a robots.txt as a ``RobotsFile`` (protego's groups, in its order
    of precedence; its parse is the reference, so both judge every URL alike)."""
    groups = tuple(
        RobotsGroup(agent, _packed(rule_set._rules), rule_set.crawl_delay)
        for agent, rule_set in parsed._user_agents.items()
    )
    return RobotsFile(groups, tuple(parsed.sitemaps))


def _packed(rules: Iterable[Any]) -> str:
    lines = (("A" if rule.field == "allow" else "D") + rule.value._pattern for rule in rules)
    return "\n".join(dict.fromkeys(lines))  # the first of duplicates is the one that counts


def parse_robots(text: str) -> RobotsFile:
    return compile_robots(Protego.parse(_without_repeated_rules(text)))


def _without_repeated_rules(text: str) -> str:
    """``text`` without rule lines repeated within a group: protego would keep every copy
    (a 500 KiB file of one line repeated costs it ~0.2 s), and a copy of a rule changes no
    verdict. A group is taken to end at every user-agent line, which can only keep more.
    Lines are split as protego splits them (``str.splitlines``)."""
    kept: list[str] = []
    seen: set[str] = set()
    for line in text.splitlines():
        head = line.lstrip()[:8].lower()
        if head.startswith(("allow", "disallow")):
            if line in seen:
                continue
            seen.add(line)
        elif head.startswith("user"):
            seen.clear()
        kept.append(line)
    return "\n".join(kept)


class RobotsStatus(Enum):
    PARSED = "parsed"
    ALLOW_ALL = "allow-all"  # 4xx or too many redirects
    DISALLOW_ALL = "disallow-all"  # 429, 5xx or unreachable


@dataclass(frozen=True, slots=True)
class RobotsRules:
    status: RobotsStatus
    expires_at: float
    parser: RobotsFile | None = None
    http_status: int | None = None

    def allows(self, url: str, user_agent_token: str) -> bool:
        if self.status is RobotsStatus.ALLOW_ALL:
            return True
        if self.status is RobotsStatus.DISALLOW_ALL or self.parser is None:
            return False
        return bool(self.parser.can_fetch(url, user_agent_token))

    def crawl_delay(self, user_agent_token: str) -> float | None:
        """The Crawl-delay for the token in seconds: finite and > 0, or None. A huge finite
        value is returned as it is (see ``crawl_delay_verdict``)."""
        if self.parser is None:
            return None
        delay = self.parser.crawl_delay(user_agent_token)
        if delay is None:
            return None
        try:
            value = float(delay)
        except (TypeError, ValueError, OverflowError):
            return None
        return value if math.isfinite(value) and value > 0 else None

    def sitemaps(self) -> list[str]:
        return list(self.parser.sitemaps) if self.parser is not None else []


def crawl_delay_verdict(delay: float | None, maximum: float) -> tuple[float | None, str | None]:
    """(delay to apply, None) when a site's Crawl-delay is at most ``maximum`` seconds, or
    (None, ``"crawl-delay-too-long"``) when it asks for more: the engine suspends such a
    site with that reason. No delay, or a non-positive or NaN one, is (None, None)."""
    if delay is None or math.isnan(delay) or delay <= 0:
        return None, None
    if delay <= maximum:
        return delay, None
    return None, CRAWL_DELAY_TOO_LONG


def decode_robots(raw: bytes) -> str:
    """robots.txt bytes as text: UTF-8 unless a UTF-16 byte-order mark says otherwise."""
    if raw.startswith(_UTF8_BOM):
        return raw[len(_UTF8_BOM) :].decode("utf-8", errors="replace")
    if raw.startswith(_UTF16_LE_BOM):
        return raw[len(_UTF16_LE_BOM) :].decode("utf-16-le", errors="replace")
    if raw.startswith(_UTF16_BE_BOM):
        return raw[len(_UTF16_BE_BOM) :].decode("utf-16-be", errors="replace")
    return raw.decode("utf-8", errors="replace")


def rules_from_response(
    status: int | None,
    body: bytes,
    now: float,
    *,
    max_age: float,
    retry_unreachable: float,
    max_bytes: int,
    retry_after: float | None = None,
    max_retry_after: float = 24 * 3600.0,
) -> RobotsRules:
    """Turn one robots.txt outcome into rules. ``status`` None means no answer at all;
    ``retry_after`` is the answer's Retry-After in seconds (used only when unreachable)."""
    if status is None or status < 200 or status >= 500 or status == 429:
        wait = retry_unreachable
        if retry_after is not None and not math.isnan(retry_after):
            wait = min(max(retry_after, 0.0), max_retry_after)
        return RobotsRules(RobotsStatus.DISALLOW_ALL, now + wait, None, status)
    if 200 <= status < 300:
        text = decode_robots(body[: max(max_bytes, 0)])
        try:
            parser = parse_robots(text)
        except Exception:  # protego is lenient; a failure here must still not stop the crawl
            return RobotsRules(RobotsStatus.ALLOW_ALL, now + max_age, None, status)
        return RobotsRules(RobotsStatus.PARSED, now + max_age, parser, status)
    # 4xx but 429, and 3xx chains that did not end (the fetcher passes the final status).
    return RobotsRules(RobotsStatus.ALLOW_ALL, now + max_age, None, status)
