"""A fingerprint test set: a base article page, variants that only differ by boilerplate,
ads or timestamps (same fingerprint), and variants with a real content change (new one)."""

import hashlib
import re
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from selectolax.lexbor import LexborHTMLParser, LexborNode

from courtier.frontier import fingerprint
from courtier.frontier.fingerprint import (
    content_fingerprint,
    erase_volatile,
    html_content_text,
    html_fingerprint,
    normalise_text,
    tree_fingerprint,
    unparsed_fingerprint,
)

PAGE = """<!doctype html>
<html lang="en"><head>
<title>{title}</title>
<meta name="generated" content="{stamp}">
<link rel="stylesheet" href="/site.css?v={stamp}">
<style>{style}</style>
<script>window.csrf = "{token}"; var t = {epoch};</script>
</head>
<body class="{body_class}">
<!-- served by {server} at {stamp} -->
<header><a href="/">Home</a> <a href="/{menu}">{menu}</a></header>
<nav class="menu"><ul><li><a href="/a">Section A</a></li><li>{menu}</li></ul></nav>
<div class="cookie-banner">We use cookies ({stamp}). <button>Accept</button></div>
<main>
  <article data-id="{token}">
    <h1>{heading}</h1>
    <p class="byline">Posted {posted} · Updated {updated}</p>
    <div class="ad-slot" data-ad-slot="{token}"><a href="/click?{token}">{ad}</a></div>
    <p>{para1}</p>
    <ins class="adsbygoogle">{ad}</ins>
    <p>Price: {price} for the {product}.</p>
    {extra}
    <p>{views} views so far.</p>
    <iframe src="https://ads.example.test/{token}"></iframe>
  </article>
  <aside><h2>Trending</h2><p>{ad}</p></aside>
</main>
<form action="/subscribe"><input type="hidden" name="csrf" value="{token}">Subscribe</form>
<footer>© 2026 Example · Rendered {stamp} in {render_ms} ms</footer>
</body></html>"""

BASE = {
    "title": "Garden tools review",
    "stamp": "2026-11-30T06:08:25Z",
    "style": "body{color:#333}",
    "token": "a1b2c3d4",
    "epoch": "1764482905",
    "body_class": "article",
    "server": "web-3",
    "menu": "Tools",
    "heading": "The best spades of the year",
    "posted": "30 November 2026",
    "updated": "5 minutes ago",
    "ad": "Buy shoes now!",
    "para1": "We dug the same bed with twelve spades and kept the three that did not bend.",
    "price": "£12.50",
    "product": "Ashwood spade",
    "extra": "",
    "views": "1,204,331",
    "render_ms": "12",
}


def page(**changes: str) -> str:
    return PAGE.format(**{**BASE, **changes})


SAME = {
    "rotating ad": {"ad": "Cheap flights to Lisbon"},
    "ad token and click id": {"token": "ffee9921"},
    "live timestamp everywhere": {"stamp": "2026-12-01T17:45:02+01:00", "epoch": "1764607502"},
    "relative update time": {"updated": "2 hours ago"},
    "clock time update": {"updated": "Mon, 30 Nov 2026 18:05 GMT"},
    "written date forms": {"posted": "November 30th, 2026"},
    "view counter": {"views": "1,204,998"},
    "navigation and header links": {"menu": "Kitchen"},
    "styles and scripts": {"style": "body{color:#000;margin:0}"},
    "server comment and body class": {"server": "web-9", "body_class": "article dark"},
    "render time in footer": {"render_ms": "97"},
}

CHANGED = {
    "paragraph rewritten": {
        "para1": "We dug the same bed with twelve spades and kept the two that did not bend."
    },
    "price changed": {"price": "£13.50"},
    "product renamed": {"product": "Oak spade"},
    "heading changed": {"heading": "The best spades of the decade"},
    "title changed": {"title": "Garden tools review (updated)"},
    "paragraph added": {"extra": "<p>Correction: the Oak spade bent after a week.</p>"},
}


def test_base_page_fingerprint_is_stable_and_an_md5():
    first = html_fingerprint(page())
    assert first == html_fingerprint(page())
    assert len(first) == 32 and int(first, 16) >= 0


@pytest.mark.parametrize("name", sorted(SAME))
def test_boilerplate_ads_and_timestamps_do_not_change_the_fingerprint(name: str):
    assert html_fingerprint(page(**SAME[name])) == html_fingerprint(page())


