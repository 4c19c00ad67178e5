"""What the crawl keeps of an answer: the body redacted, archived, and named in its document.

Rules:
- Nothing is written before it is redacted (``courtier.sinks.redact``): a parsed page brings
  its redacted body from the parse worker (``reading.read_page``); any other text body
  (JSON, XML, plain text, an error page, a page whose parse failed) is redacted in a worker
  too (``reading.redact_body``), a text body of the media lanes (an SVG: rare and small) on
  the loop; binary bodies (images, gzip) are kept as they are.
  A text body that cannot be redacted (its worker overran or died) is not archived at all.
- The fingerprint of an unparsed body is taken after redaction.
- The capture goes to the archive (``archive.Archive``) when ``[warc] enabled``; the returned
  reference and the redaction counts become fields of the document. With ``[warc] payload
  = "raw"`` the capture holds the body as received (the document still what was redacted);
  a text body whose redaction failed is then archived all the same (nothing of it reaches
  the documents).
- A refresh's validators (``ETag``, ``Last-Modified``) are read from the answer here, by the
  header functions that cannot raise, and go to the store with the outcome.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from courtier.config import Config
from courtier.content.duplicates import DuplicateIndex, duplicate_fields
from courtier.content.parse import ParsedPage, canonical_link
from courtier.content.reading import (
    ReadContext,
    RedactedBody,
    is_text,
    links_of,
    read_and_capture,
    read_page,
    redact_body,
    x_robots_of,
)
from courtier.frontier.base import LeasedUrl, Outcome, UrlStatus
from courtier.net.fetch import FetchResult
from courtier.net.headers import etag, http_date
from courtier.net.spool import Body, SpooledBody, body_size, file_md5
from courtier.pipeline.keeping.archive import Archive, redaction_policy, sent_headers, warc_fields
from courtier.pipeline.stats import CrawlStats
from courtier.pipeline.workers.jobs import ParseTimeout, WorkerLost, parse_guarded
from courtier.sinks.warc import Capture, EncodedCapture, WarcRef
from courtier.url import host_of_site

log = logging.getLogger(__name__)

Parse = Callable[..., Awaitable[Any]]


@dataclass(slots=True)
class Kept:
    payload: Body
    """The body as kept (redacted where it had to be), or its spool file."""
    redactions: dict[str, int] = field(default_factory=dict)
    ref: WarcRef | None = None
    duplicates: dict[str, Any] = field(default_factory=dict)
    """The page's canonical and the earlier URLs it copies (``duplicates.duplicate_fields``)."""

    def fields(self) -> dict[str, Any]:
        """The document's fields: where the capture is, what was redacted, what it copies."""
        fields = warc_fields(self.ref)
        if self.redactions:
            fields["redacted"] = dict(sorted(self.redactions.items()))
        fields.update(self.duplicates)
        return fields

    async def fingerprint(self, result: FetchResult) -> str | None:
        """Unparsed bodies: the MD5 of the body as kept (2xx only; a spooled body's is taken
        in a thread, off the event loop)."""
        if result.status is None or not 200 <= result.status < 300 or not body_size(self.payload):
            return None
        if isinstance(self.payload, SpooledBody):
            return await asyncio.to_thread(file_md5, self.payload)
        return hashlib.md5(self.payload, usedforsecurity=False).hexdigest()


def header(result: FetchResult, name: str) -> str | None:
    lower = name.lower()
    for key, value in result.headers:
        if key.lower() == lower:
            return value
    return None


def outcome_of(
    item: LeasedUrl,
    result: FetchResult,
    status: UrlStatus,
    fingerprint: str | None,
    kept: Kept | None,
    *,
    at: float,
    not_modified: bool = False,
) -> Outcome:
    """The store's outcome of a fetch, dated ``at`` (the engine's clock), with the answer's
    validators and kept digest."""
    modified = header(result, "Last-Modified")
    if modified is not None and http_date(modified) is None:
        modified = None  # not a date a server would understand back
    ref = None if kept is None else kept.ref
    return Outcome(
        item.id,
        status,
        result.status,
        at,
        fingerprint,
        etag=etag(header(result, "ETag")),
        last_modified=modified,
        digest=None if ref is None else ref.digest,
        not_modified=not_modified,
    )


