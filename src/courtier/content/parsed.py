"""What a parse gives: a page's references and facts, plain data that crosses the parse
pool's process boundary cheaply (links as tuples, pickled in C). ``parse.parse_page`` and
the other readers (``pdf``, ``feeds``) fill it; the event loop reads it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Final, NamedTuple

from courtier.content.text import PageText
from courtier.url import Url


class Link(NamedTuple):
    """A canonicalised reference, with what the event loop needs of it precomputed.

    A named tuple, not a dataclass: pages carry hundreds of links across the process
    boundary, and a tuple pickles and unpickles several times faster."""

    canonical: str
    fetch_url: str
    site: str
    pattern: str = ""
    """Key of its crawler-trap pattern under the default ``TrapPolicy`` (``traps.pattern_of``);
    "" when not computed (the loop computes it)."""
    pattern_host: str = ""
    volatile: bool = False

    def url(self) -> Url:
        """The ``Url`` this link was made from (what ``parse_url(fetch_url)`` gives), rebuilt
        from its fields without parsing."""
        scheme = self.fetch_url[: self.fetch_url.index(":")]
        site = self.site
        if site[:1] == "[" or site.count(":") == 1:  # host:port, [v6]:port
            host, _, port = site.rpartition(":")
            return Url(scheme, host.strip("[]"), int(port), self.fetch_url, self.canonical)
        return Url(scheme, site, None, self.fetch_url, self.canonical)


new_link: Final = partial(tuple.__new__, Link)
"""Builds a ``Link`` from a plain tuple of its fields in C (``Link._make`` runs Python)."""


@dataclass(slots=True)
class ParsedPage:
    title: str | None = None
    links: list[Link] = field(default_factory=list)
    images: list[Link] = field(default_factory=list)
    bad_links: int = 0
    """References that are not crawlable http(s) URLs (other schemes, malformed hosts)."""
    fingerprint: str | None = None
    """Boilerplate-stripped content fingerprint (adaptive refresh compares it)."""
    truncated: str | None = None
    """Why only a prefix of the body was parsed, or None: ``"depth"`` when the page nests
    deeper than ``MAX_DEPTH`` (links, title and fingerprint come from the prefix)."""
    robots: frozenset[str] = frozenset()
    """Robots directives of its meta tags and X-Robots-Tag (``politeness.robots_meta``)."""
    nofollow: set[str] = field(default_factory=set)
    """Canonical URLs of links marked ``rel="nofollow"``."""
    encoding: str = "utf-8"
    encoding_source: str = "utf-8"
    """How the encoding was found (``reading.read_page``): bom, header, meta, detected..."""
    payload: bytes | None = None
    """The body with secrets and personal data redacted (None: nothing was)."""
    redactions: dict[str, int] = field(default_factory=dict)
    shell: str | None = None
    """Why the page looks like an application shell whose content a script loads
    (``shell.shell_reason``); None when it does not."""
    fields: dict[str, Any] = field(default_factory=dict)  # more of its document: ``reading``
    canonical: Link | None = None
    text: PageText | None = None
    priority: int = 0
    """The priority of the URLs the page brings to the frontier (the parse hook's
    ``HookResult.priority``; ``frontier.base.lead_of``)."""

    def __reduce__(self) -> tuple[Callable[..., ParsedPage], tuple[object, ...]]:
        # Links travel as plain tuples (pickled in C) and become Links again on arrival.
        return _rebuild_page, (
            self.title,
            list(map(tuple, self.links)),
            list(map(tuple, self.images)),
            self.bad_links,
            self.fingerprint,
            self.truncated,
            self.robots,
            self.nofollow,
            self.encoding,
            self.encoding_source,
            self.payload,
            self.redactions,
            self.shell,
            self.fields,
            self.canonical,
            self.text,
            self.priority,
        )


def _rebuild_page(
    title: str | None,
    links: list[tuple[object, ...]],
    images: list[tuple[object, ...]],
    *rest: object,
) -> ParsedPage:
    page = ParsedPage(title, list(map(new_link, links)), list(map(new_link, images)))
    (
        page.bad_links,
        page.fingerprint,
        page.truncated,
        page.robots,
        page.nofollow,
        page.encoding,
        page.encoding_source,
        page.payload,
        page.redactions,
        page.shell,
        page.fields,
        page.canonical,
        page.text,
        page.priority,
    ) = rest  # type: ignore[assignment]
    return page
