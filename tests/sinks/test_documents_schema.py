"""``docs/documents.schema.json`` (JSON Schema 2020-12) says what a document record holds:
records of each kind pass, and what the crawler never writes (an epoch ``fetched_at``, a field
the schema does not name, a media record without its keys) is refused. The records of real
crawls are held to it in tests/e2e (test_documents_e2e.py, test_archive_e2e.py)."""

from __future__ import annotations

from typing import Any

from courtier.sinks.documents import rfc3339
from document_schema import schema_errors

WARC = {
    "file": "courtier-20261207204100563-00000-host-7.warc.gz",
    "offset": 443,
    "length": 2105,
    "type": "response",
    "digest": "sha1:WIVP4IT7EZKJNMZPXNCN5FY3TQDBHOHW",
}
PAGE: dict[str, Any] = {
    "url": "http://a.test/", "site": "a.test", "depth": 0, "warc": WARC, "status": 200,
    "fetched_at": rfc3339(1796675460.563), "elapsed_ms": 12.5,
    "content_type": "text/html; charset=utf-8", "bytes": 6000, "title": "Home",
    "encoding": "utf-8", "links": ["http://a.test/x"], "images": [], "text": "Hello",
    "markdown": "# Hello", "language": "en", "language_score": 0.9,
    "simhash": "0123456789abcdef", "redacted": {"email": 1},
    "render": {"decision": "shell", "rendered": False},
    "hook": {"price": 12.5},
    "hook_links": {"added": ["http://a.test/y"], "dropped": [], "priority": 2},
}  # fmt: skip
MEDIA: dict[str, Any] = {
    "url": "http://s3.store.test/b/1.jpg", "site": "s3.store.test", "kind": "media",
    "source": "store", "referrer": "a.test", "keys": ["bucket:store/b"], "cache": "miss",
    "md5": "d9f2e8b7b2a0ea2b1a19711a18b66207", "warc": WARC, "status": 200,
    "fetched_at": rfc3339(1796675460.0), "elapsed_ms": 0.5, "content_type": "image/jpeg",
    "bytes": 2048,
}  # fmt: skip
PDF: dict[str, Any] = {
    "url": "http://a.test/m.pdf", "site": "a.test", "depth": 2, "status": 200,
    "fetched_at": rfc3339(1796675461.0), "elapsed_ms": 3.0, "content_type": "application/pdf",
    "bytes": 9000, "truncated": True, "format": "pdf", "pdf_pages": 3, "text": "Lamp",
    "pdf_error": "page 2: bad", "pdf_truncated": "size", "links": [], "images": [],
    "title": None, "encoding": None,
}  # fmt: skip
FAILED: dict[str, Any] = {
    "url": "http://a.test/slow", "site": "a.test", "status": None, "error": "timeout",
    "fetched_at": rfc3339(1796675462.0), "elapsed_ms": 30000.0, "content_type": "",
    "bytes": 0, "depth": 1,
}  # fmt: skip


def test_records_of_every_kind_pass():
    assert schema_errors([PAGE, MEDIA, PDF, FAILED]) == []


def test_what_the_crawler_never_writes_is_refused():
    epoch = {**PAGE, "fetched_at": 1796675460.563}  # documents.jsonl before segments
    no_zone = {**PAGE, "fetched_at": "2026-12-07T20:41:00.563"}
    unnamed = {**PAGE, "surprise": 1}
    keyless = {key: value for key, value in MEDIA.items() if key != "keys"}
    media_depth = {**MEDIA, "depth": 1}  # a page's field on a media record
    bad_warc = {**PAGE, "warc": {**WARC, "type": "request"}}
    for record in (epoch, no_zone, unnamed, keyless, media_depth, bad_warc):
        assert schema_errors([record]), record
