"""Does a page look like an application shell: HTML whose content a script fetches later?

Rules:
- Only a page with few links is looked at (fewer than ``MAX_LINKS``): a page that already
  links around is content, whatever its scripts do, and costs this check one comparison.
- A shell has little visible text (under ``MAX_TEXT`` characters outside ``script``,
  ``style``, ``noscript`` and ``template``) and at least one sign of an application: a root
  element frameworks mount into (``#root``, ``#app``, ``#__next``..., ``app-root``,
  ``ng-app``, ``data-reactroot``), a ``<noscript>`` asking for JavaScript, or scripts (an
  external one, or an inline one that loads data).
- The verdict is a reason a person can read (it goes in the document and the request log);
  None when the page does not look like a shell. Pure: the tree is only read.
"""

from __future__ import annotations

import re
from typing import Final

from selectolax.lexbor import LexborHTMLParser

MAX_LINKS: Final = 5
MAX_TEXT: Final = 256
_ROOT_IDS: Final = frozenset(
    {"root", "app", "__next", "__nuxt", "___gatsby", "svelte", "app-root", "main-app", "spa"}
)
_ROOT_ATTRIBUTES: Final = ("data-reactroot", "ng-app", "ng-version", "data-v-app")
_HIDDEN: Final = ("script", "style", "noscript", "template")
_LOADS_DATA: Final = re.compile(
    r"\bfetch\s*\(|XMLHttpRequest|\baxios\b|graphql|__NEXT_DATA__|__INITIAL_STATE__|"
    r"\bimport\s*\(|createApp|ReactDOM|hydrate",
)
_ASKS_FOR_JS: Final = re.compile(r"(?i)javascript|enable\s+js")


def shell_reason(tree: LexborHTMLParser, links: int) -> str | None:
    """Why the page in ``tree`` (with ``links`` links) looks like a shell, or None."""
    if links >= MAX_LINKS:
        return None
    body = tree.body
    text = 0 if body is None else len(body.text(separator=" ", strip=True))
    for tag in _HIDDEN:
        for node in tree.tags(tag):
            text -= len(node.text(separator=" ", strip=True))
    if text >= MAX_TEXT:
        return None
    signs: list[str] = []
    root = _app_root(tree)
    if root is not None:
        signs.append(f"app root {root}")
    if any(_ASKS_FOR_JS.search(node.text()) for node in tree.tags("noscript")):
        signs.append("noscript asks for JavaScript")
    external = inline = 0
    for node in tree.tags("script"):
        if node.attributes.get("src"):
            external += 1
        elif _LOADS_DATA.search(node.text()):
            inline += 1
    if external:
        signs.append(f"{external} external script{'s' if external > 1 else ''}")
    if inline:
        signs.append(f"{inline} inline data script{'s' if inline > 1 else ''}")
    if not signs:
        return None
    return f"{max(text, 0)} chars of text, {links} links; " + ", ".join(signs)


def _app_root(tree: LexborHTMLParser) -> str | None:
    if tree.tags("app-root"):
        return "<app-root>"
    for tag in ("div", "main", "section", "body"):
        for node in tree.tags(tag):
            attributes = node.attributes
            ident = attributes.get("id")
            if ident and ident.lower() in _ROOT_IDS:
                return f"#{ident}"
            for name in _ROOT_ATTRIBUTES:
                if name in attributes:
                    return f"[{name}]"
    return None
