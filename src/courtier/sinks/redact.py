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
- **Cost**: a rule runs only when one of its ``anchors`` occurs (as the pattern spells it; a
  case-insensitive rule's lower-case anchors in the lower-cased text), so a page with no
  ``AIza`` never pays for the Google pattern; which anchors occur is looked up once per text
  (again only after a rule changed it). ``redact_url`` first asks one precompiled pattern of
  every anchor (and ``@``, ``%40``) whether anything could match at all: a URL or header
  value with nothing secret-looking costs about a microsecond. Phone candidates are found
  by one regular expression (RE2 on the UTF-8 of a text whose digits are ASCII) and only
  those are given to ``phonenumbers``; a context rule looks for the anchors the scan found.
- **How wide**: each kind's lengths and character classes are the union of what the major
  open scanners accept for it (gitleaks, TruffleHog, detect-secrets; e.g. SendGrid's
  ``SG.`` + 20-24 + ``.`` + 39-50, or one run of 66), taken for tokens that carry the rule's
  own literal prefix (the anchor): a scanner's other prefixes, its keyword-context
  requirements and its case folding of the prefix are not adopted. The sources are named
  beside the table.
- **Near misses stay**: those ranges with boundaries on both sides (an ``AIza`` string one
  character short is not a key, nor is one a character too long), a known top-level domain for
  e-mail (``logo@2x.png`` is a file name), dates and bare digit runs are not phone numbers.
- ``RedactionPolicy`` turns kinds on and off (``[redact]``); it is a plain value, so a parse
  worker gets it with each job. Everything here is pure and thread/process safe.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Final

import phonenumbers
import re2
from ahocorasick_rs import AhoCorasick
from publicsuffixlist import PublicSuffixList

from courtier.runtime.ascii_regex import digits_all_ascii

EMAIL: Final = "email"
PHONE: Final = "phone"


def placeholder(kind: str) -> str:
    return f"[REDACTED:{kind}]"


@dataclass(frozen=True, slots=True)
class KeyRule:
    kind: str
    pattern: re.Pattern[str]
    anchors: tuple[str, ...]
    """Literals one of which every match contains (the cheap pre-check): as the pattern spells
    them, lower-case for a case-insensitive rule (looked for in the lower-cased text)."""
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
    kind: str,
    pattern: str,
    *anchors: str,
    check: Callable[[str], bool] | None = None,
    bounded: bool | None = None,
) -> KeyRule:
    anchored = pattern.startswith("(?i)")
    if bounded is None:  # a URL or PEM block starts anywhere; a token after a token boundary
        bounded = not anchored and not pattern.startswith(("http", "-----", r"(?<"))
    assert not anchored or all(a == a.lower() for a in anchors), kind
    return KeyRule(kind, re.compile(pattern), anchors, check, bounded, anchored)


_TOKEN_CHARS: Final = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_-")


def _json_parts(token: str) -> bool:
    """detect-secrets' test of a JWT-like token: its first two parts are base64url JSON."""
    for part in token.split(".")[:2]:
        if len(part) % 4 == 1:
            return False
        try:
            json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
        except (ValueError, binascii.Error, RecursionError):  # UnicodeDecodeError is a ValueError
            return False
    return True


# A Slack webhook's path (a literal in front, so the scan skips to "hooks.slack.com" at C speed).
_SLACK_HOOK: Final = r"hooks\.slack\.com/(?:(?:services|workflows|triggers)/[0-9A-Za-z_/+\-]{20,}|services/T[0-9A-Za-z_]+/B[0-9A-Za-z_]+/[0-9A-Za-z_]+)"  # noqa: E501

_PEM_END: Final = r"-{4,5}\s*END[ A-Z0-9_-]*PRIVATE KEY(?: BLOCK)?\s*-----"
_PEM_CLOSED: Final = re.compile(_PEM_END + r"\Z")


def _pem_closed(block: str) -> bool:
    """The private-key pattern's match ends at an END line, not at the end of the text (its
    second branch takes the rest of a text with no END after a BEGIN, so that a page of
    unterminated headers costs one scan, not one scan per header)."""
    return _PEM_CLOSED.search(block) is not None


