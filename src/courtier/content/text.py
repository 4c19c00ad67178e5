"""A page's main content as clean text and as Markdown, its language and its fingerprints.

``page_text`` runs in a parse worker (``reading.read_page``), on the redacted text of the page,
so no secret the redaction removed reaches the text either. Rules:
- The main content is resiliparse's (``extract_plain_text(main_content=True)``): navigation,
  headers, footers, asides, cookie banners, ads and link lists are dropped by its rules
  (element names, ARIA roles, class and id names, link density). trafilatura keeps a little
  more on some pages (a short list resiliparse takes for links) but costs about ten times
  resiliparse's extraction, 0.8 ms a page against 0.07 (`python bench/bench_text.py`): more
  than the whole text costs, and more than the parse pool has to spare at 2,000 sites.
- It is extracted once, as resiliparse's minimal HTML (headings, paragraphs, lists, ``pre``,
  line breaks); the Markdown and the plain text are both written from that one extract.
- The text is capped at ``MAX_TEXT_CHARS``; the language is identified on its first
  ``LANGUAGE_CHARS`` characters (``language.identify``); the SimHash (``simhash``) and the exact
  digest are taken over the whole text.
- A page nested past ``nesting.MAX_DEPTH`` is read only up to its cut, as the parser reads it;
  a page of more than ``MAX_HTML_BYTES`` only up to there.
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
MAX_HTML_BYTES: Final = 2 << 20
"""HTML read for the main text: a page of megabytes is read up to here (its main content
starts long before; the whole page would take a parse worker seconds beside the crawl)."""
"""Characters of main text (and of Markdown) kept in a document."""


class PageText(NamedTuple):
    """What a document keeps of a page's main content (plain values: they cross the pool)."""

    text: str
    markdown: str
    language: str | None
    """ISO 639-1 code (639-3 where there is none), or None when the text is too short, the
    identifier unsure or the text no language (``language.identify``)."""
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
    body = body[:MAX_HTML_BYTES]
    tree = HTMLTree.parse_from_bytes(body, "utf-8")
    extract = extract_plain_text(
        tree,
        preserve_formatting="minimal_html",
        main_content=True,
        alt_texts=False,
        comments=False,
        noscript=False,
    )
    # The kept text is capped: convert no more of the extract than can reach the cap.
    markdown, text = convert(extract[: 2 * MAX_TEXT_CHARS])
    markdown, text = markdown[:MAX_TEXT_CHARS], text[:MAX_TEXT_CHARS]
    language, score = identify(text)
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
    return PageText(text, markdown, language, score, simhash(text), digest)


# -- from resiliparse's minimal HTML ----------------------------------------------------------
#
# Its output holds only h1-h6, p, ul, ol, li, pre, br (and a, when links are asked for: they
# are not), one block a line, text escaped as HTML. So one split on those tags reads it
# exactly, and writes the Markdown and the plain text in the same pass; nothing here has to
# parse arbitrary HTML.

_BLOCK: Final = re.compile(r"<(/?)(h[1-6]|p|ul|ol|li|pre|br)\b[^>]*>")
_TAG: Final = re.compile(r"<[^>]*>")
_BLANK_LINES: Final = re.compile(r"\n{3,}")


def convert(extract: str) -> tuple[str, str]:
    """(Markdown, plain text) of resiliparse's minimal HTML: ``#`` headings, ``-`` and ``1.``
    lists, fenced ``pre`` and paragraphs apart in the one; one block a line, blank lines
    between blocks, in the other."""
    parts = _BLOCK.split(extract)  # text, closing, name, text, closing, name, ..., text
    md: list[str] = [_inline(parts[0], False)]
    plain: list[str] = [md[0]]
    lists: list[list[int]] = []  # per open list: [0] unordered, [n] ordered (next number)
    in_pre = False
    for i in range(1, len(parts), 3):
        closing, name, fragment = parts[i] == "/", parts[i + 1].lower(), parts[i + 2]
        if name == "br":
            md.append("\n")
            plain.append("\n")
        elif name == "li":
            if not closing:
                md.append(_bullet(lists))
                plain.append("\n")
        elif name in ("ul", "ol"):
            if closing and lists:
                lists.pop()
            elif not closing:
                lists.append([1] if name == "ol" else [0])
            md.append("\n")
            plain.append("\n\n")
        elif name == "pre":
            in_pre = not closing
            md.append("\n\n```\n" if in_pre else "\n```\n\n")
            plain.append("\n\n")
        elif name[0] == "h":
            md.append("\n\n" + "#" * int(name[1]) + " " if not closing else "\n\n")
            plain.append("\n\n")
        else:  # p
            md.append("\n\n")
            plain.append("\n\n")
        text = _inline(fragment, in_pre)
        md.append(text)
        plain.append(text)
    return _tidy("".join(md)), _tidy("".join(plain))


def _tidy(text: str) -> str:
    if "\n\n\n" in text:
        text = _BLANK_LINES.sub("\n\n", text)
    return text.strip()


def to_markdown(extract: str) -> str:
    return convert(extract)[0]


def to_text(extract: str) -> str:
    return convert(extract)[1]


def _bullet(lists: list[list[int]]) -> str:
    indent = "  " * max(0, len(lists) - 1)
    if lists and lists[-1][0]:
        number = lists[-1][0]
        lists[-1][0] += 1
        return f"\n{indent}{number}. "
    return f"\n{indent}- "


def _inline(fragment: str, in_pre: bool) -> str:
    if "<" in fragment:
        fragment = _TAG.sub("", fragment)
    if "&" in fragment:
        fragment = html.unescape(fragment)
    if in_pre:
        return fragment
    return " ".join(fragment.split())
