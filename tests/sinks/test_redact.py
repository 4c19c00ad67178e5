"""Redaction: every key variety has a tested pattern, near misses stay, personal data goes."""

from __future__ import annotations

import pytest

from courtier.sinks.redact import (
    KEY_KINDS,
    RedactionPolicy,
    is_redacted,
    placeholder,
    redact,
    redact_url,
    region_of,
)
from key_samples import B62, HEX, KEYS, rep


@pytest.mark.parametrize(
    ("kind", "template", "secret"), KEYS, ids=[f"{k[0]}-{i}" for i, k in enumerate(KEYS)]
)
def test_each_key_variety_is_replaced_by_its_typed_placeholder(kind, template, secret):
    text = template.format(secret)
    result = redact(text)
    assert secret not in result.text, result.text
    assert placeholder(kind) in result.text
    assert result.counts[kind] == 1


def test_the_table_covers_at_least_thirty_varieties_and_every_one_is_tested():
    tested = {kind for kind, _t, _s in KEYS}
    assert len(KEY_KINDS) >= 30
    assert tested == set(KEY_KINDS)


NEAR_MISSES = [
    "AIza" + rep(B62, 34),  # one character short of a Google key
    "xAIza" + rep(B62, 35),  # glued to a longer token
    "AKIA" + rep("QWERTYUIOP", 15),  # 15 characters after AKIA
    "sk_live_short",
    "pk.eyJ1short.x",
    "ghp_" + rep(B62, 20),
    "SK" + rep(HEX, 31),
    "data-sitekey-like 6Lc" + rep(B62, 20),
    "eyJhbGciOiJIUzI1NiJ9 is only a header",
    'secret: "password"',  # no digits: a word, not a key
    'token: "abcdefghijklmnopqrstuvwxyz"',  # letters only
    "https://example.com/path/12345678901234567890123456789012",
    "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----",
    "logo@2x.png and icon@3x.webp",  # retina image names, not addresses
    "user@localhost-ish",
    "version 1.2.3.4 built 2024-05-06, ISBN 978-3-16-148410-0",
    "order 12345678 shipped 12/05/2024 at 10:30, build 20240506123045",
    "192.168.100.200 and 10.0.0.1",
    "price 1 234 567,89 EUR",
]


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_look_alikes_stay(text):
    result = redact(text)
    assert result.text == text, result.counts
    assert not result.counts


@pytest.mark.parametrize(
    ("text", "address"),
    [
        ("write to jane.doe+news@example.com today", "jane.doe+news@example.com"),
        ("<a href='mailto:ops@mail.example.co.uk'>", "ops@mail.example.co.uk"),
        ("/unsubscribe?email=bob%40example.org&x=1", "bob%40example.org"),
        ("contact@shop.test", "contact@shop.test"),
    ],
)
def test_email_addresses_are_redacted(text, address):
    result = redact(text)
    assert address not in result.text
    assert result.counts["email"] == 1


@pytest.mark.parametrize(
    ("text", "number", "region"),
    [
        ("call +1 415-555-2671 now", "+1 415-555-2671", "US"),
        ("call (415) 555-2671 now", "(415) 555-2671", "US"),
        ("Tel. +49 30 901820", "+49 30 901820", "US"),
        ("Tel. 030 901820", "030 901820", "DE"),
        ("appelez le 01 42 68 53 00", "01 42 68 53 00", "FR"),
        ("<a href='tel:+442079460958'>", "+442079460958", "US"),
        ("+44 20 7946 0958", "+44 20 7946 0958", "US"),
    ],
)
def test_phone_numbers_in_international_and_national_formats_are_redacted(text, number, region):
    result = redact(text, region=region)
    assert number not in result.text, result.text
    assert result.counts["phone"] == 1


def test_kinds_are_turned_off_by_the_policy():
    text = "k=AIza" + rep(B62, 35) + " mail a@example.com call +1 415-555-2671"
    assert redact(text, RedactionPolicy(keys=False)).counts.keys() == {"email", "phone"}
    assert redact(text, RedactionPolicy(emails=False, phones=False)).counts.keys() == {
        "google-api-key"
    }
    skip = RedactionPolicy(skip=frozenset({"google-api-key"}))
    assert "google-api-key" not in redact(text, skip).counts
    off = RedactionPolicy(keys=False, emails=False, phones=False)
    assert redact(text, off).text == text


def test_urls_are_redacted_without_phone_guessing():
    url = "https://maps.example/js?key=AIza" + rep(B62, 35) + "&id=415-555-2671"
    result = redact_url(url)
    assert is_redacted(result.text) and "415-555-2671" in result.text
    assert is_redacted("/x?k=%5BREDACTED:email%5D")


def test_a_country_code_domain_names_the_phone_region():
    assert region_of("shop.example.de", "US") == "DE"
    assert region_of("www.example.co.uk", "US") == "GB"
    assert region_of("example.com", "FR") == "FR"
    assert region_of("a.test", "US") == "US"