def test_all_volatile_changes_at_once_do_not_change_the_fingerprint():
    everything = {key: value for changes in SAME.values() for key, value in changes.items()}
    assert html_fingerprint(page(**everything)) == html_fingerprint(page())


@pytest.mark.parametrize("name", sorted(CHANGED))
def test_real_content_change_changes_the_fingerprint(name: str):
    assert html_fingerprint(page(**CHANGED[name])) != html_fingerprint(page())


def test_real_change_is_seen_even_beside_volatile_changes():
    noisy = {**SAME["rotating ad"], **SAME["live timestamp everywhere"], **CHANGED["price changed"]}
    assert html_fingerprint(page(**noisy)) != html_fingerprint(page())


def test_whitespace_and_attribute_only_differences_share_a_fingerprint():
    a = "<html><body><p class='x' id=1>Hello   world</p>\n\n<p>Again</p></body></html>"
    b = '<body>\n  <p data-v="9">Hello world</p> <p style="color:red">Again</p>\n</body>'
    assert html_fingerprint(a) == html_fingerprint(b)


def test_content_text_keeps_the_article_and_drops_the_rest():
    text = html_content_text(page())
    assert text is not None
    assert "twelve spades" in text and "Ashwood spade" in text and "£12.50" in text
    for gone in ("Section A", "Buy shoes", "cookies", "Subscribe", "Trending", "csrf", "web-3"):
        assert gone not in text


def test_ordinary_words_and_small_numbers_survive_volatile_token_erasure():
    text = "A friend sat in the sun on a wedding day; 3 spades cost 12.50 each, 45 in stock."
    assert normalise_text(text) == text


def test_nested_dropped_elements_are_removed_safely():
    nested = (
        "<nav class=ad><header id=ads><aside><div class=ad><p>x</p></div></aside></header></nav>"
    )
    assert html_content_text(f"<body>{nested * 50}<p>kept</p></body>") == "kept"


def test_bytes_and_broken_markup_are_fingerprinted_without_error():
    assert html_fingerprint(b"\xff\xfe<p>half <b>open") == html_fingerprint(
        b"\xff\xfe<p>half <b>open"
    )
    assert html_fingerprint("") == hashlib.md5(b"").hexdigest()


def test_media_type_selects_the_fingerprint():
    html = page().encode()
    assert content_fingerprint(html, "text/html; charset=utf-8") == html_fingerprint(html)
    assert content_fingerprint(b"at 10:30 ok", "text/plain") == content_fingerprint(
        b"at 11:45   ok", "text/plain"
    )
    image = b"\x89PNG\r\n\x1a\n\x00\x01"
    assert content_fingerprint(image, "image/png") == hashlib.md5(image).hexdigest()
    assert content_fingerprint(image, None) == hashlib.md5(image).hexdigest()


@given(st.text(max_size=300))
def test_any_markup_fingerprints_without_raising(markup: str):
    assert len(html_fingerprint(markup)) == 32


_WORDISH = st.text(
    alphabet=st.sampled_from(list("0123456789 :/-.,adfjmnostwAMPNOVJUL ghxyz\u0663")), max_size=60
) | st.sampled_from(
    [
        "Posted 30 November 2026, 18:05 GMT",
        "Mon, 30 Nov 2026 06:08:25 +0000",
        "an hour ago",
        "just now",
        "1,234,567 views",
        "Thursday at 6:08 pm",
    ]
)


@given(_WORDISH)
def test_the_guarded_volatile_pattern_matches_exactly_what_the_plain_one_does(text: str) -> None:
    from courtier.frontier.fingerprint import _VOLATILE, _VOLATILE_START

    plain = re.compile(_VOLATILE.pattern[len(_VOLATILE_START) + 3 : -1], re.IGNORECASE)
    assert [m.span() for m in _VOLATILE.finditer(text)] == [m.span() for m in plain.finditer(text)]


# -- one parse, linear time -----------------------------------------------------------------


@pytest.mark.parametrize("name", ["base", *sorted(SAME), *sorted(CHANGED)])
def test_a_parsed_tree_gives_the_same_fingerprint_as_the_markup(name: str) -> None:
    html = page(**{**SAME, **CHANGED}.get(name, {}))
    assert tree_fingerprint(LexborHTMLParser(html)) == html_fingerprint(html)
    assert tree_fingerprint(LexborHTMLParser(html.encode())) == html_fingerprint(html.encode())


