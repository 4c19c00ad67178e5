"""A page's main content: clean text and Markdown, its language, its SimHash."""

from __future__ import annotations

import pickle

from hypothesis import given
from hypothesis import strategies as st

from courtier.content.language import identify
from courtier.content.reading import ReadContext, read_page
from courtier.content.simhash import distance, simhash, word_hashes
from courtier.content.text import page_text, text_fields, to_markdown, to_text
from courtier.sinks.redact import RedactionPolicy

ARTICLE = """<!doctype html><html><head><title>T</title></head><body>
<div class="cookie-banner" id="cookie-consent"><p>We use cookies to improve your experience
on this site, do you accept all of them?</p><button>Accept</button></div>
<header><nav><ul><li><a href="/">Home</a></li><li><a href="/news">News</a></li></ul></nav>
</header><div class="ad advertisement"><p>Buy now and save twenty percent on every order!</p>
</div><main><article><h1>A bridge over the river</h1>
<p>The mayor has opened a new bridge over the river after a difficult winter. Many people
came to see it on a rainy morning, and the children crossed it first.</p>
<h2>What comes next</h2>
<p>The city council wants to build a bigger library for the children before the end of the
year, although the costs are high &amp; the work is slow.</p>
<pre>  kept   as  it is</pre>
<ol><li>First the bridge, which took the town two long years of careful work to finish</li>
<li>Then the library, which will open to everyone in the town next spring</li></ol>
</article><aside class="related"><h2>You might also like</h2><ul><li><a href="/x">A market
in the old town</a></li></ul></aside></main><footer><p>All rights reserved. Terms of use
apply.</p></footer></body></html>"""

BOILERPLATE = ("cookies", "Buy now", "You might also like", "All rights reserved", "News")


def test_main_text_keeps_the_article_and_drops_the_boilerplate():
    text = page_text(ARTICLE.encode())
    assert text.text.startswith("A bridge over the river\n\nThe mayor has opened")
    assert "costs are high & the work is slow" in text.text
    for phrase in BOILERPLATE:
        assert phrase not in text.text
        assert phrase not in text.markdown
    assert text.language == "en" and text.language_score > 0.9


def test_markdown_has_headings_lists_and_fenced_pre():
    markdown = page_text(ARTICLE.encode()).markdown
    assert markdown.startswith("# A bridge over the river\n\nThe mayor")
    assert "\n\n## What comes next\n\n" in markdown
    assert "\n```\n  kept   as  it is\n```\n" in markdown
    assert "\n1. First the bridge" in markdown and "\n2. Then the library" in markdown


def test_minimal_html_to_markdown_and_text_by_rule():
    extract = "<h3>Head</h3>\n<ul><li>a</li><li>b &lt;c&gt;</li></ul>\n<p>x<br>y</p>"
    assert to_markdown(extract) == "### Head\n\n- a\n- b <c>\n\nx\ny"
    assert to_text(extract) == "Head\n\na\nb <c>\n\nx\ny"


def test_a_page_without_words_has_no_language_and_a_zero_simhash():
    text = page_text(b"<html><body><nav><a href='/'>Home</a></nav></body></html>")
    assert (text.text, text.language, text.simhash) == ("", None, 0)


def test_languages_of_real_sentences():
    sentences = {
        "de": "Im Herbst wird der Garten langsam ruhiger, und die Blätter fallen von den Bäumen.",
        "fr": "Le conseil municipal veut construire une plus grande bibliothèque pour les enfants.",
        "es": "El ayuntamiento quiere construir una biblioteca más grande para los niños.",
        "it": "Il consiglio comunale vuole costruire una biblioteca più grande per i bambini.",
        "nl": "De gemeenteraad wil een grotere bibliotheek voor de kinderen van het dorp bouwen.",
    }
    for code, sentence in sentences.items():
        assert identify(sentence)[0] == code


def test_too_short_a_text_names_no_language():
    assert identify("OK 42") == (None, 0.0)


def test_the_text_is_taken_after_redaction():
    body = ARTICLE.replace("The mayor", "Write to jane.doe@example.com: the mayor").encode()
    page = read_page(body, "http://a.test/", ReadContext("text/html", policy=RedactionPolicy()))
    assert page.text is not None
    assert "jane.doe@example.com" not in page.text.text + page.text.markdown


def test_text_off_reads_no_text_and_the_page_pickles_with_it_on():
    off = read_page(ARTICLE.encode(), "http://a.test/", ReadContext("text/html", text=False))
    assert off.text is None and off.links
    on = read_page(ARTICLE.encode(), "http://a.test/", ReadContext("text/html"))
    again = pickle.loads(pickle.dumps(on))
    assert again.text == on.text and again.links == on.links
    fields = text_fields(on.text)  # type: ignore[arg-type]
    assert fields["language"] == "en" and len(fields["simhash"]) == 16


def test_simhash_is_stable_close_for_a_small_edit_and_far_for_another_text():
    words = [f"w{(i * 7919) % 1009}" for i in range(800)]
    base = " ".join(words)
    edited = " ".join([*words[:400], "lantern", *words[401:]])
    other = " ".join(reversed(words))
    assert simhash(base) == simhash(base)
    assert distance(simhash(base), simhash(edited)) <= 3
    assert distance(simhash(base), simhash(other)) > 10


def test_simhash_words_are_letters_and_digits_in_any_script():
    assert word_hashes("Straße, über -- café!").size == 3
    assert word_hashes("abc def")[0] == word_hashes("x, ABC")[1]
    assert word_hashes("ab")[0] != word_hashes("ba")[0]


@given(st.text(max_size=300))
def test_simhash_of_any_text_is_64_bits(text: str) -> None:
    assert 0 <= simhash(text) < 1 << 64


@given(st.text(max_size=2000))
def test_any_markup_gives_text_or_nothing(markup: str) -> None:
    text = page_text(markup.encode("utf-8", "surrogateescape"))
    assert len(text.text) <= 100_000 and len(text.markdown) <= 100_000
    assert 0 <= text.simhash < 1 << 64 and text.language != "zxx"
