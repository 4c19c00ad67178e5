"""The one exception type of `courtier.url`."""

from __future__ import annotations


class UrlError(ValueError):
    """A URL or host that Courtier cannot use; the message says what is wrong with it.

    A subclass of ``ValueError`` so callers that already guard conversions keep working; a crawl
    catches it per URL and records the message, it never stops on it.
    """


def shown(text: str, limit: int = 100) -> str:
    """``text`` quoted for an error message, cut short so a hostile input cannot flood logs."""
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}…"