_MARKUP = st.lists(
    st.sampled_from(
        ["<div>", "</div>", "<nav>", "</nav>", "<p class='ad'>", "<p class='ads-x'>", "</p>",
         "<span id=cookie-bar>", "</span>", "<aside>", "<section hidden>", "</section>",
         "<div role=navigation>", "<div data-ad>", "<script>var a = 1;</script>",
         "<header>", "</header>", "<title>T</title>", "<body class=menu>", "<html class=ad>",
         "Posted 5 minutes ago", "kept words", "£12.50", "2026-11-30", " ", "<svg><title>i",
         "<div role=NAVIGATION>", "<p role=search>", "<p role='search x'>", "<i role>",
         "<p aria-hidden=true>", "<p aria-hidden=TRUE>", "<p aria-hidden>", "<p data-ad-unit=3>",
         "<b data-google-query-id>", "<FORM>", "<time>", "</time>", "<template><p>t",
         "</template>", "<math><title>m</title></math>", "<math><nav>", "<select><option>o",
         "<p class=ad hidden>", "<iframe>f</iframe>", "<title>U</title>", "<svg><nav>s",
         "<button>b</button>", "<noscript>n</noscript>", "<object>", "</object>"]
    ),
    max_size=40,
).map("".join)  # fmt: skip


def _reference_content_text(html: str) -> str:
    """The earlier algorithm: mark everything, remove only the outermost marked nodes (found
    by walking each node's ancestors), on the same rules."""
    from courtier.frontier import fingerprint as fp

    always_dropped = ", ".join(  # rule 1 but the ad tokens of ids and classes, as CSS
        [
            *fp._DROPPED_TAGS,
            *(f'[role="{role}"]' for role in sorted(fp._DROPPED_ROLES)),
            '[aria-hidden="true"]',
            "[hidden]",
            *(f"[{name}]" for name in fp._AD_ATTRIBUTES),
        ]
    )
    tree = LexborHTMLParser(html)
    nodes = [
        *tree.css(always_dropped),
        *(
            n
            for n in tree.css("[class], [id]")
            if fp._is_ad_slot(n.attributes.get("class"), n.attributes.get("id"))
        ),
    ]
    nodes = [n for n in nodes if n.tag not in fp._STRUCTURE]
    marked = {n.mem_id for n in nodes}

    def inside_marked(node: LexborNode) -> bool:
        parent = node.parent
        while parent is not None:
            if parent.mem_id in marked:
                return True
            parent = parent.parent
        return False

    for node in [n for n in nodes if not inside_marked(n)]:
        node.decompose()
    title = tree.css_first("title")
    parts = [title.text() if title is not None else ""]
    if tree.body is not None:
        parts.append(tree.body.text(separator=" "))
    return normalise_text(" ".join(parts))


@settings(max_examples=500, deadline=None)
@given(_MARKUP)
def test_removing_in_reverse_document_order_matches_removing_the_outermost(html: str) -> None:
    assert html_content_text(html) == _reference_content_text(html)
    assert tree_fingerprint(LexborHTMLParser(html)) == html_fingerprint(html)


def test_deeply_nested_dropped_elements_cost_linear_time() -> None:
    # 20,000 nested ad slots: an ancestor walk per marked node took about 2*10^8 steps.
    html = "<body>" + "<span class=ad>x" * 20_000 + "</span>" * 20_000 + "<p>kept</p>"
    started = time.process_time()
    assert html_content_text(html) == "kept"
    assert time.process_time() - started < 1.0


def test_the_document_elements_are_never_dropped() -> None:
    # <html class=ad> raised ("decomposing the root node is not allowed"); a body class with a
    # consent token dropped the whole page but its title.
    assert html_content_text("<html class='ad js'><body><p>kept</p></body></html>") == "kept"
    assert html_content_text("<html hidden><title>T</title><p>kept</p>") == "T kept"
    body = "<body class='home cookies-not-set sidebar-primary'><main>kept</main>"
    assert html_content_text(body) == "kept"
    assert html_content_text("<head class=ad><title>T</title></head><p>x</p>") == "T x"


# -- the volatile-token pattern on lower-cased text ----------------------------------------


