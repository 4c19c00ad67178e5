"""WARC 1.1 files: records standard tools read back, rotation, finishing, revisits."""

from __future__ import annotations

import io
import re
import subprocess
import sys
import time
import zlib
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from courtier.sinks.warc import (
    IDENTICAL_PAYLOAD,
    SERVER_NOT_MODIFIED,
    Capture,
    WarcFiles,
    payload_digest,
    warc_date,
)

URL = "http://a.test:8080/page?q=1"
HTML = b"<html><title>t</title>" + b"<p>hello world</p>" * 500


def capture(**more: object) -> Capture:
    fields: dict[str, object] = {
        "url": URL,
        "fetched_at": time.time(),
        "status": 200,
        "response_headers": (("Content-Type", "text/html"), ("ETag", '"v1"')),
        "payload": HTML,
        "request_headers": (("User-Agent", "courtier-test"),),
    }
    fields.update(more)
    return Capture(**fields)  # type: ignore[arg-type]


def records(path: Path) -> list:
    with path.open("rb") as stream:
        return [
            (
                record.rec_type,
                dict(record.rec_headers.headers),
                record.http_headers,
                record.content_stream().read(),
            )
            for record in ArchiveIterator(stream)
        ]


def test_a_capture_is_a_response_and_a_request_after_the_warcinfo(tmp_path: Path):
    files = WarcFiles(tmp_path)
    ref = files.write(capture())
    assert [p.name for p in tmp_path.iterdir()] == [f"{ref.file}.open"]  # open while writing
    files.close()
    path = tmp_path / ref.file
    assert path.exists() and files.finished == [path]
    kinds = [r[0] for r in records(path)]
    assert kinds == ["warcinfo", "response", "request"]
    _, warc, http, body = records(path)[1]
    assert warc["WARC-Target-URI"] == URL and warc["WARC-Payload-Digest"] == ref.digest
    assert ref.digest == payload_digest(HTML) and body == HTML
    assert http.get_statuscode() == "200" and http.get_header("Content-Length") == str(len(HTML))
    _, request, http_request, _ = records(path)[2]
    assert request["WARC-Concurrent-To"] == warc["WARC-Record-ID"]
    assert http_request.protocol == "GET" and http_request.get_header("Host") == "a.test:8080"
    with path.open("rb") as stream:  # the reference points at the response record
        stream.seek(ref.offset)
        first = next(iter(ArchiveIterator(stream)))
        assert (
            first.rec_type == "response" and first.rec_headers.get_header("WARC-Target-URI") == URL
        )
    assert path.read_bytes()[ref.offset : ref.offset + 2] == b"\x1f\x8b"  # a gzip member


def test_warc_version_is_1_1_and_the_payload_as_kept_is_described(tmp_path: Path):
    files = WarcFiles(tmp_path)
    headers = (("Content-Type", "text/html"), ("Content-Encoding", "gzip"), ("Content-Length", "9"))
    ref = files.write(capture(response_headers=headers, truncated=True, redactions={"email": 2}))
    files.close()
    raw = (tmp_path / ref.file).read_bytes()
    import gzip

    assert gzip.decompress(raw).startswith(b"WARC/1.1\r\n")
    _, warc, http, _ = records(tmp_path / ref.file)[1]
    assert warc["WARC-Truncated"] == "length"
    assert warc["WARC-Courtier-Redactions"] == "email:2"
    assert http.get_header("Content-Encoding") is None
    assert http.get_header("X-Courtier-Original-Content-Encoding") == "gzip"


