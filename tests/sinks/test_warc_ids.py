"""Every record names its file's warcinfo record (WARC-Warcinfo-ID), even a capture encoded
for a file that was finished before it was appended; the address a fetch went to is on its
records (WARC-IP-Address); a raw capture keeps the body and headers as received."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from courtier.sinks.warc import Capture, WarcFiles, encode_capture, payload_digest

EMAIL = "jane.doe@example.com"


def capture(url: str = "http://a.test/", body: bytes = b"<p>hi</p>", **more: object) -> Capture:
    fields: dict[str, object] = {
        "url": url,
        "fetched_at": time.time(),
        "status": 200,
        "response_headers": (("Content-Type", "text/html"), ("X-Owner", EMAIL)),
        "payload": body,
        "request_headers": (("User-Agent", "courtier-test"),),
    }
    fields.update(more)
    return Capture(**fields)  # type: ignore[arg-type]


def headers_by_file(directory: Path) -> dict[str, list[tuple[str, dict[str, str]]]]:
    found: dict[str, list[tuple[str, dict[str, str]]]] = {}
    for path in sorted(directory.glob("*.warc.gz")):
        with path.open("rb") as stream:
            found[path.name] = [
                (record.rec_type, dict(record.rec_headers.headers))
                for record in ArchiveIterator(stream)
            ]
    return found


def test_every_record_names_the_warcinfo_record_of_its_own_file(tmp_path: Path):
    files = WarcFiles(tmp_path, max_bytes=2000)  # rotates every capture or two
    for n in range(6):
        files.write(capture(f"http://a.test/{n}", b"<p>%d</p>" % n * 150))
    files.close()
    by_file = headers_by_file(tmp_path)
    assert len(by_file) >= 3
    ids = set()
    for records in by_file.values():
        (kind, info), *rest = records
        assert kind == "warcinfo" and "WARC-Warcinfo-ID" not in info
        ids.add(info["WARC-Record-ID"])
        assert rest and all(h["WARC-Warcinfo-ID"] == info["WARC-Record-ID"] for _k, h in rest)
    assert len(ids) == len(by_file)


def test_a_capture_encoded_for_a_finished_file_is_rebound_to_the_current_one(tmp_path: Path):
    files = WarcFiles(tmp_path, max_bytes=2000)
    files.write(capture("http://a.test/first"))
    meant_for = files.info_id
    late = encode_capture(capture("http://a.test/late", warcinfo_id=meant_for))  # in a worker
    files.write(capture("http://a.test/big", b"x" * 5000))  # past max_bytes: finished
    assert files.info_id != meant_for
    ref = files.append(late)
    files.close()
    assert files.rebound == 1
    records = headers_by_file(tmp_path)[ref.file]
    info = records[0][1]["WARC-Record-ID"]
    late_records = [h for _k, h in records if h.get("WARC-Target-URI") == "http://a.test/late"]
    assert len(late_records) == 2
    assert all(h["WARC-Warcinfo-ID"] == info != meant_for for h in late_records)
    check = subprocess.run(
        [sys.executable, "-m", "warcio.cli", "check", str(tmp_path / ref.file)],
        capture_output=True,
        text=True,
    )  # the digests still hold: the block was not touched
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_capture_encoded_without_an_id_gets_the_files_on_append(tmp_path: Path):
    files = WarcFiles(tmp_path)
    ref = files.append(encode_capture(capture()))
    files.close()
    records = headers_by_file(tmp_path)[ref.file]
    info = records[0][1]["WARC-Record-ID"]
    assert [h["WARC-Warcinfo-ID"] for _k, h in records[1:]] == [info, info]


def test_the_address_the_request_went_to_is_on_the_response_and_the_request(tmp_path: Path):
    files = WarcFiles(tmp_path)
    files.write(capture(ip_address="127.0.0.7"))
    files.write(capture("http://b.test/", ip_address="::1"))
    files.write(capture("http://c.test/"))  # not known (a rendered page's DOM, a test)
    files.close()
    (records,) = headers_by_file(tmp_path).values()
    addresses = {(k, h["WARC-Target-URI"]): h.get("WARC-IP-Address") for k, h in records[1:]}
    assert addresses == {
        ("response", "http://a.test/"): "127.0.0.7",
        ("request", "http://a.test/"): "127.0.0.7",
        ("response", "http://b.test/"): "::1",
        ("request", "http://b.test/"): "::1",
        ("response", "http://c.test/"): None,
        ("request", "http://c.test/"): None,
    }


def test_a_raw_capture_keeps_the_headers_and_body_as_received(tmp_path: Path):
    body = f"<p>write to {EMAIL}</p>".encode()
    files = WarcFiles(tmp_path)
    files.write(capture(body=body, raw=True))
    files.write(capture("http://b.test/", body=body))
    files.close()
    with next(tmp_path.glob("*.warc.gz")).open("rb") as stream:
        responses = {
            r.rec_headers.get_header("WARC-Target-URI"): (r, r.content_stream().read())
            for r in ArchiveIterator(stream)
            if r.rec_type == "response"
        }
    raw, raw_body = responses["http://a.test/"]
    assert raw_body == body and raw.http_headers.get_header("X-Owner") == EMAIL
    assert raw.rec_headers.get_header("WARC-Payload-Digest") == payload_digest(body)
    assert raw.rec_headers.get_header("WARC-Courtier-Redactions") is None
    redacted, _ = responses["http://b.test/"]
    assert redacted.http_headers.get_header("X-Owner") == "[REDACTED:email]"
    assert redacted.rec_headers.get_header("WARC-Courtier-Redactions") == "email:1"


def test_records_with_the_new_fields_are_still_the_ones_warcio_builds():
    import io
    import re
    import zlib

    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    from courtier.sinks.warc import warc_date

    info = "<urn:uuid:00000000-0000-4000-8000-000000000000>"
    kept = capture(body=b"<p>x</p>", warcinfo_id=info, ip_address="127.0.0.9", raw=True)
    ours = [zlib.decompress(m, 31) for m in encode_capture(kept).members]
    out = io.BytesIO()
    writer = WARCWriter(out, gzip=False, warc_version="1.1")
    date = warc_date(kept.fetched_at)
    common = {"WARC-Date": date, "WARC-Warcinfo-ID": info, "WARC-IP-Address": "127.0.0.9"}
    http = StatusAndHeaders(
        "200 OK",
        [("Content-Type", "text/html"), ("X-Owner", EMAIL), ("Content-Length", "8")],
        protocol="HTTP/1.1",
    )
    response = writer.create_warc_record(
        "http://a.test/",
        "response",
        payload=io.BytesIO(b"<p>x</p>"),
        length=8,
        http_headers=http,
        warc_headers_dict={**common, "WARC-Payload-Digest": payload_digest(b"<p>x</p>")},
    )
    writer.write_record(response)
    first = out.getvalue()
    out.seek(0)
    out.truncate()
    request_http = StatusAndHeaders(
        "GET / HTTP/1.1",
        [("Host", "a.test"), ("User-Agent", "courtier-test")],
        is_http_request=True,
    )
    request = writer.create_warc_record(
        "http://a.test/",
        "request",
        http_headers=request_http,
        warc_headers_dict={**common, "WARC-Concurrent-To": "<id>"},
    )
    writer.write_record(request)

    def ids(data: bytes) -> bytes:
        return re.sub(rb"<urn:uuid:[^>]+>", b"<id>", data)

    assert [ids(m) for m in ours] == [ids(first), ids(out.getvalue())]