class Keeper:
    """Redaction and archiving of answers, for the page and media lanes alike."""

    def __init__(
        self,
        config: Config,
        stats: CrawlStats,
        archive: Archive | None,
        parse: Parse | None,
        encode: Parse | None = None,
    ) -> None:
        self.stats = stats
        self.archive = archive
        self.parse = parse
        """The parse pool for redaction (None: redact here, a rare small media body)."""
        self.encode = encode or parse
        """The parse pool for WARC encoding (None: the archive's own thread)."""
        self.policy = redaction_policy(config)
        self.token = config.fetch.user_agent_token
        self.config = config
        self.raw = config.warc.payload == "raw"
        """``[warc] payload = "raw"``: records keep the body as received, unredacted."""
        self.text = config.parse.text
        self.duplicates = DuplicateIndex(config.parse.near_distance, config.parse.remember)
        """Texts seen this run, by URL: a page's document names the earlier URL it copies."""

    def context(self, result: FetchResult, site: str) -> ReadContext:
        hook = self.config.parse.hook
        return ReadContext(
            result.content_type,
            self.token,
            x_robots_of(result.headers),
            self.policy,
            host_of_site(site),
            hook,
            self.config.parse.hook_timeout,
            tuple(result.headers) if hook else (),
            text=self.text,
            link_headers=links_of(result.headers),
        )

    async def keep(
        self,
        result: FetchResult,
        site: str,
        *,
        page: ParsedPage | None = None,
        sent: dict[str, str] | None = None,
        item: LeasedUrl | None = None,
        encoded: EncodedCapture | None = None,
    ) -> Kept:
        """The body as kept and its capture: ``page`` when the body was parsed (it carries
        the redacted body), ``sent`` the conditional headers of the request, ``item`` the
        leased URL (a revisit refers to its last capture), ``encoded`` the capture when the
        parse worker made it with the page (``read_and_capture``)."""
        kept = Kept(result.content)
        if page is not None:
            if page.payload is not None:
                kept.payload = page.payload
            kept.redactions = page.redactions
            kept.duplicates = self.copied(item.fetch_url if item else result.url, page)
        elif result.size and self.policy.enabled and is_text(result.content_type):
            redacted = await self._redact(result, site)
            if redacted is None:
                self.stats.redaction_failures += 1
                if not self.raw:
                    return Kept(b"")  # not redacted: nothing of it is kept
                kept = Kept(b"")  # nothing of it in the documents; the raw archive keeps it
            elif redacted.payload is not None:
                kept.payload, kept.redactions = redacted.payload, redacted.redactions
        self.stats.redactions.update(kept.redactions)
        if encoded is not None and self.archive is not None:
            kept.ref = self.archive.append(encoded, self.stats)
            return kept
        capture = self.capture(result, sent, item)
        if capture is not None and self.archive is not None:
            if self.raw:
                capture = replace(capture, payload=result.content)
            else:
                capture = replace(capture, payload=kept.payload, redactions=kept.redactions)
            kept.ref = await self.archive.write(capture, self.stats, self.encode)
        return kept

    def capture(
        self, result: FetchResult, sent: dict[str, str] | None, item: LeasedUrl | None
    ) -> Capture | None:
        """The capture of ``result`` with its payload still to fill in (the body as kept);
        None when nothing is archived."""
        if self.archive is None or result.status is None:
            return None
        previous = (None, None) if item is None else (item.digest, item.fetched_at)
        return Capture(
            result.url,
            result.started_at,
            result.status,
            result.headers,
            b"",
            request_headers=sent_headers(self.config, sent),
            truncated=result.truncated,
            not_modified=result.status == 304 and bool(sent),
            previous_digest=previous[0],
            previous_date=previous[1],
            ip_address=result.address,
            warcinfo_id=self.archive.files.info_id,
            raw=self.raw,
        )

    async def read(
        self, parse: Parse, result: FetchResult, site: str, sent: dict[str, str], item: LeasedUrl
    ) -> tuple[ParsedPage | None, EncodedCapture | None, str | None]:
        """An HTML answer read by ``parse`` (the parse pool: decoded, redacted, parsed) and,
        when the crawl archives, its WARC records made in the same job: (page, records, why
        the parse failed)."""
        context = self.context(result, site)
        capture = self.capture(result, sent, item)
        if capture is None:
            page, error = await parse_guarded(parse, self.stats, read_page, result, context)
            return page, None, error
        both, error = await parse_guarded(
            parse, self.stats, read_and_capture, result, context, capture, self.level
        )
        return (None, None, error) if both is None else (both[0], both[1], None)

    def copied(self, url: str, page: ParsedPage) -> dict[str, Any]:
        """The document's fields naming what ``page``, fetched from ``url``, copies: its
        declared canonical, an earlier URL with the same or a near text."""
        # A copy that names its canonical speaks for it: its text is remembered under the
        # canonical's URL, so the canonical, fetched later, is no copy of its own copy.
        key = url if page.canonical is None else page.canonical.fetch_url
        found = None if page.text is None else self.duplicates.see(key, page.text)
        if page.canonical is None and found is None:
            return {}
        own = canonical_link(url, None)
        return duplicate_fields(page.canonical, url if own is None else own.canonical, found)

    @property
    def level(self) -> int:
        assert self.archive is not None
        return self.archive.files.level

    async def _redact(self, result: FetchResult, site: str) -> RedactedBody | None:
        context = self.context(result, site)
        try:
            if self.parse is None:
                return redact_body(result.content, context)  # media: a rare, small SVG
            redacted: RedactedBody = await self.parse(redact_body, result.content, context)
            return redacted
        except (ParseTimeout, WorkerLost, MemoryError) as exc:
            log.warning("redaction failed (%s): %s is not archived", type(exc).__name__, result.url)
            return None
