"""Key rules at their boundary lengths: the shortest and longest a rule accepts are redacted,
one character shorter or longer is not (or, where the longer or shorter token still holds an
accepted one, exactly that one goes). The lengths are the union of what gitleaks, TruffleHog
and detect-secrets accept for the kind (``courtier.sinks.redact``, the comment above
``KEY_RULES``); a new kind needs one row in ``BOUNDS``."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pytest

from courtier.sinks import redact as r
from courtier.sinks.redact import KEY_KINDS, KEY_RULES, RedactionPolicy, placeholder, redact
from key_samples import B62, HEX, rep

DIGITS = "0123456789"
LOWER = "q0w1e2r3t4y5u6i7o8p9zxcvbnmlkjhg"  # a-z beyond hex, and digits
MIXED_HEX = "0a1B2c3D4e5F6z7y8x9w"  # a-z and A-F: Mailgun, Mailchimp
UPPER = "QWERTYUIOPASDFGH2345"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"
RUBY = "A0b1c2d3e4f5g6z7"  # TruffleHog's class: a-z, "A" and digits
PROBE = 20_000  # extra characters tried where no scanner has an upper bound
HEADER = "eyJhbGciOiJIUzI1NiJ9"  # {"alg":"HS256"}
PAYLOAD = "eyJzdWIiOiIxMjM0NTY3ODkwIn0"  # {"sub":"1234567890"}
LONG_PEM = "-----BEGIN EC PRIVATE KEY-----" + rep(B62, 12_000) + "-----END EC PRIVATE KEY-----"
AZURE = "DefaultEndpointsProtocol=https;AccountKey={};EndpointSuffix=core.windows.net"


@dataclass(frozen=True)
class Bound:
    """``template`` with ``{}`` replaced by ``alphabet`` repeated to a length: redacted as
    ``kind`` from ``shortest`` to ``longest`` (None: no upper bound). One character outside:
    ``shorter``/``longer`` None, the text stays as it is; a number ``k``, the token still holds
    an accepted one, so one placeholder appears and only the last ``k`` characters of the
    varied part (and what follows it in the template) stay."""

    kind: str
    template: str
    alphabet: str
    shortest: int
    longest: int | None
    shorter: int | None = None
    longer: int | None = None

    def text(self, n: int) -> tuple[str, str]:
        part = rep(self.alphabet, n)
        return f"see {self.template.format(part)} now", part


BOUNDS: list[Bound] = [
    Bound("private-key", "-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----", B62, 0, None),  # noqa: E501
    Bound("private-key", "-----BEGIN PGP PRIVATE KEY BLOCK-----\n{}\n-----END PGP PRIVATE KEY BLOCK-----", B62, 0, None),  # noqa: E501
    Bound("google-api-key", "AIza{}", B62 + "_-", 35, 35),
    Bound("google-oauth-secret", "GOCSPX-{}", B62 + "_-", 20, None),
    Bound("google-oauth-token", "ya29.{}", B62 + "_-", 30, None),
    Bound("aws-access-key-id", "AKIA{}", UPPER, 16, 16),
    Bound("aws-secret-key", 'aws_secret_access_key = "{}"', B62 + "/+=", 40, 40),
    Bound("stripe-secret-key", "sk_live_{}", B62, 10, None),
    Bound("stripe-publishable-key", "pk_live_{}", B62, 16, None),
    Bound("stripe-webhook-secret", "whsec_{}", B62, 24, None),
    Bound("mapbox-token", "pk.eyJ{}." + rep(B62, 22), B62, 10, None),
    Bound("mapbox-token", "pk.eyJ" + rep(B62, 10) + ".{}", B62, 20, None),
    Bound("mapbox-token", "sk.eyJ{}", B62, 77, 237),
    Bound("github-token", "ghp_{}", B62 + "_", 36, 255),
    Bound("github-token", "github_pat_{}", B62 + "_", 36, 255),
    Bound("gitlab-token", "glpat-{}", B62 + "_-", 20, 50),
    # routable: one shorter still holds a plain token (20..50), so its ".suffix" stays
    Bound("gitlab-token", "glpat-{}.ab1234567", B62 + "_-", 27, 300, shorter=0),
    Bound("slack-webhook", "https://hooks.slack.com/services/{}", B62 + "_/+-", 20, None),
    Bound("slack-webhook", "https://hooks.slack.com/services/T{}/B1/x", B62, 1, None),
    Bound("slack-token", "xoxb-{}", B62 + "-", 8, None),
    Bound("twilio-api-key", "SK{}", B62, 32, 32),
    Bound("twilio-account-sid", "AC{}", LOWER, 32, 32),
    Bound("sendgrid-api-key", "SG.{}." + rep(B62, 43), B62 + "_-", 20, 24),
    Bound("sendgrid-api-key", "SG." + rep(B62, 22) + ".{}", B62 + "_-", 39, 50),
    Bound("sendgrid-api-key", "SG.{}", B62 + "_-", 66, 66),
    Bound("mailgun-api-key", "key-{}", MIXED_HEX, 32, 32),
    Bound("mailchimp-api-key", "{}-us14", MIXED_HEX, 32, 32),
    Bound("mailchimp-api-key", rep(HEX, 32) + "-us{}", DIGITS, 1, 2),
    Bound("algolia-api-key", 'algoliaApiKey: "{}"', LOWER, 32, 32),
    Bound("algolia-api-key", "algoliasearch('ABCDEF1234', '{}')", LOWER, 32, 32),
    Bound("here-api-key", "https://geocode.search.hereapi.com/v1/geocode?apiKey={}", B62 + "_-", 43, 43),  # noqa: E501
    Bound("bing-maps-key", "credentials: '{}'", B62 + "_-", 64, 64),
    Bound("bing-maps-key", "https://dev.virtualearth.net/REST/v1/Locations?q=x&key={}", B62, 64, 64),  # noqa: E501
    Bound("sentry-dsn", "dsn: 'https://{}@o1.ingest.sentry.io/42'", HEX, 32, 32),
    Bound("recaptcha-site-key", "6L{}", B62 + "_-", 38, 38),
    Bound("anthropic-api-key", "sk-ant-api03-{}", B62 + "_-", 80, None),
    Bound("openai-api-key", "sk-{}T3BlbkFJ" + rep(B62, 20), B62, 1, None),
    Bound("openai-api-key", "sk-" + rep(B62, 20) + "T3BlbkFJ{}", B62, 1, None),
    Bound("openai-api-key", "sk-proj-{}", B62 + "_-", 40, None),
    Bound("shopify-token", "shpat_{}", HEX, 32, 32),
    Bound("square-token", "sq0atp-{}", B62 + "_-", 22, 60),
    Bound("square-token", "sq0csp-{}", B62 + "_-", 22, 50),
    Bound("facebook-access-token", "EAAM{}", B62, 80, None),
    Bound("twitter-bearer-token", "A" * 21 + "{}", B62 + "%", 30, None),
    Bound("npm-token", "npm_{}", B62, 36, 36),
    Bound("pypi-token", "pypi-AgEIcHlwaS5vcmc{}", B62 + "_-", 50, None),
    Bound("discord-webhook", "https://discord.com/api/webhooks/123456789012345678/{}", B62 + "_-", 60, None),  # noqa: E501
    Bound("telegram-bot-token", "bot{}:AA" + rep(B62 + "_-", 33) + "/sendMessage", DIGITS, 5, 16),
    Bound("telegram-bot-token", "bot123456789:AA{}/sendMessage", B62 + "_-", 33, 33),
    Bound("digitalocean-token", "dop_v1_{}", HEX, 64, 64),
    Bound("huggingface-token", "hf_{}", B62, 34, 34),
    Bound("atlassian-api-token", "ATATT3{}", B62 + "_-", 186, 186),
    Bound("databricks-token", "dapi{}", HEX + "gh", 32, 32),
    Bound("doppler-token", "dp.pt.{}", B62, 40, 44),
    Bound("grafana-token", "glc_{}", B62, 32, 400),
    # "=" is no token character: a fourth one is left after the three the key may end with
    Bound("grafana-token", "glc_" + rep(B62, 40) + "{}", "=", 0, 3, longer=1),
    Bound("grafana-token", "glsa_{}", B62 + "_", 41, 41),
    Bound("vault-token", "hvs.{}", B62 + "_-", 90, 120),
    Bound("pulumi-token", "pul-{}", LOWER, 40, 40),
    Bound("contentful-token", "CFPAT-{}", B62 + "_-", 43, 43),
    Bound("rubygems-token", "rubygems_{}", RUBY, 48, 48),
    Bound("planetscale-token", "pscale_tkn_{}", B62 + "_", 32, 64),
    Bound("sentry-token", "sntryu_{}", HEX, 64, 64),
    Bound("sentry-token", "sntrys_eyJ{}", B62, 60, None),
    Bound("age-secret-key", "AGE-SECRET-KEY-1{}", BECH32, 58, 58),
    # 86..1000 then "==" (detect-secrets); one longer still starts with TruffleHog's 86..88
    Bound("azure-storage-key", AZURE.replace("{}", "{}=="), B62 + "+/", 86, 1000, longer=1001 - 88),
    Bound("azure-storage-key", AZURE, B62 + "+/", 86, 88, longer=1),
    Bound("heroku-api-key", "HEROKU_API_KEY=01234567-89ab-cdef-0123-{}", HEX, 12, 12),
    Bound("newrelic-key", "NRAK-{}", B62, 27, 27),
    Bound("newrelic-key", "NRAK-{}", B62 + "_", 42, 42),
    Bound("newrelic-key", "NRJS-{}", HEX + "ABCDEF", 19, 19),
    Bound("dropbox-token", "sl.{}", B62 + "_-", 130, None),
    Bound("postman-api-key", "PMAK-{}", B62 + "-", 59, 59),
    Bound("linear-api-key", "lin_api_{}", B62, 40, 40),
    Bound("jwt", "eyJ{}." + PAYLOAD + ".SflKxwRJSMeKKF2QT4fw", B62, 8, None),
    Bound("jwt", HEADER + ".eyJ{}.SflKxwRJSMeKKF2QT4fw", B62, 8, None),
    Bound("jwt", "eyJ" + rep(B62, 8) + ".eyJ" + rep(B62, 8) + ".{}", B62, 8, None),
    # a header and payload that decode to JSON need no signature (gitleaks, detect-secrets)
    Bound("jwt", HEADER + "." + PAYLOAD + ".{}", B62, 0, None),
    Bound("generic-secret", 'client_secret: "{}"', B62, 10, 200),
]  # fmt: skip


def _ids(bounds: list[Bound]) -> list[str]:
    return [f"{b.kind}-{i}" for i, b in enumerate(bounds)]


def test_every_kind_has_a_row():
    assert {b.kind for b in BOUNDS} == set(KEY_KINDS)


def _redacted(bound: Bound, n: int) -> None:
    text, part = bound.text(n)
    result = redact(text, RedactionPolicy(emails=False, phones=False))
    assert result.counts == Counter({bound.kind: 1}), (n, result.text)
    assert placeholder(bound.kind) in result.text
    gone = part if len(part) >= 8 else bound.template.format(part)  # "a" is in a placeholder
    assert gone not in result.text, (n, result.text)


def _refused_or_kept(bound: Bound, n: int, keeps: int | None) -> None:
    text, part = bound.text(n)
    result = redact(text, RedactionPolicy(emails=False, phones=False))
    if keeps is None:
        assert result.text == text, (n, result.text)
        assert not result.counts
        return
    assert result.counts == Counter({bound.kind: 1}), (n, result.text)
    tail = bound.template.split("{}", 1)[1]
    assert result.text.endswith(part[len(part) - keeps :] + tail + " now"), (n, result.text)
    assert bound.template.format(part) not in result.text


@pytest.mark.parametrize("bound", BOUNDS, ids=_ids(BOUNDS))
def test_the_shortest_and_longest_accepted_are_redacted(bound: Bound) -> None:
    _redacted(bound, bound.shortest)
    _redacted(bound, bound.longest if bound.longest is not None else bound.shortest + PROBE)


@pytest.mark.parametrize("bound", BOUNDS, ids=_ids(BOUNDS))
def test_one_character_outside_is_not(bound: Bound) -> None:
    if bound.shortest > 0:
        _refused_or_kept(bound, bound.shortest - 1, bound.shorter)
    if bound.longest is not None:
        _refused_or_kept(bound, bound.longest + 1, bound.longer)


def test_a_sendgrid_key_with_a_42_character_second_part_is_redacted_every_time():
    """The held-out case: accepted by TruffleHog (20..24 "." 39..50), refused by the old
    exact 66; written 255 times into one document."""
    key = "SG." + rep(B62 + "_-", 22) + "." + rep(B62 + "_-", 42)
    text = "\n".join(f"row {i}: key={key};" for i in range(255))
    result = redact(text)
    assert key not in result.text
    assert result.counts == Counter({"sendgrid-api-key": 255})


@pytest.mark.parametrize(
    ("kind", "text"),
    [
        # characters a scanner accepts that the old classes did not
        ("aws-secret-key", 'aws_secret_access_key = "' + rep(B62, 39) + '="'),
        ("gitlab-token", "glpat-" + rep(B62, 19) + "="),
        ("dropbox-token", "sl." + rep(B62, 129) + "=x"),
        ("mapbox-token", "sk.eyJ" + rep(B62, 30) + "." + rep(B62, 10) + "." + rep(B62, 40)),
        ("square-token", "sq0csp-" + rep(B62, 20) + "\\" + rep(B62, 21)),
        ("newrelic-key", "NRAK-" + rep(B62, 20) + "_." + rep(B62, 20)),
        ("slack-webhook", "url: hooks.slack.com/services/" + rep(B62 + "+", 44)),
        ("slack-webhook", "http://hooks.slack.com/services/T0A/B0B/c"),
        ("azure-storage-key", "AccountKey= '" + rep(B62 + "+/", 600) + "=='"),
        ("azure-storage-key", "AccountKey=" + rep(B62 + "-", 88)),
        ("facebook-access-token", "EAAM" + rep(B62, 100)),
        # gitleaks: no signature, "/" and "\" in the payload; TruffleHog: a payload "eyI..."
        ("jwt", "eyJ" + rep(B62, 16) + ".ey" + rep(B62 + "/\\", 17) + "."),
        ("jwt", "eyJ" + rep(B62, 12) + ".eyI" + rep(B62, 11) + "." + rep(B62, 12)),
        # detect-secrets: any lengths once header and payload decode to JSON
        ("jwt", "eyJhIjowfQ.MA"),
        ("private-key", LONG_PEM),  # beyond the old 10,000 characters
    ],
)
def test_characters_and_forms_the_scanners_accept(kind: str, text: str) -> None:
    result = redact(f"x {text} y", RedactionPolicy(emails=False, phones=False))
    assert result.counts[kind] == 1, result.text


@pytest.mark.parametrize(
    "text",
    [
        "eyJhIjowfQ.M",  # a payload no base64 decodes
        "eyJhIjowfQ.bm90IGpzb24",  # "not json"
        "eyJ" + rep(B62, 7) + ".eyJ" + rep(B62, 8) + "." + rep(B62, 8),  # random, header short
        "-----BEGIN RSA PRIVATE KEY-----\n" + rep(B62, 64) + "\nno end line",
        "hooks.slack.com/services/" + rep(B62, 19),
        "AccountKey=" + rep(B62, 85) + "==",
        "sk-T3BlbkFJ" + rep(B62, 20),
        "12345678901234567:AA" + rep(B62, 33),  # 17 digits
        "1234:AA" + rep(B62, 33),  # 4
    ],
)
def test_near_misses_of_the_widened_rules_stay(text: str) -> None:
    result = redact(f"x {text} y", RedactionPolicy(emails=False, phones=False))
    assert result.text == f"x {text} y", result.counts


def test_unterminated_private_key_headers_cost_one_scan():
    """A page of BEGIN lines with no END after them: the rule gives up once, not once per
    header (each used to scan on up to 10,000 characters)."""
    text = ("-----BEGIN PRIVATE KEY-----" + "x" * 100) * 5_000
    rule = next(rule for rule in KEY_RULES if rule.kind == "private-key")
    assert len(list(rule.pattern.finditer(text))) == 1
    assert not redact(text).changed
    closed = "-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----"
    assert redact(text + closed).counts == Counter({"private-key": 1})


def _texts() -> list[str]:
    out = []
    for bound in BOUNDS:
        for n in (bound.shortest, bound.shortest - 1, bound.longest or bound.shortest + 50):
            if n >= 0:
                out.append(bound.text(n)[0])
    return out


def test_anchors_are_literals_every_match_contains():
    for text in _texts():
        for rule in KEY_RULES:
            for match in rule.pattern.finditer(text):
                found = match.group(0).lower() if rule.anchored else match.group(0)
                assert any(a in found for a in rule.anchors), (rule.kind, match.group(0)[:80])


def test_the_cheap_paths_agree_with_every_rule_on_the_boundaries():
    policy = RedactionPolicy(emails=False, phones=False)
    for text in _texts():
        counts: Counter[str] = Counter()
        expected = text
        for rule in KEY_RULES:
            expected = r._apply(rule, expected, expected.lower(), counts)
        result = redact(text, policy)
        assert (result.text, result.counts) == (expected, counts), text[:80]


def test_bounded_rules_end_at_a_token_boundary():
    """A rule that checks the character before its match checks the one after it too."""
    for rule in KEY_RULES:
        if rule.bounded:
            assert rule.pattern.pattern.endswith(r._E), rule.kind