def test_a_304_is_a_server_not_modified_revisit_and_an_identical_payload_too(tmp_path: Path):
    files = WarcFiles(tmp_path)
    first = files.write(capture())
    earlier = time.time() - 3600
    not_modified = files.write(
        capture(status=304, payload=b"", not_modified=True, previous_date=earlier)
    )
    identical = files.write(capture(previous_digest=first.digest, previous_date=earlier))
    changed = files.write(capture(payload=b"new", previous_digest=first.digest))
    files.close()
    assert (not_modified.record, not_modified.digest) == ("revisit", None)
    assert (identical.record, identical.digest) == ("revisit", first.digest)
    assert changed.record == "response"
    by_offset = {}
    with (tmp_path / first.file).open("rb") as stream:
        iterator = ArchiveIterator(stream)
        for record in iterator:
            by_offset[iterator.offset] = record.rec_headers
    assert by_offset[not_modified.offset].get_header("WARC-Profile") == SERVER_NOT_MODIFIED
    assert by_offset[identical.offset].get_header("WARC-Profile") == IDENTICAL_PAYLOAD
    assert by_offset[identical.offset].get_header("WARC-Refers-To-Target-URI") == URL
    assert (
        by_offset[identical.offset]
        .get_header("WARC-Refers-To-Date")
        .startswith(time.strftime("%Y-%m-%dT", time.gmtime(earlier)))
    )


def test_files_rotate_by_size_and_each_starts_with_warcinfo(tmp_path: Path):
    files = WarcFiles(tmp_path, max_bytes=2000, level=1)
    refs = [files.write(capture(payload=bytes(range(256)) * 20)) for _ in range(4)]
    files.close()
    names = sorted({ref.file for ref in refs})
    assert len(names) >= 2 and not list(tmp_path.glob("*.open"))
    for name in names:
        assert records(tmp_path / name)[0][0] == "warcinfo"


def test_header_values_are_redacted_in_the_record(tmp_path: Path):
    files = WarcFiles(tmp_path)
    location = "https://x.test/cb?email=jane%40example.com"
    ref = files.write(capture(status=302, response_headers=(("Location", location),), payload=b""))
    files.close()
    _, warc, http, _ = records(tmp_path / ref.file)[1]
    assert "jane" not in http.get_header("Location")
    assert warc["WARC-Courtier-Redactions"] == "email:1"