_MIXED = st.lists(
    st.sampled_from(
        [*"0123456789 :/-.,+_adfjmnostwyhrupcegkliz\t\n",
         "\u0663", "\u0e51", "\xe9", "\xc9", "\xa0", "\u202f", "\u2009", "\u3000", "\xa9",
         "\u2014", "\xbd", "\xb2", "\x1c", "\x1d", "\x1f", "\u212a", "\u0130", "\u0131",
         "\u017f", "\u4e2d", "\U0001d7d8", "mon,", "Tue,", "monday", "sat", "nov", "30",
         "2026", "12:05", " pm", " ago", "a few", "just now", "minutes", " of ", "1,234,567"]
    ),
    max_size=40,
).map("".join)  # fmt: skip
"""Text in which the characters ``re`` and RE2 could tell apart sit next to volatile tokens:
non-ASCII digits, letters, spaces (U+202F among them), punctuation, the stand-ins' own
characters, letters whose lower case is ASCII or longer."""


@settings(max_examples=600)
@given(_WORDISH | _MIXED | st.text(max_size=80))
def test_erasing_matches_the_ignorecase_pattern(text: str) -> None:
    from courtier.frontier.fingerprint import _VOLATILE

    assert erase_volatile(text) == _VOLATILE.sub(" ", text)
    for share in (10**9, 0):  # non-ASCII text always by ``re``, then always by the stand-in
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(fingerprint, "_RE2_SHARE", share)
            assert erase_volatile(text) == _VOLATILE.sub(" ", text)


