"""Reading a page in a worker: its encoding, its robots meta, what must not be kept."""

from __future__ import annotations

import pickle
from multiprocessing.reduction import ForkingPickler

import pytest

from courtier.config import ScopeSection
from courtier.content.decode import decode, encode_query
from courtier.content.reading import ReadContext, RedactedBody, read_page, redact_body
from courtier.pipeline.feed.scope import ScopeRules, parent_in_scope, same_domain, site_owner
from courtier.politeness.robots_meta import directives, header_directives
from courtier.sinks.redact import RedactionPolicy
from courtier.sinks.warc import Capture, EncodedCapture

BASE = "http://a.test/dir/"


def read(body: bytes, content_type: str = "text/html", **more: object) -> object:
    return read_page(body, BASE, ReadContext(content_type, "courtier", **more))  # type: ignore[arg-type]


def test_a_latin1_page_declared_by_header_reads_right_title_and_links():
    body = '<title>Café</title><a href="/café">c</a><a href="/s?q=crème">s</a>'.encode("latin-1")
    page = read(body, "text/html; charset=ISO-8859-1")
    assert page.title == "Café"
    assert [link.fetch_url for link in page.links] == [
        "http://a.test/caf%C3%A9",  # the path is UTF-8 whatever the page's encoding
        "http://a.test/s?q=cr%E8me",  # the query is in the page's encoding (WHATWG)
    ]
    assert (page.encoding, page.encoding_source) == ("cp1252", "header")


def test_a_windows_1251_page_declared_by_meta():
    text = '<meta charset="windows-1251"><title>Новости</title><a href="/новости">n</a>'
    page = read(text.encode("cp1251"))
    assert page.title == "Новости"
    assert page.links[0].fetch_url == "http://a.test/%D0%BD%D0%BE%D0%B2%D0%BE%D1%81%D1%82%D0%B8"
    assert (page.encoding, page.encoding_source) == ("cp1251", "meta")


def test_an_http_equiv_declaration_and_a_bom_are_honoured():
    equiv = (
        '<meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS"><title>日本</title>'
    )
    page = read(equiv.encode("shift_jis"))
    assert (page.title, page.encoding_source) == ("日本", "meta")
    bom = b"\xef\xbb\xbf" + "<title>Café</title>".encode()
    page = read(bom, "text/html; charset=iso-8859-1")  # a BOM wins over the header
    assert (page.title, page.encoding, page.encoding_source) == ("Café", "utf-8", "bom")


@pytest.mark.parametrize(
    ("text", "codec", "expected"),
    [
        (
            "<html><title>Новости и статьи</title><body><p>Добро пожаловать на наш сайт. "
            "Здесь вы найдёте свежие новости, статьи и обзоры.</p></body></html>",
            "cp1251",
            "cp1251",
        ),
        (
            "<html><title>日本語のページです</title><body>東京都渋谷区の天気は晴れです。"
            "今日はとても良い天気ですね。</body></html>",
            "shift_jis",
            "cp932",
        ),
        (
            "<html><title>Café crème</title><body><p>Bienvenue à notre café, où la crème "
            "brûlée est délicieuse.</p></body></html>",
            "latin-1",
            "cp1252",
        ),
    ],
)
def test_undeclared_encodings_are_detected(text, codec, expected):
    decoded = decode(text.encode(codec), "text/html")
    assert (decoded.encoding, decoded.source) == (expected, "detected")
    assert decoded.text == text


