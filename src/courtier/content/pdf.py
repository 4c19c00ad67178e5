"""PDF documents read in a parse worker (``read_pdf``): text, title and links, with pypdf.

Rules:
- A PDF is read from its bytes (never a path or a URL): pypdf in non-strict mode, so a file
  with a damaged cross-reference table is recovered where pypdf can. One cut at
  ``[fetch] max_body_bytes`` (its document says ``truncated``) has usually lost the
  cross-reference table and trailer at its end, and gets ``pdf_error``: raise the limit
  for sites of large PDFs.
- A PDF that cannot be read gives a document with ``pdf_error`` saying why (``encrypted``:
  a password is needed; ``unreadable: ...``: what pypdf said) and no text; it never raises,
  so a hostile file costs its own document and nothing else. The pool's time budget
  (``[crawl] parse_timeout``) is the backstop for a file pypdf spends too long on; before
  it, text extraction stops after ``TEXT_SECONDS`` and ``MAX_PAGES`` pages, keeping what it
  has (``pdf_truncated``).
- The text and the title are redacted like a page's (``courtier.sinks.redact``) before they
  leave the worker; a link annotation's URI holding a secret becomes a placeholder, which
  the crawl's intake never fetches.
- Links: the ``/URI`` actions of link annotations (cheap: a walk over each page's
  annotation list), resolved against the PDF's URL and canonicalised like a page's links.
"""

from __future__ import annotations

import hashlib
import io
import logging
import time
from typing import Any, Final

from courtier.content.parse import ParsedPage, resolve_into
from courtier.sinks.redact import RedactionPolicy, redact

PDF_TYPE: Final = "application/pdf"
MAX_PAGES: Final = 1000
"""Pages whose text is extracted; the rest are counted, not read."""
TEXT_SECONDS: Final = 5.0
"""Seconds of text extraction one PDF may take before the rest of its pages are skipped."""
MAX_TEXT_CHARS: Final = 2_000_000
"""Characters of text kept from one PDF."""
MAX_LINKS: Final = 5000


def read_pdf(
    body: bytes,
    base_url: str,
    policy: RedactionPolicy,
    region: str,
    *,
    clock: Any = time.monotonic,
) -> ParsedPage:
    """The ``ParsedPage`` of a PDF: title (its metadata), links (its link annotations) and,
    in ``fields``, its text, page count and any reason it could not be read."""
    # pypdf logs every repair it makes of a damaged file: noise in a crawl's log.
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    from pypdf import PdfReader

    page = ParsedPage(encoding="binary")
    page.fields["format"] = "pdf"
    page.fingerprint = hashlib.md5(body, usedforsecurity=False).hexdigest()
    try:
        reader = PdfReader(io.BytesIO(body), strict=False)
        if reader.is_encrypted and not _opened(reader):
            page.fields["pdf_error"] = "encrypted"
            return page
        pages = reader.pages
        count = len(pages)
        title = reader.metadata.title if reader.metadata is not None else None
    except Exception as exc:  # pypdf on hostile input raises far beyond its own errors
        page.fields["pdf_error"] = _why(exc)
        return page
    page.fields["pdf_pages"] = count
    texts: list[str] = []
    size = 0
    seen: set[str] = set()
    started = clock()
    for number in range(min(count, MAX_PAGES)):
        if clock() - started > TEXT_SECONDS or size > MAX_TEXT_CHARS:
            page.fields["pdf_truncated"] = "time" if size <= MAX_TEXT_CHARS else "size"
            break
        try:
            one = pages[number]
            text = one.extract_text() or ""
            uris = _uris(one)
        except Exception as exc:  # one broken page: keep the others
            page.fields.setdefault("pdf_page_errors", 0)
            page.fields["pdf_page_errors"] += 1
            page.fields.setdefault("pdf_error", f"page {number + 1}: {_why(exc)}")
            continue
        texts.append(text)
        size += len(text)
        for uri in uris:
            if len(page.links) < MAX_LINKS:
                resolve_into(redact(uri, policy, region).text, base_url, seen, page.links, page)
    else:
        if count > MAX_PAGES:
            page.fields["pdf_truncated"] = "pages"
    text = "\n".join(texts).strip()[:MAX_TEXT_CHARS]
    redacted = redact(text, policy, region)
    page.fields["text"] = redacted.text
    page.redactions = dict(redacted.counts)
    if isinstance(title, str) and title.strip():
        clean = redact(title.strip()[:500], policy, region)
        page.title = clean.text
        for kind, n in clean.counts.items():
            page.redactions[kind] = page.redactions.get(kind, 0) + n
    return page


def _opened(reader: Any) -> bool:
    """An encrypted PDF opened with the empty user password (readable by anyone)."""
    try:
        return bool(reader.decrypt(""))
    except Exception:  # an unsupported method (AES without a crypto library), a bad file
        return False


def _uris(page: Any) -> list[str]:
    """The URIs of a page's link annotations."""
    found: list[str] = []
    annotations = page.get("/Annots")
    if annotations is None:
        return found
    for ref in annotations.get_object():
        annotation = ref.get_object()
        if annotation.get("/Subtype") != "/Link":
            continue
        action = annotation.get("/A")
        if action is None:
            continue
        action = action.get_object()
        uri = action.get("/URI")
        if action.get("/S") == "/URI" and uri is not None:
            value = uri.get_object()
            if isinstance(value, bytes):
                value = value.decode("latin-1")
            found.append(str(value))
    return found


def _why(exc: BaseException) -> str:
    message = " ".join(str(exc).split())[:200]
    return f"unreadable: {type(exc).__name__}" + (f": {message}" if message else "")