@pytest.mark.parametrize(
    "text",
    [
        "Mon, 30 Nov 2026 06:08:25 +0000",
        "tue,wed, sun monday",
        "5\u202f000\u202f000 views, 5\xa0000\xa0000 others, \u0663\u0663:\u0663\u0663",
        "\xe92026-11-30 2026-11-30\xe9 2026-11-30\u202f06:08 2026-11-30 06:08",
        "posted 30\x1c november 2026 \u4e2d 5 minutes\u3000ago",
        "12:05 p.m.\xe9 12:05 p.m.# just\xa0now",
        "1\x1d234\x1d567 seen, 1\u202f234\u202f567 seen",
        "\xab30 november 2026\xbb \xe9t\xe9, 1\u202f234\u202f567 \u0663\u0663:\u0663\u0663",
    ],
)
def test_characters_re2_reads_differently_are_stood_in_for(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from courtier.frontier.fingerprint import _VOLATILE

    monkeypatch.setattr(fingerprint, "_RE2_SHARE", 0)  # never handed to ``re``
    for fresh in (True, False):  # each character met for the first time, then remembered
        if fresh:
            monkeypatch.setattr(fingerprint, "_stand_ins", fingerprint._StandIns())
        assert erase_volatile(text) == _VOLATILE.sub(" ", text)
        assert erase_volatile(text.upper()) == _VOLATILE.sub(" ", text.upper())


def test_a_stand_in_lower_cased_is_the_stand_in_of_the_lower_case() -> None:
    """What lets ``erase_volatile`` skip ``str.lower`` on non-ASCII text: for every character
    but the few it sends elsewhere, lower-casing the stand-in's bytes gives the stand-in of
    the lower-cased character."""
    from courtier.frontier.fingerprint import _LOWER_CASED_UNLIKE_STAND_IN

    def stand_in(text: str) -> bytes:
        return text.encode("ascii", "courtier-stand-in")

    differ = [
        char
        for char in map(chr, range(sys.maxunicode + 1))
        if not "\ud800" <= char <= "\udfff" and stand_in(char).lower() != stand_in(char.lower())
    ]
    assert differ == ["\u0130", "\u212a"]
    assert set(differ) < set(_LOWER_CASED_UNLIKE_STAND_IN)


@pytest.mark.parametrize(
    "text",
    ["ſep 30", "Mon, 30 NOV 2026", "İstanbul 5 minutes ago", "JUST NOW ı", "5 \u212aeeks ago"],
)
def test_letters_that_fold_specially_take_the_ignorecase_path(text: str) -> None:
    from courtier.frontier.fingerprint import _VOLATILE

    assert erase_volatile(text) == _VOLATILE.sub(" ", text)


def test_lower_casing_keeps_every_character_class_the_pattern_tests() -> None:
    # Matching on text.lower() is exact only if \w, \d and \s agree on a character and its
    # lower-case form (for the characters whose lower-case form is one character).
    chars = [chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]
    changed = "".join(c for c in chars if len(c.lower()) == 1 and c.lower() != c)
    lowered = changed.lower()
    for pattern in (r"\w", r"\d", r"\s"):
        assert [m.start() for m in re.finditer(pattern, changed)] == [
            m.start() for m in re.finditer(pattern, lowered)
        ]


def _normalise_word_by_word(text: str) -> str:
    """The reference: the words of the erased text, each kept if it has an isalnum() char."""
    words = erase_volatile(text).split()
    return " ".join(w for w in words if any(c.isalnum() for c in w))


@given(
    st.text(alphabet=st.characters(codec="utf-8"), max_size=80)
    | st.text(alphabet=st.characters(max_codepoint=127), max_size=80)
    | _WORDISH
)
def test_punctuation_is_dropped_exactly_as_word_by_word(text: str) -> None:
    """Stored fingerprints must not change: the one-pass normaliser gives what testing each
    word gave, for any text (Unicode letters, digits, marks, underscores, punctuation)."""
    assert normalise_text(text) == _normalise_word_by_word(text)


def test_every_character_alone_or_beside_an_underscore_is_judged_as_isalnum_judges_it() -> None:
    """Each code point as a word of its own and next to "_" (no isalnum), in one text:
    the regex's character classes against str.isalnum over the whole of Unicode."""
    chars = [chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]
    text = " ".join(chars) + " " + " ".join(f"_{c}" for c in chars)
    assert not text.isascii()
    assert normalise_text(text) == _normalise_word_by_word(text)


def test_punctuation_only_words_go_and_words_with_a_letter_stay() -> None:
    assert normalise_text("Updated 18:05 GMT . -- _ __x ¿qué? «» 5") == "Updated __x ¿qué? 5"


@pytest.mark.parametrize(
    "html",
    [
        "<p aria-hidden=TRUE>x</p><p>kept</p>",
        "<p aria-hidden=true>x</p><p>kept</p>",
        "<div role=NAVIGATION>x</div><p>kept</p>",
        "<div role='navigation menu'>x</div><p>kept</p>",
        "<div role=search>x</div><p>kept</p>",
        "<i hidden=no>x</i><p data-ad-unit>y</p><p>kept</p>",
        "<svg><title>s</title></svg><title>T</title><p>kept</p>",
        "<nav><form><p class=ad>x</p></form></nav><time>now</time><p>kept</p>",
    ],
)
def test_attribute_values_are_compared_as_css_compares_them(html: str) -> None:
    """Exactly, case and all (``[role="navigation"]`` is no match for ``NAVIGATION``)."""
    assert html_content_text(html) == _reference_content_text(html)


@pytest.mark.parametrize("body", [b"caf\xc3\xa9 \xff 5 minutes ago", b"plain text"])
def test_a_text_body_is_fingerprinted_by_its_text_whatever_its_bytes(body: bytes) -> None:
    text = content_fingerprint(body, "text/plain")
    assert text == content_fingerprint(body, "TEXT/PLAIN; charset=utf-8; format=flowed")
    assert text == content_fingerprint(body + b" 6 minutes ago", "text/plain")
    assert content_fingerprint(body, None) == hashlib.md5(body).hexdigest()


def test_an_html_body_with_several_parameters_is_read_as_html() -> None:
    page = b"<html><body><p>kept</p><nav>menu</nav></body></html>"
    assert content_fingerprint(page, "text/html; charset=utf-8; q=1") == html_fingerprint(page)
    assert content_fingerprint(page, "text/html; charset=utf-8; q=1") != content_fingerprint(
        page, "text/plain"
    )


def test_a_page_the_parser_refused_is_fingerprinted_by_its_utf8_bytes() -> None:
    assert unparsed_fingerprint("caf\xe9") == hashlib.md5("caf\xe9".encode()).hexdigest()
    assert unparsed_fingerprint("caf\xe9") == unparsed_fingerprint("caf\xe9".encode())
    assert unparsed_fingerprint("a\ud800b") == hashlib.md5(b"a?b").hexdigest()


def test_a_long_class_list_is_judged_by_its_tokens_like_a_short_one() -> None:
    """Values over 200 characters are not remembered; their verdict is the same."""
    filler = " ".join(f"card-{n}" for n in range(60))
    assert len(filler) > 200
    page = f"<div class='{filler} sponsored'>x</div><div class='{filler}'>kept</div>"
    assert html_content_text(page) == "kept"
    assert html_content_text(page.upper().replace("<DIV", "<div").replace("DIV>", "div>")) == "KEPT"


def test_a_page_the_parser_raises_on_is_fingerprinted_unparsed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuse(html: object) -> LexborHTMLParser:
        raise ValueError("the parser refused it")

    monkeypatch.setattr(fingerprint, "LexborHTMLParser", refuse)
    assert html_content_text("<p>x</p>") is None
    assert html_fingerprint("<p>caf\xe9</p>") == unparsed_fingerprint("<p>caf\xe9</p>")