@pytest.mark.parametrize(
    ("text", "codec"),
    [
        (  # read as Baltic (cp1257): "crčme", "brūlé"
            "<html><head><title>Café à la crème – été brûlé</title></head><body><p>Où est la "
            "bibliothèque? Voilà, ça coûte très cher. Déjà vu, naïve façade.</p>"
            "<a href='/recherche?q=crème'>lien</a></body></html>",
            "cp1252",
        ),
        (  # read as Central European (cp1250): "açăo", "coraçăo"
            "<html><head><title>São João — ação e coração</title></head><body><p>Não há opção. "
            "Informação, educação, português.</p></body></html>",
            "cp1252",
        ),
        (  # a Czech page stays Central European
            "<html><head><title>Příliš žluťoučký kůň úpěl</title></head><body><p>Ďábelské ódy, "
            "čeština, řeka, šťastný.</p></body></html>",
            "cp1250",
        ),
        (  # and a Greek one Greek
            "<html><head><title>Καλημέρα κόσμε</title></head><body><p>Η Αθήνα είναι η "
            "πρωτεύουσα της Ελλάδας και μεγάλη πόλη.</p></body></html>",
            "cp1253",
        ),
    ],
)
def test_an_undeclared_western_page_is_windows_1252_not_a_rarer_latin_code_page(text, codec):
    decoded = decode(text.encode(codec), "text/html")
    assert decoded.text == text
    if codec == "cp1252":
        assert decoded.encoding == "cp1252"
        page = read_page(text.encode(codec), "http://a.test/", ReadContext("text/html"))
        assert page.title == text.split("<title>")[1].split("</title>")[0]


def test_bytes_0x80_to_0x9f_of_a_latin1_label_read_as_windows_1252_punctuation():
    """0x80-0x9F are C1 controls in ISO-8859-1 and punctuation in windows-1252, which is how
    browsers read every page labelled latin-1 (WHATWG): "é" reads the same in both, these
    bytes do not."""
    title = "\u201cCafé\u201d \u20ac5 \u2013 it\u2019s\u2026"  # “Café” €5 – it’s…
    body = f"<title>{title}</title><p>jane@example.com</p>".encode("cp1252")
    assert {0x93, 0x94, 0x80, 0x96, 0x92, 0x85} <= set(body)
    for content_type in ("text/html; charset=ISO-8859-1", "text/html; charset=windows-1252"):
        page = read(body, content_type)
        assert (page.title, page.encoding) == (title, "cp1252"), content_type
        # redacted, then written back in the page's own bytes (no &#147; for a curly quote)
        assert page.payload == body.replace(b"jane@example.com", b"[REDACTED:email]")
    page = read(b"<meta charset=latin1>" + body)
    assert (page.title, page.encoding_source) == (title, "meta")
    french = (
        "<html><title>\u201cCafé crème\u201d</title><body><p>Bienvenue à notre café, où la "
        "crème brûlée coûte 5\u20ac \u2013 c\u2019est délicieux\u2026 « Merci », dit-elle."
        "</p></body></html>"
    )
    decoded = decode(french.encode("cp1252"), "text/html")
    assert (decoded.text, decoded.encoding, decoded.source) == (french, "cp1252", "detected")


def test_undeclared_utf8_is_utf8_and_undecodable_bytes_survive_a_round_trip():
    assert decode("<p>é</p>".encode()).source == "utf-8"
    decoded = decode(b"<p>\x98</p>", "text/html; charset=windows-1251")
    assert decoded.text.encode("cp1251", "surrogateescape") == b"<p>\x98</p>"


def test_query_encoding_follows_the_page():
    assert encode_query("/p?q=é#é", "cp1252") == "/p?q=%E9#é"
    assert encode_query("/p?q=日", "cp1252") == "/p?q=%26%2326085%3B"  # &#26085;
    assert encode_query("/p?q=é", "utf-8") == "/p?q=é"
    assert encode_query("/é", "cp1252") == "/é"


def test_robots_meta_for_all_and_for_our_token_and_x_robots_tag():
    page = read(b'<meta name="robots" content="noindex"><meta name="otherbot" content="nofollow">')
    assert page.robots == {"noindex"}
    page = read(b'<meta name="Courtier" content="NoFollow">')
    assert page.robots == {"nofollow"}
    page = read(b"<title>x</title>", x_robots=("courtier: none",))
    assert page.robots == {"noindex", "nofollow"}
    assert (
        header_directives(["googlebot: nofollow", "unavailable_after: 25 Jun 2010"], "courtier")
        == set()
    )
    assert header_directives(["noindex,max-snippet:20"], "courtier") == {"noindex"}
    assert directives("all") == set()


