"""Reading a body in a parse worker: decode it, redact it, then parse what is left.

``read_page`` and ``redact_body`` are top-level and picklable (``parse_pool``): the event loop
never decodes, searches or rewrites a body. Order matters, and is the issue's rule:
1. decode with the page's encoding (``decode``: BOM, header, meta, detection);
2. redact secrets and personal data from the text (``courtier.sinks.redact``), so that
   3. the title, the links, the content fingerprint and the main text (``text.page_text``)
   come from the redacted text: a link carrying a key (``?key=AIza...``) keeps its
   placeholder and is never fetched, and the fingerprint for change detection is taken
   after redaction;
4. the body to keep (WARC) is the redacted text encoded back in the page's encoding, or the
   original bytes when nothing was redacted.
A PDF (``pdf.read_pdf``) and an RSS or Atom feed (``feeds.read_feed``) are read by their own
readers, chosen by the response's type, into the same ``ParsedPage``, whose ``fields`` are
more fields of its document (a PDF's text, a feed's version); then the parse hook
(``hook``), when one is set, adds its ``hook`` (or ``hook_error``) there, and what a
``HookResult`` asks of the links is done to the page (``hook_links``: links added and
dropped, the priority of the URLs it brings).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from courtier.content.canonical import declared_in_headers
from courtier.content.decode import decode, encode_back, parse_text
from courtier.content.feeds import FEED_TYPES, read_feed
from courtier.content.hook import hook_page, run_hook
from courtier.content.hook_links import apply_hook_links
from courtier.content.parse import ParsedPage, make_link, parse_page
from courtier.content.pdf import PDF_TYPE, read_pdf
from courtier.content.text import page_text
from courtier.net.spool import Body, body_bytes
from courtier.politeness.robots_meta import header_directives
from courtier.sinks.redact import (
    DEFAULT_POLICY,
    RedactionPolicy,
    redact,
    redact_url,
    region_of,
)
from courtier.sinks.warc import Capture, EncodedCapture, encode_capture

_TEXT_TYPES = (
    "text/",
    "application/json",
    "application/ld+json",
    "application/xml",
    "application/xhtml+xml",
    "application/rss+xml",
    "application/atom+xml",
    "application/javascript",
    "application/x-javascript",
    "image/svg+xml",
)


def is_text(content_type: str) -> bool:
    """Is a body of this type text that may hold secrets (not an image, not gzip)?"""
    return content_type.strip().lower().startswith(_TEXT_TYPES)


@dataclass(frozen=True, slots=True)
class ReadContext:
    """What a worker needs besides the body: plain values, pickled with each job."""

    content_type: str = ""
    token: str = ""
    """Our robots.txt product token (``<meta name="TOKEN">``, ``X-Robots-Tag: TOKEN: ...``)."""
    x_robots: tuple[str, ...] = ()
    """The response's X-Robots-Tag values."""
    policy: RedactionPolicy = DEFAULT_POLICY
    host: str = ""
    """The page's host: its country-code domain names the phone region."""
    hook: str = ""
    """The parse hook ("module:function"; "": none) and its budget in seconds."""
    hook_timeout: float = 0.0
    headers: tuple[tuple[str, str], ...] = ()
    """The response's headers (only sent when a hook is set: the hook is given them)."""
    text: bool = True
    """Extract the main text, language and SimHash (``[parse] text``; ``text.page_text``)."""
    link_headers: tuple[str, ...] = ()
    """The response's Link values (a canonical may be declared there)."""


@dataclass(frozen=True, slots=True)
class RedactedBody:
    payload: bytes | None
    """The body as kept (None: nothing was redacted, keep the original)."""
    redactions: dict[str, int]


def read_page(content: Body, base_url: str, context: ReadContext) -> ParsedPage:
    """The parsed page (``parse.ParsedPage``) of an HTML body (or its spool file), read in
    its own encoding, with what must not be kept redacted first; a PDF's or a feed's by its
    own reader. The parse hook, if any, runs last."""
    body = body_bytes(content)
    region = region_of(context.host, context.policy.region)
    media_type = context.content_type.partition(";")[0].strip().lower()
    html: bytes | None = None
    if media_type == PDF_TYPE or media_type in FEED_TYPES:
        if media_type == PDF_TYPE:
            page = read_pdf(body, base_url, context.policy, region)
        else:
            page = read_feed(body, base_url, context.content_type, context.policy, region)
        # X-Robots-Tag is how a PDF says noindex or nofollow (it has no meta tags)
        page.robots |= header_directives(context.x_robots, context.token)
    else:
        page, html = _read_html(body, base_url, context, region)
    if context.hook:
        text = page.text.text if page.text is not None else page.fields.get("text")
        seen = hook_page(base_url, context.headers, html, text, page.title, context.content_type)
        result, error = run_hook(context.hook, seen, context.hook_timeout)
        if result is not None:
            page.fields["hook"] = result.fields
            apply_hook_links(page, result, base_url, context.policy)
        else:
            page.fields["hook_error"] = error
    return page


def _read_html(
    body: bytes, base_url: str, context: ReadContext, region: str
) -> tuple[ParsedPage, bytes]:
    """An HTML page's ``ParsedPage`` and the redacted UTF-8 text it was parsed from."""
    decoded = decode(body, context.content_type)
    redacted = redact(decoded.text, context.policy, region)
    html = parse_text(redacted.text)
    page = parse_page(html, base_url, encoding=decoded.encoding, token=context.token)
    page.encoding_source = decoded.source
    page.robots |= header_directives(context.x_robots, context.token)
    if context.link_headers:  # not part of the redacted text: its canonical is redacted here
        header = declared_in_headers(
            context.link_headers,
            base_url,
            lambda href, base: make_link(redact_url(href, context.policy).text, base),
        )
        page.canonical = header or page.canonical
    if context.text:
        page.text = page_text(html, truncated=page.truncated == "depth")
    if redacted.changed:
        page.payload = encode_back(redacted.text, decoded, body)
        page.redactions = dict(redacted.counts)
    return page, html


def redact_body(content: Body, context: ReadContext) -> RedactedBody:
    """A text body that is not parsed (JSON, XML, plain text, an unparsed page), redacted."""
    body = body_bytes(content)
    decoded = decode(body, context.content_type)
    redacted = redact(decoded.text, context.policy, region_of(context.host, context.policy.region))
    if not redacted.changed:
        return RedactedBody(None, {})
    return RedactedBody(encode_back(redacted.text, decoded, body), dict(redacted.counts))


def x_robots_of(headers: Iterable[tuple[str, str]]) -> tuple[str, ...]:
    return tuple(value for name, value in headers if name.lower() == "x-robots-tag")


def links_of(headers: Iterable[tuple[str, str]]) -> tuple[str, ...]:
    return tuple(value for name, value in headers if name.lower() == "link")


def read_and_capture(
    content: Body, url: str, context: ReadContext, capture: Capture, level: int
) -> tuple[ParsedPage, EncodedCapture]:
    """``read_page``, then the page's WARC records as kept: one parse-worker job per page,
    so the body reaches the worker once and nothing of the archive is done in the crawl's
    process but appending. The redacted body is in the records, so it does not go back to
    the crawl's process with the page (``payload`` None)."""
    body = body_bytes(content)
    page = read_page(body, url, context)
    if capture.raw:  # [warc] payload = "raw": the record keeps the body as received
        kept = replace(capture, payload=body)
    else:
        payload = page.payload if page.payload is not None else body
        kept = replace(capture, payload=payload, redactions=page.redactions)
    encoded = encode_capture(kept, context.policy, level)
    page.payload = None
    return page, encoded