def test_warcio_check_and_index_read_the_files(tmp_path: Path):
    files = WarcFiles(tmp_path)
    ref = files.write(capture())
    files.write(capture(status=304, payload=b"", not_modified=True))
    files.close()
    path = str(tmp_path / ref.file)
    check = subprocess.run(
        [sys.executable, "-m", "warcio.cli", "check", "-v", path],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert check.returncode == 0, check.stdout + check.stderr
    assert "digest pass" in check.stdout and "digest fail" not in check.stdout
    index = subprocess.run(
        [sys.executable, "-m", "warcio.cli", "index", "-f", "warc-type,offset", path],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert f'"offset": "{ref.offset}"' in index


def _kept_with_headers(directory: Path, headers: tuple[tuple[str, str], ...]) -> tuple:
    """The HTTP headers and payload of a response written with ``headers``, as read back."""
    files = WarcFiles(directory)
    ref = files.write(capture(response_headers=headers))
    files.close()
    _, _warc, http, body = records(directory / ref.file)[1]
    return http, body


def test_header_bytes_that_are_no_utf8_do_not_break_the_record(tmp_path: Path):
    odd = (("X-Odd", "caf\udce9"), ("Set-Cookie", "name=é"), ("Content-Type", "text/html"))
    http, body = _kept_with_headers(tmp_path, odd)
    assert body == HTML and http.get_header("X-Odd") is not None


def test_appends_are_written_at_flush_and_their_offsets_hold(tmp_path: Path):
    files = WarcFiles(tmp_path)
    refs = [files.write(capture(payload=HTML + bytes([n]))) for n in range(3)]
    path = tmp_path / f"{refs[0].file}.open"
    assert path.stat().st_size == 0  # gathered, not written yet
    files.flush()
    data = path.read_bytes()
    assert len(data) > refs[-1].offset + refs[-1].length  # the last request record follows
    for n, ref in enumerate(refs):
        with path.open("rb") as stream:
            stream.seek(ref.offset)
            record = next(iter(ArchiveIterator(stream)))
            assert record.content_stream().read() == HTML + bytes([n])
    files.close()


def test_a_megabyte_of_appends_is_written_without_waiting_for_flush(tmp_path: Path):
    from courtier.sinks.warc import FLUSH_BYTES

    files = WarcFiles(tmp_path, level=0)
    big = bytes(range(256)) * 1024  # 256 KB, stored (level 0) as it is
    refs = [files.write(capture(payload=big)) for _ in range(5)]
    path = tmp_path / f"{refs[0].file}.open"
    assert path.stat().st_size >= FLUSH_BYTES
    files.close()


class _FullDisk:
    """A file whose writes fail as on a full disk."""

    def __init__(self, real: object) -> None:
        self.real = real

    def write(self, data: object) -> int:
        raise OSError(28, "No space left on device")

    def close(self) -> None:
        self.real.close()  # type: ignore[attr-defined]


def test_a_failed_write_finishes_the_file_and_never_misplaces_a_later_record(tmp_path: Path):
    import pytest

    files = WarcFiles(tmp_path)
    kept = files.write(capture(payload=b"kept"))
    files.flush()
    lost = [files.write(capture(payload=b"lost")) for _ in range(2)]
    files._file = _FullDisk(files._file)  # type: ignore[assignment]
    with pytest.raises(OSError, match="No space"):
        files.flush()
    assert files.lost_records == 2
    first = tmp_path / kept.file
    assert first.exists()  # finished as it was: the lost records' offsets lie past its end
    assert all(ref.offset >= first.stat().st_size for ref in lost)
    after = files.write(capture(payload=b"after"))
    files.close()
    assert after.file != kept.file
    with (tmp_path / after.file).open("rb") as stream:
        stream.seek(after.offset)
        assert next(iter(ArchiveIterator(stream))).content_stream().read() == b"after"
    assert [r[3] for r in records(first) if r[0] == "response"] == [b"kept"]


def test_a_header_value_warcio_leaves_unencoded_is_percent_encoded_whole(tmp_path: Path):
    # warcio encodes the "name=value" parameters of a value with a ";" and nothing else:
    # "café; q=x" would stay non-ASCII and fail the record.
    odd = (("X-Odd", "café; q=x"), ("Link", "<a>; title=é"), ("Content-Type", "text/html"))
    http, body = _kept_with_headers(tmp_path, odd)
    assert http.get_header("X-Odd") == "caf%C3%A9; q*=UTF-8''x"
    assert http.get_header("Link") == "<a>; title*=UTF-8''%C3%A9"
    assert body == HTML


def test_records_are_the_ones_warcio_builds(tmp_path: Path):
    # The records are built without warcio's record objects (for speed): byte for byte what
    # warcio's create_warc_record and write_record give, record ids aside.
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    from courtier.sinks.warc import encode_capture

    kept = capture(redactions={"email": 2}, truncated=True)
    members = [zlib.decompress(m, 31) for m in encode_capture(kept).members]
    ours = [re.sub(rb"<urn:uuid:[^>]+>", b"<id>", m) for m in members]
    out = io.BytesIO()
    writer = WARCWriter(out, gzip=False, warc_version="1.1")
    date = warc_date(kept.fetched_at)
    http = StatusAndHeaders(
        "200 OK",
        [("Content-Type", "text/html"), ("ETag", '"v1"'), ("Content-Length", str(len(HTML)))],
        protocol="HTTP/1.1",
    )
    warc = {
        "WARC-Date": date,
        "WARC-Courtier-Redactions": "email:2",
        "WARC-Truncated": "length",
        "WARC-Payload-Digest": payload_digest(HTML),
    }
    response = writer.create_warc_record(
        URL,
        "response",
        payload=io.BytesIO(HTML),
        length=len(HTML),
        http_headers=http,
        warc_headers_dict=warc,
    )
    writer.write_record(response)
    first = out.getvalue()
    out.seek(0)
    out.truncate()
    request_http = StatusAndHeaders(
        "GET /page?q=1 HTTP/1.1",
        [("Host", "a.test:8080"), ("User-Agent", "courtier-test")],
        is_http_request=True,
    )
    request = writer.create_warc_record(
        URL,
        "request",
        http_headers=request_http,
        warc_headers_dict={"WARC-Date": date, "WARC-Concurrent-To": "<id>"},
    )
    writer.write_record(request)
    theirs = [re.sub(rb"<urn:uuid:[^>]+>", b"<id>", m) for m in (first, out.getvalue())]
    assert ours == theirs
