"""What an answer means for the work that asked it: one decision for pages and media.

Rules, in order:
- The guard refused the host for good (a blocked address, no such name): the URL is
  refused, never retried.
- No answer (timeout, reset, DNS trouble), 429 or 5xx: asked again later, at most
  ``MAX_ATTEMPTS`` times in a run and never while the lane is suspended; then failed.
- A 304 to a conditional request (a refresh that sent its validators) is unchanged.
- A redirect (``fetching.REDIRECTS`` with a Location) is new work: the target goes through
  scope, robots.txt, booking and the guard again, with a hop budget.
- 2xx HTML is parsed for links (and fingerprinted), and so are a 2xx PDF and RSS or Atom
  feed (their own readers: ``reading.read_page``); a 2xx body of a URL known to be a
  sitemap is read as one; any other 2xx body is fingerprinted by its bytes.
- Everything else is done: the status is recorded and the URL falls due again later.

``document`` builds the document record of an answer (pages and media; its fields:
``docs/documents.schema.json``): what the page says (title, links, encoding, robots
directives, main text and language) comes from the redacted text, a ``Location`` is redacted
here, and ``fetched_at`` (the request's start) is RFC 3339 UTC.
"""

from __future__ import annotations

import enum
from typing import Any

from courtier.content.parse import ParsedPage
from courtier.content.text import text_fields
from courtier.net.fetch import FetchResult
from courtier.pipeline.answers.fetching import MAX_ATTEMPTS, Answer
from courtier.sinks.documents import rfc3339
from courtier.sinks.redact import redact_url

_PARSED_TYPES = (
    "text/html",
    "application/xhtml+xml",
    "application/pdf",
    "application/rss+xml",
    "application/atom+xml",
)


class Verdict(enum.Enum):
    REFUSED = "refused"
    RETRY = "retry"
    FAILED = "failed"
    REDIRECT = "redirect"
    NOT_MODIFIED = "not-modified"
    PARSE_PAGE = "parse-page"
    PARSE_SITEMAP = "parse-sitemap"
    DONE = "done"


def decide(
    answer: Answer, *, attempts: int, suspended: bool, sitemap: bool, conditional: bool = False
) -> Verdict:
    """``attempts``: how often this URL was asked before, in this run; ``conditional``: the
    request carried validators."""
    result = answer.result
    if result is None and not answer.transient:
        return Verdict.REFUSED
    if answer.retryable:
        if attempts + 1 < MAX_ATTEMPTS and not suspended:
            return Verdict.RETRY
        return Verdict.FAILED
    assert result is not None
    if conditional and result.status == 304:
        return Verdict.NOT_MODIFIED
    if answer.redirect is not None:
        return Verdict.REDIRECT
    if answer.ok and sitemap:
        return Verdict.PARSE_SITEMAP
    if answer.ok and result.content_type.lower().startswith(_PARSED_TYPES):
        return Verdict.PARSE_PAGE
    return Verdict.DONE


def document(
    result: FetchResult,
    *,
    url: str,
    site: str,
    page: ParsedPage | None = None,
    **extra: Any,
) -> dict[str, Any]:
    record: dict[str, Any] = {
        "url": url,
        "site": site,
        **extra,
        "status": result.status,
        "fetched_at": rfc3339(result.started_at),
        "elapsed_ms": round(result.elapsed * 1000, 1),
        "content_type": result.content_type,
        "bytes": result.size,
    }
    if result.truncated:
        record["truncated"] = True
    if result.error:
        record["error"] = result.error
    if result.location:
        record["location"] = redact_url(result.location).text
    if page is not None:
        record["title"] = page.title
        record["encoding"] = page.encoding
        record["links"] = [link.fetch_url for link in page.links]
        record["images"] = [image.fetch_url for image in page.images]
        if page.nofollow:
            record["nofollow"] = [
                link.fetch_url for link in page.links if link.canonical in page.nofollow
            ]
        if page.robots:
            record["robots"] = sorted(page.robots)
            if "noindex" in page.robots:
                record["noindex"] = True
        if page.text is not None:
            record.update(text_fields(page.text))
        cut = getattr(page, "truncated", None)
        if cut:
            record["parse_truncated"] = cut
        record.update(page.fields)  # a PDF's text, a feed's version, the hook's fields
    return record
