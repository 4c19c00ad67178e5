"""Redaction of secrets and personal data from everything the crawl keeps.

Rules:
- **What**: API keys and tokens sites embed (``KEY_RULES``: one row per pattern, each named by
  its *kind*, e.g. ``google-api-key``; several rows may share a kind), e-mail addresses
  (also with ``%40`` for ``@``, as in query strings) and phone numbers (international
  ``+CC ...`` and national formats, validated by ``phonenumbers`` for the page's region).
- **How**: each match becomes the typed placeholder ``[REDACTED:<kind>]``; for a rule with a
  context (``algolia ... key: "<key>"``) only the ``secret`` group is replaced, the context
  stays. Rules run in table order over the text the previous rules left, so a specific rule
  (Mapbox's ``pk.eyJ...``) claims its match before a general one (JWT) sees it.
- **Cost**: a rule runs only when one of its ``anchors`` (lower-case literals) occurs in the
  lower-cased text, so a page with no ``AIza`` never pays for the Google pattern; phone
  candidates are found by one regular expression and only those are given to
  ``phonenumbers``.
- **Near misses stay**: exact lengths and character classes with boundaries on both sides
  (an ``AIza`` string one character short is not a key), a known top-level domain for
  e-mail (``logo@2x.png`` is a file name), dates and bare digit runs are not phone numbers.
- ``RedactionPolicy`` turns kinds on and off (``[redact]``); it is a plain value, so a parse
  worker gets it with each job. Everything here is pure and thread/process safe.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Final

import phonenumbers
from publicsuffixlist import PublicSuffixList

EMAIL: Final = "email"
PHONE: Final = "phone"


def placeholder(kind: str) -> str:
    return f"[REDACTED:{kind}]"


@dataclass(frozen=True, slots=True)
class KeyRule:
    kind: str
    pattern: re.Pattern[str]
    anchors: tuple[str, ...]
    """Lower-case literals one of which every match contains (the cheap pre-check)."""
    check: Callable[[str], bool] | None = None
    """A further test of the matched secret (None: every match counts)."""
    bounded: bool = True
    """The match must not continue a token on its left (letters, digits, ``_``, ``-``)."""
    anchored: bool = False
    """A context rule (case-insensitive): its matches start where an anchor starts."""


_B = ""  # a token boundary before (checked on the match: a look-behind here would slow the scan)
_E = r"(?![0-9A-Za-z_\-])"  # ... and after
_ASSIGN = r"""['"]?\s*[:=]\s*['"]?"""  # key: "value", key = 'value', "key":"value", key=value


def _mixed(secret: str) -> bool:
    """A generic secret looks random: letters and digits both."""
    return any(c.isdigit() for c in secret) and any(c.isalpha() for c in secret)


def _rule(
    kind: str, pattern: str, *anchors: str, check: Callable[[str], bool] | None = None
) -> KeyRule:
    anchored = pattern.startswith("(?i)")
    bounded = not anchored and not pattern.startswith(("http", "-----", r"(?<"))
    return KeyRule(kind, re.compile(pattern), anchors, check, bounded, anchored)


_TOKEN_CHARS: Final = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_-")


# Sources: gitleaks' and detect-secrets' rule sets and the vendors' documented formats.
KEY_RULES: Final[tuple[KeyRule, ...]] = (
    _rule("private-key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----[\s\S]{0,10000}?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----", "private key-----"),  # noqa: E501
    _rule("google-api-key", _B + r"AIza[0-9A-Za-z_\-]{35}" + _E, "aiza"),
    _rule("google-oauth-secret", _B + r"GOCSPX-[0-9A-Za-z_\-]{28}" + _E, "gocspx-"),
    _rule("google-oauth-token", _B + r"ya29\.[0-9A-Za-z_\-]{30,}" + _E, "ya29."),
    _rule("aws-access-key-id", _B + r"(?:AKIA|ASIA|ABIA|ACCA|AIDA|AROA)[0-9A-Z]{16}" + _E, "akia", "asia", "abia", "acca", "aida", "aroa"),  # noqa: E501
    _rule("aws-secret-key", r"(?i)aws[\w\-.]{0,20}?secret[\w\-.]{0,20}?" + _ASSIGN + r"(?P<secret>[0-9A-Za-z/+]{40})(?![0-9A-Za-z/+])", "aws"),  # noqa: E501
    _rule("stripe-secret-key", _B + r"(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}" + _E, "k_live_", "k_test_"),  # noqa: E501
    _rule("stripe-publishable-key", _B + r"pk_(?:live|test)_[0-9A-Za-z]{16,}" + _E, "k_live_", "k_test_"),  # noqa: E501
    _rule("stripe-webhook-secret", _B + r"whsec_[0-9A-Za-z]{24,}" + _E, "whsec_"),
    _rule("mapbox-token", _B + r"(?:pk|sk|tk)\.eyJ[0-9A-Za-z_\-]{10,}\.[0-9A-Za-z_\-]{20,}" + _E, "k.eyj"),  # noqa: E501
    _rule("github-token", _B + r"(?:ghp|gho|ghu|ghs|ghr)_[0-9A-Za-z]{36}" + _E, "gh"),
    _rule("github-token", _B + r"github_pat_[0-9A-Za-z_]{82}" + _E, "github_pat_"),
    _rule("gitlab-token", _B + r"glpat-[0-9A-Za-z_\-]{20}" + _E, "glpat-"),
    _rule("slack-webhook", r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[0-9A-Za-z_/\-]{20,}", "hooks.slack.com"),  # noqa: E501
    _rule("slack-token", _B + r"xox[abposre]-[0-9A-Za-z\-]{10,250}" + _E, "xox"),
    _rule("twilio-api-key", _B + r"SK[0-9a-f]{32}" + _E, "sk"),
    _rule("twilio-account-sid", _B + r"AC[0-9a-f]{32}" + _E, "ac"),
    _rule("sendgrid-api-key", _B + r"SG\.[0-9A-Za-z_\-]{22}\.[0-9A-Za-z_\-]{43}" + _E, "sg."),
    _rule("mailgun-api-key", _B + r"key-[0-9a-f]{32}" + _E, "key-"),
    _rule("mailchimp-api-key", _B + r"[0-9a-f]{32}-us[0-9]{1,2}" + _E, "-us"),
    _rule("algolia-api-key", r"(?i)(?:algolia[\w.\-]{0,30}?(?:api|search)?[_\-]?key|x-algolia-api-key)" + _ASSIGN + r"(?P<secret>[0-9a-f]{32})(?![0-9a-f])", "algolia", "x-algolia"),  # noqa: E501
    _rule("algolia-api-key", r"""(?i)algoliasearch\(\s*['"][0-9A-Z]{10}['"]\s*,\s*['"](?P<secret>[0-9a-f]{32})['"]""", "algoliasearch"),  # noqa: E501
    _rule("here-api-key", r"(?i)(?<![0-9A-Za-z])api[_\-]?key" + _ASSIGN + r"(?P<secret>[0-9A-Za-z_\-]{43})" + _E, "api"),  # noqa: E501
    _rule("bing-maps-key", r"(?i)(?:bing[\w.\-]{0,20}?key|credentials)" + _ASSIGN + r"(?P<secret>[0-9A-Za-z_\-]{64})" + _E, "bing", "credentials"),  # noqa: E501
    _rule("bing-maps-key", r"(?i)virtualearth\.net/[^\s'\"<>]{0,200}?[?&]key=(?P<secret>[0-9A-Za-z_\-]{64})" + _E, "virtualearth"),  # noqa: E501
    _rule("sentry-dsn", r"https?://(?P<secret>[0-9a-f]{32}(?::[0-9a-f]{32})?)@[0-9A-Za-z.\-]+(?::\d+)?/\d+", "http"),  # noqa: E501
    _rule("recaptcha-site-key", _B + r"6L[0-9A-Za-z_\-]{38}" + _E, "6l"),
    _rule("anthropic-api-key", _B + r"sk-ant-(?:api|admin)\d\d-[0-9A-Za-z_\-]{80,}" + _E, "sk-ant-"),  # noqa: E501
    _rule("openai-api-key", _B + r"sk-(?:proj-|svcacct-|admin-)?[0-9A-Za-z_\-]{20,}T3BlbkFJ[0-9A-Za-z_\-]{20,}" + _E, "t3blbkfj"),  # noqa: E501
    _rule("openai-api-key", _B + r"sk-(?:proj|svcacct|admin)-[0-9A-Za-z_\-]{40,}" + _E, "sk-"),
    _rule("shopify-token", _B + r"shp(?:at|ca|pa|ss)_[0-9a-fA-F]{32}" + _E, "shp"),
    _rule("square-token", _B + r"sq0(?:atp|csp)-[0-9A-Za-z_\-]{22,43}" + _E, "sq0"),
    _rule("facebook-access-token", _B + r"EAA[BCGI][0-9A-Za-z]{80,}" + _E, "eaa"),
    _rule("twitter-bearer-token", _B + r"A{21}[0-9A-Za-z%]{30,}" + _E, "a" * 21),
    _rule("npm-token", _B + r"npm_[0-9A-Za-z]{36}" + _E, "npm_"),
    _rule("pypi-token", _B + r"pypi-AgEIcHlwaS5vcmc[0-9A-Za-z_\-]{50,}" + _E, "pypi-ageichlwas5vcmc"),  # noqa: E501
    _rule("discord-webhook", r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[0-9A-Za-z_\-]{60,}", "discord"),  # noqa: E501
    _rule("telegram-bot-token", r"(?<![0-9])\d{8,10}:AA[0-9A-Za-z_\-]{33}" + _E, ":aa"),
    _rule("digitalocean-token", _B + r"do[opr]_v1_[0-9a-f]{64}" + _E, "_v1_"),
    _rule("huggingface-token", _B + r"hf_[0-9A-Za-z]{34}" + _E, "hf_"),
    _rule("azure-storage-key", r"(?i)AccountKey=(?P<secret>[0-9A-Za-z+/]{86}==)", "accountkey="),
    _rule("heroku-api-key", r"(?i)heroku[\w.\-]{0,20}?key" + _ASSIGN + r"(?P<secret>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(?![0-9a-f])", "heroku"),  # noqa: E501
    _rule("newrelic-key", _B + r"(?:NRAK-[0-9A-Z]{27}|NRJS-[0-9a-f]{19})" + _E, "nrak-", "nrjs-"),
    _rule("dropbox-token", _B + r"sl\.[0-9A-Za-z_\-]{130,}" + _E, "sl."),
    _rule("postman-api-key", _B + r"PMAK-[0-9a-f]{24}-[0-9a-f]{34}" + _E, "pmak-"),
    _rule("linear-api-key", _B + r"lin_api_[0-9A-Za-z]{40}" + _E, "lin_api_"),
    _rule("jwt", _B + r"eyJ[0-9A-Za-z_\-]{8,}\.eyJ[0-9A-Za-z_\-]{8,}\.[0-9A-Za-z_\-]{8,}" + _E, "eyj"),  # noqa: E501
    _rule("generic-secret", r"(?i)(?<![0-9A-Za-z])(?:secret|client[_\-]?secret|access[_\-]?token|auth[_\-]?token|api[_\-]?secret|private[_\-]?key)['\"]?\s*[:=]\s*['\"](?P<secret>[0-9A-Za-z_\-+/=.]{20,200})['\"]", "secret", "client", "access", "auth", "api", "private", check=_mixed),  # noqa: E501
)  # fmt: skip
KEY_KINDS: Final = tuple(dict.fromkeys(rule.kind for rule in KEY_RULES))

_AT = re.compile(r"@|%40")
_LOCAL_PART = re.compile(r"[0-9A-Za-z][0-9A-Za-z._%+\-]{0,63}\Z")
_DOMAIN = re.compile(
    r"(?:[0-9A-Za-z](?:[0-9A-Za-z\-]{0,61}[0-9A-Za-z])?\.)+([A-Za-z]{2,24})(?![0-9A-Za-z\-])"
)
_EMAIL_GLUE: Final = _TOKEN_CHARS | frozenset(".%+")
_RESERVED_TLDS: Final = frozenset({"test", "example", "invalid", "localhost"})
"""RFC 2606/6761 names: not in the public suffix list, but addresses there are addresses."""
# A phone number candidate: an optional "+CC" or "(area)", digit groups with separators
# between them. No look-behind in front, so the scan skips to digits at C speed; the
# boundaries (not glued to words, paths or parameters) are checked on the few candidates.
_CANDIDATE = re.compile(r"[+(\d][\d \u00a0.\-/()]{6,}+")
_PHONE = re.compile(r"\+\d{7,15}+|\+?\(?\d++\)?(?:[ \u00a0.\-/]{1,2}+\(?\d++\)?)++")
_GLUED_BEFORE: Final = frozenset("_/=#&%.:+-") | frozenset(
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
)
_GLUED_AFTER: Final = frozenset("_/%-") | _GLUED_BEFORE - frozenset("=#&.:+")
_DATE = re.compile(r"\d{4}[./\-]\d{1,2}[./\-]\d{1,2}|\d{1,2}[./\-]\d{1,2}[./\-]\d{2,4}")


@dataclass(frozen=True, slots=True)
class RedactionPolicy:
    """Which kinds are redacted (``[redact]``); ``region`` reads national phone formats."""

    keys: bool = True
    emails: bool = True
    phones: bool = True
    region: str = "US"
    skip: frozenset[str] = field(default_factory=frozenset)
    """Key kinds left alone."""

    @property
    def enabled(self) -> bool:
        return self.keys or self.emails or self.phones


DEFAULT_POLICY: Final = RedactionPolicy()


@dataclass(slots=True)
class Redacted:
    text: str
    counts: Counter[str]

    @property
    def changed(self) -> bool:
        return bool(self.counts)


def redact(
    text: str, policy: RedactionPolicy = DEFAULT_POLICY, region: str | None = None
) -> Redacted:
    """``text`` with every secret and personal datum ``policy`` covers replaced by its
    placeholder, and the count per kind. ``region`` (an ISO 3166 code, e.g. from the site's
    country-code domain) overrides the policy's for national phone formats."""
    counts: Counter[str] = Counter()
    if not text or not policy.enabled:
        return Redacted(text, counts)
    lower = text.lower()
    if policy.keys:
        for rule in KEY_RULES:
            if rule.kind in policy.skip or not any(a in lower for a in rule.anchors):
                continue
            before = len(text)
            text = _apply(rule, text, lower, counts)
            if len(text) != before:
                lower = text.lower()
    if policy.emails and ("@" in text or "%40" in lower):
        text = _emails(text, counts)
    if policy.phones:
        text = _phones(text, (region or policy.region).upper(), counts)
    return Redacted(text, counts)


def redact_url(url: str, policy: RedactionPolicy = DEFAULT_POLICY) -> Redacted:
    """A URL (a Location, a link) with its secrets and addresses redacted (no phones: digit
    runs in paths are identifiers far more often than numbers)."""
    if not policy.enabled:
        return Redacted(url, Counter())
    return redact(url, RedactionPolicy(policy.keys, policy.emails, False, skip=policy.skip))


def is_redacted(text: str) -> bool:
    """Does ``text`` hold a placeholder (raw, or percent-encoded as in a URL)?"""
    return "[REDACTED:" in text or "%5BREDACTED:" in text


def _apply(rule: KeyRule, text: str, lower: str, counts: Counter[str]) -> str:
    """``text`` with ``rule``'s matches replaced. A case-insensitive (context) rule is tried
    only where one of its anchors starts in ``lower``: scanning a page with an
    ``IGNORECASE`` pattern costs a millisecond, finding a literal costs microseconds."""
    group = "secret" if "secret" in rule.pattern.groupindex else 0
    if rule.anchored and len(lower) == len(text):
        matches = [
            match
            for at in sorted({i for a in rule.anchors for i in _occurrences(lower, a)})
            if (match := rule.pattern.match(text, at)) is not None
        ]
    else:
        matches = list(rule.pattern.finditer(text))
    spans: list[tuple[int, int, str]] = []
    for match in matches:
        start, end = match.span(group)
        if spans and start < spans[-1][1]:
            continue  # overlaps the previous match (two anchors of one rule)
        if rule.bounded and start and text[start - 1] in _TOKEN_CHARS:
            continue
        if rule.check is not None and not rule.check(match.group(group)):
            continue
        spans.append((start, end, rule.kind))
    if spans:
        counts[rule.kind] += len(spans)
    return _splice(text, spans)


def _occurrences(text: str, literal: str) -> list[int]:
    found: list[int] = []
    at = text.find(literal)
    while at >= 0:
        found.append(at)
        at = text.find(literal, at + 1)
    return found


@lru_cache(maxsize=1)
def _suffixes() -> PublicSuffixList:
    return PublicSuffixList(only_icann=True)


@lru_cache(maxsize=4096)
def _known_tld(tld: str) -> bool:
    tld = tld.lower()
    return tld in _RESERVED_TLDS or _suffixes().publicsuffix(tld, accept_unknown=False) is not None


def _splice(text: str, spans: list[tuple[int, int, str]]) -> str:
    """``text`` with each (start, end) span replaced by its placeholder kind's."""
    if not spans:
        return text
    parts: list[str] = []
    at = 0
    for start, end, kind in spans:
        parts += [text[at:start], placeholder(kind)]
        at = end
    parts.append(text[at:])
    return "".join(parts)


def _emails(text: str, counts: Counter[str]) -> str:
    """Found from each ``@`` (or ``%40``) outwards: the scan costs the number of ``@``."""
    spans: list[tuple[int, int, str]] = []
    done = 0
    for at in _AT.finditer(text):
        if at.start() < done:
            continue
        local = _LOCAL_PART.search(text, max(done, at.start() - 64), at.start())
        domain = _DOMAIN.match(text, at.end())
        if local is None or domain is None or not _known_tld(domain.group(1)):
            continue
        start = local.start()
        if start and text[start - 1] in _EMAIL_GLUE:
            continue
        spans.append((start, domain.end(), EMAIL))
        done = domain.end()
    if spans:
        counts[EMAIL] += len(spans)
    return _splice(text, spans)


def _phones(text: str, region_code: str, counts: Counter[str]) -> str:
    spans: list[tuple[int, int, str]] = []
    for region in _CANDIDATE.finditer(text):
        candidate = region.group(0).rstrip(" \u00a0.-/")
        if _DATE.fullmatch(candidate) is None and sum(map(str.isdigit, candidate)) >= 7:
            spans += _phones_in(text, region.start(), region.end(), region_code)
    if spans:
        counts[PHONE] += len(spans)
    return _splice(text, spans)


def _phones_in(text: str, begin: int, stop: int, region: str) -> list[tuple[int, int, str]]:
    spans: list[tuple[int, int, str]] = []
    for match in _PHONE.finditer(text, begin, stop):
        start, end = match.span()
        candidate = match.group(0)
        if start and text[start - 1] in _GLUED_BEFORE and text[start - 4 : start].lower() != "tel:":
            continue
        if end < len(text) and (
            text[end] in _GLUED_AFTER or (text[end] == "." and text[end + 1 : end + 2].isdigit())
        ):
            continue
        if _is_phone(candidate, region):
            spans.append((start, end, PHONE))
    return spans


def _is_phone(candidate: str, region: str) -> bool:
    digits = sum(map(str.isdigit, candidate))
    if not 7 <= digits <= 15 or _DATE.fullmatch(candidate):
        return False
    international = candidate.startswith("+")
    if not international and candidate.isdigit():
        return False  # a bare run of digits: an id, a price, a timestamp
    try:
        number = phonenumbers.parse(candidate, None if international else region)
    except phonenumbers.NumberParseException:
        return False
    return bool(phonenumbers.is_valid_number(number))


def region_of(host: str, default: str) -> str:
    """The phone region a site's country-code domain suggests (``.de``: DE), else ``default``."""
    tld = host.rsplit(".", 1)[-1].upper()
    if tld == "UK":
        return "GB"
    if len(tld) == 2 and tld in _REGIONS:
        return tld
    return default


_REGIONS: Final = frozenset(phonenumbers.SUPPORTED_REGIONS)
