"""A page's main content as clean text and as Markdown, its language and its fingerprints.

``page_text`` runs in a parse worker (``reading.read_page``), on the redacted text of the page,
so no secret the redaction removed reaches the text either. Rules:
- The main content is resiliparse's (``extract_plain_text(main_content=True)``): navigation,
  headers, footers, asides, cookie banners, ads and link lists are dropped by its rules
  (element names, ARIA roles, class and id names, link density). trafilatura keeps a little
  more on some pages but costs about seven times the CPU a page (`python bench/bench_text.py`),
  more than the parse pool has to spare at 2,000 sites.
- It is extracted once, as resiliparse's minimal HTML (headings, paragraphs, lists, ``pre``,
  line breaks); the Markdown and the plain text are both written from that one extract.
- The text is capped at ``MAX_TEXT_CHARS``; the language is identified on its first
  ``LANGUAGE_CHARS`` characters (``language.identify``); the SimHash (``simhash``) and the exact
  digest are taken over the whole text.
- A page nested past ``nesting.MAX_DEPTH`` is read only up to its cut, as the parser reads it.
"""

from __future__ import annotations

import hashlib
import html
import re
from typing import Any, Final, NamedTuple

from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.html import HTMLTree

from courtier.content.language import identify
from courtier.content.nesting import nesting_cut
from courtier.content.simhash import simhash

MAX_TEXT_CHARS: Final = 100_000
"""Characters of main text (and of Markdown) kept in a document."""


class PageText(NamedTuple):
    """What a document keeps of a page's main content (plain values: they cross the pool)."""

    text: str
    markdown: str
    language: str | None
    """ISO 639-1 code, or None when the text is too short or the identifier unsure."""
    language_score: float
    simhash: int
    """64-bit SimHash of the text's word shingles (0: no words)."""
    digest: str
    """BLAKE2b-64 of the text, hex: equal texts, equal digests."""


def text_fields(text: PageText) -> dict[str, Any]:
    """A document's fields of a page's main content."""
    return {
        "text": text.text,
        "markdown": text.markdown,
        "language": text.language,
        "language_score": text.language_score,
        "simhash": f"{text.simhash:016x}",
    }


def page_text(body: bytes, *, truncated: bool = False) -> PageText:
    """The main content of an HTML page given as UTF-8 bytes (``decode.parse_text``);
    ``truncated``: the parser cut the page for its nesting (cut it here the same way)."""
    if truncated:
        cut = nesting_cut(body)
        if cut is not None:
            body = body[:cut]
    tree = HTMLTree.parse_from_bytes(body, "utf-8")
    extract = extract_plain_text(
        tree,
        preserve_formatting="minimal_html",
        main_content=True,
        alt_texts=False,
        comments=False,
        noscript=False,
    )
    markdown = to_markdown(extract)[:MAX_TEXT_CHARS]
    text = to_text(extract)[:MAX_TEXT_CHARS]
    language, score = identify(text)
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
    return PageText(text, markdown, language, score, simhash(text), digest)


# -- from resiliparse's minimal HTML ----------------------------------------------------------
#
# Its output holds only h1-h6, p, ul, ol, li, pre, br (and a, when links are asked for: they
# are not), one block a line, text escaped as HTML. So a few patterns read it exactly; nothing
# here has to parse arbitrary HTML.

_BLOCK: Final = re.compile(r"<(/?)(h[1-6]|p|ul|ol|li|pre|br)\b[^>]*>", re.IGNORECASE)
_TAG: Final = re.compile(r"<[^>]*>")
_BLANK_LINES: Final = re.compile(r"\n{3,}")
_SPACES: Final = re.compile(r"[ \t]+")


def to_markdown(extract: str) -> str:
    """Markdown of resiliparse's minimal HTML: ``#`` headings, ``-`` and ``1.`` lists,
    fenced ``pre``, paragraphs apart."""
    out: list[str] = []
    lists: list[list[int]] = []  # per open list: [0] unordered, [n] ordered (next number)
    pos = 0
    in_pre = False
    for match in _BLOCK.finditer(extract):
        out.append(_inline(extract[pos : match.start()], in_pre))
        pos = match.end()
        closing, name = match.group(1) == "/", match.group(2).lower()
        if name == "br":
            out.append("\n")
        elif name == "pre":
            in_pre = not closing
            out.append("\n```\n" if not closing else "\n```\n\n")
        elif name in ("ul", "ol"):
            if closing:
                if lists:
                    lists.pop()
                out.append("\n")
            else:
                lists.append([1] if name == "ol" else [0])
        elif name == "li":
            if not closing:
                indent = "  " * max(0, len(lists) - 1)
                if lists and lists[-1][0]:
                    bullet = f"{lists[-1][0]}. "
                    lists[-1][0] += 1
                else:
                    bullet = "- "
                out.append(f"\n{indent}{bullet}")
        elif name.startswith("h"):
            out.append(f"\n\n{'#' * int(name[1])} " if not closing else "\n\n")
        else:  # p
            out.append("\n\n")
    out.append(_inline(extract[pos:], in_pre))
    return _BLANK_LINES.sub("\n\n", "".join(out)).strip()


def to_text(extract: str) -> str:
    """Plain text of resiliparse's minimal HTML: one block a line, blank lines between."""
    text = _BLOCK.sub(lambda m: "\n" if m.group(2).lower() in ("br", "li") else "\n\n", extract)
    text = html.unescape(_TAG.sub("", text))
    lines = (_SPACES.sub(" ", line).strip() for line in text.split("\n"))
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


def _inline(fragment: str, in_pre: bool) -> str:
    text = html.unescape(_TAG.sub("", fragment))
    if in_pre:
        return text
    return _SPACES.sub(" ", text.replace("\n", " ")) if text.strip() else ""
