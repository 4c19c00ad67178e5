"""Decoding a page: where its encoding came from, the bytes it could not read kept as they
were, and its text written back and its links' queries encoded in the page's own encoding."""

from __future__ import annotations

import pytest

from courtier.content.decode import Decoded, decode, encode_back, encode_query, parse_text, sniff


def test_a_byte_order_mark_is_kept_out_of_the_text_and_put_back_before_it() -> None:
    body = "\ufeffcafé".encode()
    decoded = decode(body, "text/html; charset=windows-1251")
    assert decoded == Decoded("café", "utf-8", "bom", 3)
    assert encode_back("café!", decoded, body) == b"\xef\xbb\xbfcaf\xc3\xa9!"


def test_a_page_declaring_utf16_in_ascii_bytes_is_utf8() -> None:
    body = b'<meta charset="utf-16"><p>caf\xc3\xa9</p>'
    assert sniff(body) == ("utf-8", "meta", 0)
    assert decode(body).text == '<meta charset="utf-16"><p>café</p>'


def test_a_declaration_is_read_from_the_first_4_kb_only() -> None:
    late = b" " * 4080 + b"<meta charset=koi8-r><p>x</p>"
    assert sniff(late) == ("utf-8", "utf-8", 0)
    assert sniff(b" " * 4000 + b"<meta charset=koi8-r><p>x</p>") == ("koi8-r", "meta", 0)


@pytest.mark.parametrize(
    "body",
    [
        "<p>café</p>".encode()[:-6],  # cut inside "é" (the last byte of it missing)
        b"<p>x " + "😀".encode()[:3],  # cut inside a four-byte character, three bytes in
        b"<p>x " + "😀".encode()[:1],
    ],
)
def test_valid_utf8_cut_inside_a_character_by_the_body_limit_is_utf8(body: bytes) -> None:
    assert sniff(body) == ("utf-8", "utf-8", 0)


def test_an_invalid_byte_near_the_end_is_no_cut_character() -> None:
    _, source, _ = sniff(b"<p>abc</p>\xff")
    assert source != "utf-8"
    assert sniff(b"<p>abc</p>") == ("utf-8", "utf-8", 0)


def test_bytes_no_detector_reads_are_windows_1252_by_default_and_kept() -> None:
    body = bytes(range(256))
    decoded = decode(body)
    assert (decoded.encoding, decoded.source, decoded.offset) == ("cp1252", "default", 0)
    assert decoded.text.encode("cp1252", "surrogateescape") == body


@pytest.mark.parametrize(
    "text",
    [
        "<html><head><title>Café à la crème – été brûlé</title></head><body><p>Où est la "
        "bibliothèque? Voilà, ça coûte très cher. Déjà vu, naïve façade.</p></body></html>",
        "<html><head><title>São João — ação e coração</title></head><body><p>Não há opção. "
        "Informação, educação, português.</p></body></html>",
    ],
)
def test_a_western_page_read_as_a_rarer_latin_code_page_is_detected_as_windows_1252(
    text: str,
) -> None:
    assert decode(text.encode("cp1252")) == Decoded(text, "cp1252", "detected", 0)


def test_a_charset_that_lies_falls_back_to_the_bytes_as_windows_1252() -> None:
    # A UTF-16 byte order mark, then a lone low surrogate, then a byte windows-1252 lacks.
    body = b"\xff\xfe\x00\xdc\x41\x00\x81"
    decoded = decode(body)
    assert decoded == Decoded(body.decode("cp1252", "surrogateescape"), "cp1252", "fallback", 0)
    assert encode_back(decoded.text, decoded, body) == body


def test_text_goes_back_in_the_pages_encoding_with_its_unreadable_bytes_as_they_were() -> None:
    body = b"<p>caf\xe9 \x81</p>"
    decoded = decode(body, "text/html; charset=windows-1252")
    assert decoded.encoding == "cp1252"
    assert encode_back(decoded.text, decoded, body) == body
    # A character the encoding lacks becomes a numeric character reference.
    assert encode_back("<p>café 日</p>", decoded, body) == b"<p>caf\xe9 &#26085;</p>"
    # The parser is given UTF-8, the unreadable byte as it was.
    assert parse_text(decoded.text) == b"<p>caf\xc3\xa9 \x81</p>"


@pytest.mark.parametrize(
    ("reference", "encoded"),
    [
        ("?q=é", "?q=%E9"),  # a reference that is only a query
        ("/p?q=é#é#x", "/p?q=%E9#é#x"),  # the fragment starts at the first "#"
        ("/p?a=é?b=é", "/p?a=%E9?b=%E9"),  # the query starts at the first "?"
        ("/p#x?é", "/p#x?é"),  # a "?" in the fragment starts no query
    ],
)
def test_a_links_query_is_encoded_from_its_first_question_mark_to_its_fragment(
    reference: str, encoded: str
) -> None:
    assert encode_query(reference, "cp1252") == encoded