def test_rel_nofollow_links_are_marked():
    page = read(b'<a rel="ugc NoFollow" href="/x">x</a><a href="/y">y</a>')
    assert page.nofollow == {"http://a.test/x"}
    assert len(page.links) == 2


def test_secrets_never_reach_title_links_or_fingerprint_and_the_body_is_redacted():
    key = "AIza" + "aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xYzaB"
    body = (
        f"<meta charset=iso-8859-1><title>Café de jane@example.com</title>"
        f'<a href="/map?key={key}">m</a><p>+1 415-555-2671</p>'
    ).encode("latin-1")
    page = read(body, host="a.test")
    assert page.title == "Café de [REDACTED:email]"
    assert "[REDACTED:google-api-key]" in page.links[0].fetch_url
    assert page.payload is not None and key.encode() not in page.payload
    assert "Café".encode("latin-1") in page.payload  # still in the page's own encoding
    assert page.redactions == {"email": 1, "google-api-key": 1, "phone": 1}
    # The fingerprint is taken after redaction: a rotated key is no change of content.
    rotated = body.replace(key.encode(), key[:-4].encode() + b"ZZZZ")
    assert read(rotated, host="a.test").fingerprint == page.fingerprint
    untouched = read(b"<title>plain</title>")
    assert untouched.payload is None and untouched.redactions == {}


def test_other_text_bodies_are_redacted_too():
    redacted = redact_body(b'{"email": "a@example.com"}', ReadContext("application/json"))
    assert redacted.payload == b'{"email": "[REDACTED:email]"}'
    assert redact_body(b'{"n": 1}', ReadContext("application/json")).payload is None


def test_scope_rules():
    scope = {"example.org", "www.example.org", "shop.test:8080"}
    assert site_owner("www.example.org", scope) == "example.org"
    assert site_owner("example.org", scope) == "example.org"
    assert site_owner("www.other.org", scope) == "www.other.org"
    assert same_domain("example.org", "www.example.org")
    assert same_domain("a.test:8080", "www.a.test:8080")
    assert not same_domain("example.org", "example.com")
    assert not same_domain("127.0.0.1", "127.0.0.2")
    assert parent_in_scope("blog.example.org", scope) == "example.org"
    assert parent_in_scope("a.b.shop.test:8080", scope) == "shop.test:8080"
    assert parent_in_scope("shop.test:9090", scope) is None
    rules = ScopeRules(ScopeSection(include=(r"/docs/",), exclude=(r"\.pdf$",)))
    assert rules.allows("http://a.test/docs/x") and not rules.allows("http://a.test/docs/x.pdf")
    assert not rules.allows("http://a.test/blog/")
    assert ScopeRules(ScopeSection()).adopts_subdomain("blog.example.org", scope) is None
    on = ScopeRules(ScopeSection(subdomains=True))
    assert on.adopts_subdomain("blog.example.org", scope) == "example.org"
    assert on.adopts_redirect("example.org", "www.example.org")
    assert not ScopeRules(ScopeSection(adopt_redirects=False)).adopts_redirect(
        "example.org", "www.example.org"
    )


@pytest.mark.parametrize(
    "value",
    [
        ReadContext("text/html", "bot", ("noindex",), RedactionPolicy(phones=False), "a.test"),
        RedactedBody(b"x", {"email": 2}),
        RedactionPolicy(region="GB", skip=frozenset({"aws"})),
        Capture("http://a.test/", 1.5, 200, (("A", "b"),), b"body", truncated=True),
        EncodedCapture((b"m1", b"m2"), "sha1:X", "response", 0.01),
    ],
)
def test_what_a_parse_job_carries_comes_back_equal(value: object) -> None:
    """Through the parse pool's pickler and ``pickle`` (the answers)."""
    assert pickle.loads(ForkingPickler.dumps(value)) == value
    assert pickle.loads(pickle.dumps(value)) == value
