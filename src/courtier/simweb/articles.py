"""Article pages of the simulated web (``WorldParams.articles``): main content in a site's own
language, wrapped in the boilerplate real sites wrap it in, with the ground truth kept.

Rules:
- A site writes in one of six languages (``words.LANGUAGES``), chosen by its host.
- Every HTML page of the world is an article: a cookie banner, a header with the site's
  name and a navigation holding every link of the page, an advertisement, then ``<main>``
  with an ``<article>`` (heading, paragraphs of sentences, the page's images) and an aside
  of related links, then a footer. ``Article`` is the ground truth: the main text a clean
  extraction keeps, the language, and phrases of the boilerplate it must drop.
- An article's text is a pure function of (world seed, host, page), except that every
  ``SYNDICATED``-th item page carries the text of its number in its language, shared by
  every site writing that language with one word of its own swapped in: a near-duplicate
  across sites. (Pages served at two URLs, ``/item/N?ref=item``, are exact duplicates.)
- Canonicals (``canonical_of``): item pages have a printable copy at ``/item/N/print`` that
  declares ``/item/N`` canonical (in a ``Link`` header on every other one, in its markup on
  the rest); some items declare ``/story/N``, linked from nowhere, canonical (and the story
  page itself); some declare a URL off the seed, or no URL at all.
"""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass
from typing import Final

from courtier.simweb.words import LANGUAGES, Language

SYNDICATED: Final = 6
"""Item N with N % SYNDICATED == 1 is syndicated across the sites of a language."""
PRINTABLE: Final = 4
"""Item N with N % PRINTABLE == 0 has a printable copy at /item/N/print."""
STORY: Final = 5
"""Item N with N % STORY == 0 names /story/N canonical."""
OFF_SEED, BAD_CANONICAL = 3, 7
"""Item N with N % 10 == 3 names a URL off the seed canonical; N % 10 == 7 a broken one."""


@dataclass(frozen=True)
class Article:
    language: str
    title: str
    paragraphs: tuple[str, ...]
    boilerplate: tuple[str, ...]
    """Phrases of the page's banner, advertisement, related links and footer."""

    @property
    def text(self) -> str:
        return "\n\n".join((self.title, *self.paragraphs))


def language_of(host: str) -> Language:
    return LANGUAGES[zlib.crc32(host.encode()) % len(LANGUAGES)]


def _sentence(rng: random.Random, lang: Language) -> str:
    words = " ".join((rng.choice(lang.subjects), rng.choice(lang.verbs), rng.choice(lang.objects)))
    sentence = f"{words} {rng.choice(lang.endings)}"
    return sentence[0].upper() + sentence[1:] + "."


def _paragraphs(rng: random.Random, lang: Language, count: int) -> list[str]:
    return [" ".join(_sentence(rng, lang) for _ in range(rng.randint(3, 5))) for _ in range(count)]


def article(seed: int, host: str, salt: str) -> Article:
    """The article of page ``salt`` (its path, as ``PageRenderer`` names it) on ``host``."""
    lang = language_of(host)
    item = _item_number(salt)
    rng = random.Random(f"{seed}:article:{host}:{salt}")
    if item is not None and item % SYNDICATED == 1:
        shared = random.Random(f"{seed}:syndicated:{lang.code}:{item}")
        paragraphs = _paragraphs(shared, lang, 6)
        # One word of the site's own: the copies are near, never exact.
        first = paragraphs[0].split(" ")
        first[1] = rng.choice(lang.subjects).split(" ")[-1]
        paragraphs[0] = " ".join(first)
        title_rng = shared
    else:
        paragraphs = _paragraphs(rng, lang, rng.randint(3, 5))
        title_rng = rng
    title = _sentence(title_rng, lang).rstrip(".")
    related = _sentence(random.Random(f"{seed}:related:{host}:{salt}"), lang)
    boilerplate = (lang.cookie, lang.advert, lang.related, lang.footer, related)
    return Article(lang.code, title, tuple(paragraphs), boilerplate)


def canonical_of(path: str, origin: str, horizon: str) -> tuple[str | None, bool]:
    """(the canonical page ``path`` declares, whether in a ``Link`` header), for pages of a
    site at ``origin`` (``http://host:port``); ``horizon``: a URL off the seed."""
    if path.startswith("/story/"):
        return f"{origin}{path}", False
    if path.endswith("/print"):
        item = path.removesuffix("/print")
        printed = _item_number(item) or 0
        return (f"{origin}{item}", printed % (2 * PRINTABLE) == 0)
    n = _item_number(path)
    if n is None:
        return None, False
    if n % STORY == 0:
        return f"/story/{n}", False  # relative: resolved against the page
    if n % 10 == OFF_SEED:
        return horizon, False
    if n % 10 == BAD_CANONICAL:
        return "http://[not-a-host/", False
    return None, False


def _item_number(salt: str) -> int | None:
    for prefix in ("/item/", "/story/"):
        if salt.startswith(prefix):
            number = salt.removeprefix(prefix).removesuffix("/print")
            if number.isascii() and number.isdigit() and len(number) < 10:
                return int(number)
    return None


def render(
    site_name: str,
    page: Article,
    links: list[tuple[str, str]],
    images: list[str],
    canonical: str | None,
    related: list[tuple[str, str]],
) -> str:
    """The HTML of an article page (text escaped by the caller's rules: ``_esc``)."""
    lang = next(lang for lang in LANGUAGES if lang.code == page.language)
    nav = "".join(f'<li><a href="{_attr(h)}">{_esc(t)}</a></li>' for h, t in links)
    head_link = f'<link rel="canonical" href="{_attr(canonical)}">' if canonical else ""
    paragraphs = "".join(f"<p>{_esc(p)}</p>" for p in page.paragraphs)
    imgs = "".join(f'<img src="{_attr(src)}" alt="">' for src in images)
    aside = "".join(f'<li><a href="{_attr(h)}">{_esc(t)}</a></li>' for h, t in related)
    return (
        f'<!doctype html><html lang="{page.language}"><head><meta charset="utf-8">'
        f"<title>{_esc(page.title)} | {_esc(site_name)}</title>{head_link}</head><body>"
        f'<div id="cookie-banner" class="cookie-consent" role="dialog"><p>{_esc(lang.cookie)}'
        f"</p><button>{_esc(lang.accept)}</button></div>"
        f'<header class="site-header"><a class="logo" href="/">{_esc(site_name)}</a>'
        f'<nav class="menu"><ul><li><a href="/">{_esc(lang.home)}</a></li>{nav}</ul></nav>'
        f'</header><div class="ad advertisement sponsored"><p>{_esc(lang.advert)}</p></div>'
        f"<main><article><h1>{_esc(page.title)}</h1>{imgs}{paragraphs}</article>"
        f'<aside class="related"><h2>{_esc(lang.related)}</h2><ul>{aside}</ul></aside></main>'
        f'<footer class="site-footer"><p>© 2026 {_esc(site_name)}. {_esc(lang.footer)}</p>'
        f'<ul><li><a href="/">{_esc(lang.home)}</a></li></ul></footer></body></html>\n'
    )


def _attr(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;")


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;")