# Ranges: per kind, the union of what gitleaks (its config/gitleaks.toml), TruffleHog (its
# pkg/detectors) and Yelp's detect-secrets (its plugins) accept, for tokens carrying the
# rule's own prefix. Where a scanner widened ours:
#   private key: body of any length (gitleaks, TruffleHog), "KEY BLOCK" and words in the
#     BEGIN/END lines (gitleaks, TruffleHog); GOCSPX-: 20.. (TruffleHog); AWS secret: "="
#     (gitleaks, detect-secrets); mapbox sk.eyJ: 80..240 after "sk." (TruffleHog); GitHub:
#     36..255 with "_" (TruffleHog); GitLab: 20..50 (detect-secrets), "=" (TruffleHog), the
#     routable 27..300 "." 9 (gitleaks, TruffleHog); Slack webhook: no or http scheme, "+"
#     (gitleaks), T…/B…/… of any length (detect-secrets); Slack token: 8.. (gitleaks),
#     unbounded (TruffleHog, detect-secrets); Twilio SK: letters (TruffleHog), AC: a-z
#     (detect-secrets); SendGrid: 20..24 "." 39..50 (TruffleHog), one run of 66 (gitleaks);
#     Mailgun: a-z (TruffleHog), A-F (gitleaks); Mailchimp: a-z (detect-secrets), A-F
#     (gitleaks); Algolia: any letter (gitleaks, TruffleHog); OpenAI: 1.. on each side of
#     T3BlbkFJ (TruffleHog); Square sq0atp: 22..60 (gitleaks), sq0csp: 22..50 (TruffleHog),
#     "\" (detect-secrets); Facebook: EAAM (gitleaks); Telegram: 5..16 digits (gitleaks);
#     Doppler: 40..44 (TruffleHog); Grafana: "={0,3}" (gitleaks), glsa_ 41 of [0-9A-Za-z_]
#     (TruffleHog); Pulumi: a-z (TruffleHog); RubyGems: a-z and "A" (TruffleHog's class);
#     Azure: 86..1000 + "==", a quote (detect-secrets), 86..88 with "-" (TruffleHog); New
#     Relic NRAK-: a-z (gitleaks), 42 with "_" "." (TruffleHog), NRJS-: A-F (gitleaks);
#     Dropbox: "=" (gitleaks); Postman: any 59 (TruffleHog); JWT: payload "ey" + 12..
#     (TruffleHog), no signature and "/" "\" (gitleaks), any lengths when header and payload
#     decode to JSON (detect-secrets); generic: 10.. (gitleaks).
# The rest already held every scanner's range. Where none has a rule (reCAPTCHA, Bing Maps,
# Sentry DSNs, Stripe webhook secrets, Google OAuth tokens) the vendors' formats. Not adopted:
# other prefixes (xapp-, dp.st., HRKU-, NRII-, EAAA, a JWT's ewogIC, a Telegram token's
# second part without "AA", a Mapbox pk. without eyJ), other context words (Azure's
# StorageKey), HERE's any-non-space class (only next to a "hereapi" keyword), npm_ followed by
# anything (only in an .npmrc line), upper/lower-case variants of a prefix. Boundary tests:
# tests/sinks/test_redact_bounds.py.
KEY_RULES: Final[tuple[KeyRule, ...]] = (
    _rule("private-key", r"-----\s*BEGIN[ A-Z0-9_-]*PRIVATE KEY(?: BLOCK)?\s*-----(?:[\s\S]*?" + _PEM_END + r"|[\s\S]*+)", "PRIVATE KEY", check=_pem_closed),  # noqa: E501
    _rule("google-api-key", _B + r"AIza[0-9A-Za-z_\-]{35}" + _E, "AIza"),
    _rule("google-oauth-secret", _B + r"GOCSPX-[0-9A-Za-z_\-]{20,}" + _E, "GOCSPX-"),
    _rule("google-oauth-token", _B + r"ya29\.[0-9A-Za-z_\-]{30,}" + _E, "ya29."),
    _rule("aws-access-key-id", _B + r"(?:A3T[0-9A-Z]|AKIA|ASIA|ABIA|ACCA|AIDA|AROA)[0-9A-Z]{16}" + _E, "A3T", "AKIA", "ASIA", "ABIA", "ACCA", "AIDA", "AROA"),  # noqa: E501
    _rule("aws-secret-key", r"(?i)aws[\w\-.]{0,20}?secret[\w\-.]{0,20}?" + _ASSIGN + r"(?P<secret>[0-9A-Za-z/+=]{40})(?![0-9A-Za-z/+])", "aws"),  # noqa: E501
    _rule("stripe-secret-key", _B + r"(?:sk|rk)_(?:live|test|prod)_[0-9A-Za-z]{10,}" + _E, "k_live_", "k_test_", "k_prod_"),  # noqa: E501
    _rule("stripe-publishable-key", _B + r"pk_(?:live|test)_[0-9A-Za-z]{16,}" + _E, "k_live_", "k_test_"),  # noqa: E501
    _rule("stripe-webhook-secret", _B + r"whsec_[0-9A-Za-z]{24,}" + _E, "whsec_"),
    _rule("mapbox-token", _B + r"(?:pk|sk|tk)\.eyJ[0-9A-Za-z_\-]{10,}\.[0-9A-Za-z_\-]{20,}" + _E, "k.eyJ"),  # noqa: E501
    _rule("mapbox-token", _B + r"sk\.eyJ[0-9A-Za-z.\-]{77,237}" + _E, "sk.eyJ"),
    _rule("github-token", _B + r"(?:ghp|gho|ghu|ghs|ghr)_[0-9A-Za-z_]{36,255}" + _E, "ghp_", "gho_", "ghu_", "ghs_", "ghr_"),  # noqa: E501
    _rule("github-token", _B + r"github_pat_[0-9A-Za-z_]{36,255}" + _E, "github_pat_"),
    _rule("gitlab-token", _B + r"glpat-(?:[0-9A-Za-z_\-]{27,300}\.[0-9a-z]{9}|[0-9A-Za-z_\-=]{20,50})" + _E, "glpat-"),  # noqa: E501
    _rule("slack-webhook", r"https?://" + _SLACK_HOOK, "hooks.slack.com"),
    _rule("slack-webhook", _SLACK_HOOK, "hooks.slack.com", bounded=False),  # no scheme: gitleaks
    _rule("slack-token", _B + r"xox[abposre]-[0-9A-Za-z\-]{8,}" + _E, "xox"),
    _rule("twilio-api-key", _B + r"SK[0-9A-Za-z]{32}" + _E, "SK"),
    _rule("twilio-account-sid", _B + r"AC[0-9a-z]{32}" + _E, "AC"),
    _rule("sendgrid-api-key", _B + r"SG\.(?:[0-9A-Za-z_\-]{20,24}\.[0-9A-Za-z_\-]{39,50}|[0-9A-Za-z_\-=.]{66})" + _E, "SG."),  # noqa: E501
    _rule("mailgun-api-key", _B + r"key-[0-9a-zA-F]{32}" + _E, "key-"),
    _rule("mailchimp-api-key", _B + r"[0-9a-zA-F]{32}-us[0-9]{1,2}" + _E, "-us"),
    _rule("algolia-api-key", r"(?i)(?:algolia[\w.\-]{0,30}?(?:api|search)?[_\-]?key|x-algolia-api-key)" + _ASSIGN + r"(?P<secret>[0-9a-z]{32}(?![0-9a-z])|[0-9a-f]{32}(?![0-9a-f]))", "algolia", "x-algolia"),  # noqa: E501
    _rule("algolia-api-key", r"""(?i)algoliasearch\(\s*['"][0-9A-Z]{10}['"]\s*,\s*['"](?P<secret>[0-9a-z]{32})['"]""", "algoliasearch"),  # noqa: E501
    _rule("here-api-key", r"(?i)(?<![0-9A-Za-z])api[_\-]?key" + _ASSIGN + r"(?P<secret>[0-9A-Za-z_\-]{43})" + _E, "api"),  # noqa: E501
    _rule("bing-maps-key", r"(?i)(?:bing[\w.\-]{0,20}?key|credentials)" + _ASSIGN + r"(?P<secret>[0-9A-Za-z_\-]{64})" + _E, "bing", "credentials"),  # noqa: E501
    _rule("bing-maps-key", r"(?i)virtualearth\.net/[^\s'\"<>]{0,200}?[?&]key=(?P<secret>[0-9A-Za-z_\-]{64})" + _E, "virtualearth"),  # noqa: E501
    _rule("sentry-dsn", r"https?://(?P<secret>[0-9a-f]{32}(?::[0-9a-f]{32})?)@[0-9A-Za-z.\-]+(?::\d+)?/\d+", "@"),  # noqa: E501
    _rule("recaptcha-site-key", _B + r"6L[0-9A-Za-z_\-]{38}" + _E, "6L"),
    _rule("anthropic-api-key", _B + r"sk-ant-(?:api|admin)\d\d-[0-9A-Za-z_\-]{80,}" + _E, "sk-ant-"),  # noqa: E501
    _rule("openai-api-key", _B + r"sk-[0-9A-Za-z_\-]+T3BlbkFJ[0-9A-Za-z_\-]+" + _E, "T3BlbkFJ"),
    _rule("openai-api-key", _B + r"sk-(?:proj|svcacct|admin)-[0-9A-Za-z_\-]{40,}" + _E, "sk-proj-", "sk-svcacct-", "sk-admin-"),  # noqa: E501
    _rule("shopify-token", _B + r"shp(?:at|ca|pa|ss)_[0-9a-fA-F]{32}" + _E, "shp"),
    _rule("square-token", _B + r"sq0atp-[0-9A-Za-z_\-]{22,60}" + _E, "sq0atp-"),
    _rule("square-token", _B + r"sq0csp-[0-9A-Za-z_\\\-]{22,50}" + _E, "sq0csp-"),
    _rule("facebook-access-token", _B + r"EAA[BCGIM][0-9A-Za-z]{80,}" + _E, "EAA"),
    _rule("twitter-bearer-token", _B + r"A{21}[0-9A-Za-z%]{30,}" + _E, "A" * 21),
    _rule("npm-token", _B + r"npm_[0-9A-Za-z]{36}" + _E, "npm_"),
    _rule("pypi-token", _B + r"pypi-AgEIcHlwaS5vcmc[0-9A-Za-z_\-]{50,}" + _E, "pypi-AgEIcHlwaS5vcmc"),  # noqa: E501
    _rule("discord-webhook", r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[0-9A-Za-z_\-]{60,}", "discord"),  # noqa: E501
    _rule("telegram-bot-token", r"(?<![0-9])\d{5,16}:AA[0-9A-Za-z_\-]{33}" + _E, ":AA"),
    _rule("digitalocean-token", _B + r"do[opr]_v1_[0-9a-f]{64}" + _E, "_v1_"),
    _rule("huggingface-token", _B + r"(?:hf_|api_org_)[0-9A-Za-z]{34}" + _E, "hf_", "api_org_"),
    _rule("atlassian-api-token", _B + r"ATATT3[0-9A-Za-z_\-=]{186}" + _E, "ATATT3"),
    _rule("databricks-token", _B + r"dapi[0-9a-h]{32}(?:-\d)?" + _E, "dapi"),
    _rule("doppler-token", _B + r"dp\.pt\.[0-9A-Za-z]{40,44}" + _E, "dp.pt."),
    _rule("grafana-token", _B + r"(?:glc_[0-9A-Za-z+/]{32,400}={0,3}|glsa_[0-9A-Za-z_]{41})" + _E, "glc_", "glsa_"),  # noqa: E501
    _rule("vault-token", _B + r"hvs\.[0-9A-Za-z_\-]{90,120}" + _E, "hvs."),
    _rule("pulumi-token", _B + r"pul-[0-9a-z]{40}" + _E, "pul-"),
    _rule("contentful-token", _B + r"CFPAT-[0-9A-Za-z_\-]{43}" + _E, "CFPAT-"),
    _rule("rubygems-token", _B + r"rubygems_[0-9a-zA]{48}" + _E, "rubygems_"),
    _rule("planetscale-token", _B + r"pscale_(?:tkn|pw|oauth)_[0-9A-Za-z_=.\-]{32,64}" + _E, "pscale_"),  # noqa: E501
    _rule("sentry-token", _B + r"(?:sntrys_eyJ[0-9A-Za-z+/=_]{60,}|sntryu_[0-9a-f]{64})" + _E, "sntrys_", "sntryu_"),  # noqa: E501
    _rule("age-secret-key", _B + r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}" + _E, "AGE-SECRET-KEY-1"),  # noqa: E501
    _rule("azure-storage-key", r"""(?i)AccountKey=\s*['"]?(?P<secret>[0-9A-Za-z+/]{86,1000}==|[0-9A-Za-z+/\-]{86,88}={0,2})""", "accountkey="),  # noqa: E501
    _rule("heroku-api-key", r"(?i)heroku[\w.\-]{0,20}?key" + _ASSIGN + r"(?P<secret>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(?![0-9a-f])", "heroku"),  # noqa: E501
    _rule("newrelic-key", _B + r"(?:NRAK-(?:[0-9A-Za-z]{27}|[0-9A-Za-z_.]{42})|NRJS-[0-9a-fA-F]{19})" + _E, "NRAK-", "NRJS-"),  # noqa: E501
    _rule("dropbox-token", _B + r"sl\.[0-9A-Za-z_\-=]{130,}" + _E, "sl."),
    _rule("postman-api-key", _B + r"PMAK-[0-9A-Za-z\-]{59}" + _E, "PMAK-"),
    _rule("linear-api-key", _B + r"lin_api_[0-9A-Za-z]{40}" + _E, "lin_api_"),
    _rule("jwt", _B + r"eyJ[0-9A-Za-z_\-]{8,}\.eyJ[0-9A-Za-z_\-]{8,}\.[0-9A-Za-z_\-]{8,}" + _E, "eyJ"),  # noqa: E501
    _rule("jwt", _B + r"eyJ[0-9A-Za-z_\-]{12,}\.ey[0-9A-Za-z_\-]{12,}\.[0-9A-Za-z_\-]{12,}" + _E, "eyJ"),  # noqa: E501
    _rule("jwt", _B + r"eyJ[0-9A-Za-z]{16,}\.ey[0-9A-Za-z/\\_\-]{17,}\.(?:[0-9A-Za-z/\\_\-]{10,}={0,2})?" + _E, "eyJ"),  # noqa: E501
    _rule("jwt", _B + r"eyJ[0-9A-Za-z_=\-]+\.[0-9A-Za-z_=\-]+(?:\.[0-9A-Za-z_\-+/=.]*)?" + _E, "eyJ", check=_json_parts),  # noqa: E501
    _rule("generic-secret", r"(?i)(?<![0-9A-Za-z])(?:secret|client[_\-]?secret|access[_\-]?token|auth[_\-]?token|api[_\-]?secret|private[_\-]?key)['\"]?\s*[:=]\s*['\"](?P<secret>[0-9A-Za-z_\-+/=.]{10,200})['\"]", "secret", "client", "access", "auth", "api", "private", check=_mixed),  # noqa: E501
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
_CANDIDATE: Final = r"[+(\d][\d \u00a0.\-/()]{6,}+"
_PHONE: Final = r"\+\d{7,15}+|\+?\(?\d++\)?(?:[ \u00a0.\-/]{1,2}+\(?\d++\)?)++"
_GLUED_BEFORE: Final = frozenset("_/=#&%.:+-") | frozenset(
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
)
_GLUED_AFTER: Final = frozenset("_/%-") | _GLUED_BEFORE - frozenset("=#&.:+")
_DATE: Final = r"\d{4}[./\-]\d{1,2}[./\-]\d{1,2}|\d{1,2}[./\-]\d{1,2}[./\-]\d{2,4}"


_CANDIDATES: Final = re.compile(_CANDIDATE)
"""For a text with digits beyond ASCII; any other text's candidates are RE2's
(``_UTF8_CANDIDATE``)."""
_PHONES: Final = re.compile(_PHONE)
_DATES: Final = re.compile(_DATE)


def _utf8_candidate_pattern() -> re2._Regexp[bytes]:
    """``_CANDIDATE`` for the UTF-8 bytes of a text whose digits are all ASCII: RE2's DFA
    finds the candidates of a 6 KB page in a third of the time ``re`` takes (its scan stops
    at every digit and ``(``). A byte of an ASCII character is never part of another
    character's UTF-8, and ``\\xc2\\xa0`` is exactly U+00A0, so the matches are the pattern's
    (the possessive run of the original changes nothing: nothing follows it)."""
    options = re2.Options()
    options.encoding = re2.Options.Encoding.LATIN1  # bytes as they are, not UTF-8 characters
    return re2.compile(rb"[+(0-9](?:[0-9 .\-/()]|\xc2\xa0){6,}", options)


_UTF8_CANDIDATE: Final = _utf8_candidate_pattern()


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
        text, lower = _keys(_rules_of(policy.skip), text, lower, counts)
    if policy.emails and ("@" in text or "%40" in lower):
        text = _emails(text, counts)
    if policy.phones:
        text = _phones(text, (region or policy.region).upper(), counts)
    return Redacted(text, counts)


def redact_url(url: str, policy: RedactionPolicy = DEFAULT_POLICY) -> Redacted:
    """A URL (a Location, a link) with its secrets and addresses redacted (no phones: digit
    runs in paths are identifiers far more often than numbers)."""
    global _last_plan
    plan = _last_plan
    if plan[0] is not policy:  # hashing the policy for the cache costs as much as the screen
        plan = _last_plan = (policy, *_url_plan(policy))
    _, for_urls, screen = plan
    if screen.search(url) is None and screen.search(url.lower(), folded=True) is None:
        return Redacted(url, Counter())
    return redact(url, for_urls)


@dataclass(frozen=True, slots=True)
class _Screen:
    """Could anything match? One precompiled pattern of literals per case: no hit, no secret."""

    exact: re.Pattern[str]
    folded: re.Pattern[str]

    def search(self, text: str, *, folded: bool = False) -> re.Match[str] | None:
        return (self.folded if folded else self.exact).search(text)


@lru_cache(maxsize=64)
def _url_plan(policy: RedactionPolicy) -> tuple[RedactionPolicy, _Screen]:
    """The policy ``redact_url`` runs for ``policy`` (no phones) and its screen: every anchor
    of the rules it runs, and the e-mail markers when it looks for addresses."""
    for_urls = RedactionPolicy(policy.keys, policy.emails, False, skip=policy.skip)
    rules = _rules_of(policy.skip).rules if policy.keys else ()
    exact = [a for rule in rules if not rule.anchored for a in rule.anchors]
    folded = [a for rule in rules if rule.anchored for a in rule.anchors]
    if policy.emails:
        exact.append("@")
        folded.append("%40")
    return for_urls, _Screen(_literals(exact), _literals(folded))


def _literals(literals: list[str]) -> re.Pattern[str]:
    """A pattern that finds any of ``literals``, as a trie: the regular expression engine then
    tries one branch per distinct first character, not one per literal."""
    if not literals:
        return re.compile(r"(?!)")
    return re.compile(_trie(sorted(set(literals))))


def _trie(words: list[str]) -> str:
    """``words`` (sorted, distinct, none empty) as one alternation sharing prefixes; a word
    that has another as its prefix is dropped, as finding the shorter one is enough."""
    branches: dict[str, list[str]] = {}
    for word in words:
        branches.setdefault(word[0], []).append(word[1:])
    parts = []
    for first, tails in branches.items():
        if "" in tails:
            parts.append(re.escape(first))
        else:
            rest = _trie(tails)
            parts.append(re.escape(first) + (f"(?:{rest})" if "|" in rest else rest))
    return "|".join(parts)


@dataclass(frozen=True, slots=True)
class _Rules:
    """The key rules a policy runs, in table order, with the rules each anchor stands for.

    Which anchors occur is found in one pass per text by an Aho-Corasick automaton
    (overlapping matches, so an anchor inside another's occurrence is found too): ~25 us on
    a 6 KB page where one ``in`` scan per anchor took ~220 us, in the parse worker that
    every page waits for."""

    rules: tuple[KeyRule, ...]
    exact: Mapping[str, tuple[int, ...]]
    folded: Mapping[str, tuple[int, ...]]
    exact_scan: AhoCorasick | None
    folded_scan: AhoCorasick | None

    def occurring(self, text: str, lower: str, start: int) -> tuple[list[int], set[str]]:
        """The rules from ``start`` on one of whose anchors occurs, in table order, and the
        anchors of context rules that occur (``_apply`` looks only for those)."""
        try:
            return self._occurring(text, lower, start)
        except UnicodeEncodeError:  # lone surrogates: bytes the page's encoding could not read
            return self._occurring(_scannable(text), _scannable(lower), start)

    def _occurring(self, text: str, lower: str, start: int) -> tuple[list[int], set[str]]:
        found: set[int] = set()
        folded: set[str] = set()
        if self.exact_scan is not None:
            for anchor in set(self.exact_scan.find_matches_as_strings(text, overlapping=True)):
                found.update(self.exact[anchor])
        if self.folded_scan is not None:
            folded.update(self.folded_scan.find_matches_as_strings(lower, overlapping=True))
            for anchor in folded:
                found.update(self.folded[anchor])
        return sorted(i for i in found if i >= start), folded


@lru_cache(maxsize=64)
def _rules_of(skip: frozenset[str]) -> _Rules:
    rules = tuple(rule for rule in KEY_RULES if rule.kind not in skip)
    index: tuple[dict[str, list[int]], dict[str, list[int]]] = ({}, {})
    for i, rule in enumerate(rules):
        for anchor in rule.anchors:
            index[rule.anchored].setdefault(anchor, []).append(i)
    exact, folded = ({a: tuple(ids) for a, ids in side.items()} for side in index)
    return _Rules(
        rules,
        exact,
        folded,
        AhoCorasick(list(exact)) if exact else None,
        AhoCorasick(list(folded)) if folded else None,
    )


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _scannable(text: str) -> str:
    """``text`` as the anchor scan can take it: bytes a page's encoding could not read are
    lone surrogates (``decode``), which the scanner refuses (it encodes to UTF-8); each
    becomes U+FFFD (one character for one: what the scan returns is anchors, not places)."""
    return _LONE_SURROGATE.sub("\ufffd", text)


def _keys(rules: _Rules, text: str, lower: str, counts: Counter[str]) -> tuple[str, str]:
    """Every rule in table order over the text the previous rules left. Which rules can match
    is looked up once, and again after a rule changed the text (a placeholder holds words
    that are anchors, ``key-`` or ``secret``, so later rules see exactly what they did)."""
    start = 0
    while True:
        occurring, folded = rules.occurring(text, lower, start)
        for i in occurring:
            redacted = _apply(rules.rules[i], text, lower, counts, folded)
            if redacted is not text:
                text, lower, start = redacted, redacted.lower(), i + 1
                break
        else:
            return text, lower


def is_redacted(text: str) -> bool:
    """Does ``text`` hold a placeholder (raw, or percent-encoded as in a URL)?"""
    return "[REDACTED:" in text or "%5BREDACTED:" in text


def _apply(
    rule: KeyRule,
    text: str,
    lower: str,
    counts: Counter[str],
    present: set[str] | None = None,
) -> str:
    """``text`` with ``rule``'s matches replaced. A case-insensitive (context) rule is tried
    only where one of its anchors starts in ``lower``: scanning a page with an
    ``IGNORECASE`` pattern costs a millisecond, finding a literal costs microseconds.
    ``present``: the anchors known to occur in ``lower`` (None: any may); looking for the
    others too cost a 6 KB page ~20 us (six anchors' ``find`` where one occurs)."""
    group = "secret" if "secret" in rule.pattern.groupindex else 0
    if rule.anchored and len(lower) == len(text):
        anchors = rule.anchors if present is None else [a for a in rule.anchors if a in present]
        matches = [
            match
            for at in sorted({i for a in anchors for i in _occurrences(lower, a)})
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
    for begin, end in _candidates(text):
        candidate = text[begin:end].rstrip(" \u00a0.-/")
        if _DATES.fullmatch(candidate) is None and sum(map(str.isdigit, candidate)) >= 7:
            spans += _phones_in(text, begin, end, region_code)
    if spans:
        counts[PHONE] += len(spans)
    return _splice(text, spans)


def _candidates(text: str) -> Iterator[tuple[int, int]]:
    """Where ``_CANDIDATE`` matches in ``text`` (character offsets)."""
    if not digits_all_ascii(text):  # digits beyond ASCII: only ``re`` knows them
        for match in _CANDIDATES.finditer(text):
            yield match.span()
        return
    if text.isascii():
        for match in _UTF8_CANDIDATE.finditer(text.encode("ascii")):
            yield match.span()
        return
    data = text.encode("utf-8", "surrogatepass")
    byte_at = char_at = 0  # the last match's end, in both: each byte read once
    for match in _UTF8_CANDIDATE.finditer(data):
        start, end = match.span()
        char_at += len(data[byte_at:start].decode("utf-8", "surrogatepass"))
        length = len(data[start:end].decode("utf-8", "surrogatepass"))
        yield char_at, char_at + length
        byte_at, char_at = end, char_at + length


def _phones_in(text: str, begin: int, stop: int, region: str) -> list[tuple[int, int, str]]:
    spans: list[tuple[int, int, str]] = []
    for match in _PHONES.finditer(text, begin, stop):
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
    if not 7 <= digits <= 15 or _DATES.fullmatch(candidate):
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


# The plan of the policy redact_url saw last: one policy per crawl, so almost always a hit.
# Replaced as a whole tuple, so a thread reads an old plan or a new one, never a mix.
_last_plan: tuple[RedactionPolicy, RedactionPolicy, _Screen] = (
    DEFAULT_POLICY,
    *_url_plan(DEFAULT_POLICY),
)
