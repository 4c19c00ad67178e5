"""The CDXJ index of a crawl's WARC files: SURT keys in byte order, offsets that lead to the
record they name, finished files only, the same bytes every run."""

from __future__ import annotations

import json
import os
import time
import zlib
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from courtier.sinks.cdxj import INDEX_NAME, write_index
from courtier.sinks.warc import Capture, WarcFiles

URLS = [
    "http://www.b.test/",
    "http://a.test:8080/z?b=2&a=1",
    "http://a.test/",
    "https://A.test/path/page.html",
    "http://sub.a.test/x",
    "http://a.test/robots.txt",
]


def capture(url: str, body: bytes = b"<title>t</title>", **more: object) -> Capture:
    fields: dict[str, object] = {
        "url": url,
        "fetched_at": time.time(),
        "status": 200,
        "response_headers": (("Content-Type", "text/html; charset=utf-8"),),
        "payload": body,
    }
    fields.update(more)
    return Capture(**fields)  # type: ignore[arg-type]


def lines(path: Path) -> list[tuple[str, str, dict[str, str]]]:
    parsed = []
    for line in path.read_text().splitlines():
        key, stamp, fields = line.split(" ", 2)
        parsed.append((key, stamp, json.loads(fields)))
    return parsed


def crawl_files(directory: Path, max_bytes: int = 1 << 30) -> WarcFiles:
    files = WarcFiles(directory, max_bytes=max_bytes)
    for n, url in enumerate(URLS):
        files.write(capture(url, b"<p>%d</p>" % n * 200))
    return files


def test_each_line_is_a_surt_key_a_timestamp_and_the_fields_pywb_reads(tmp_path: Path):
    import surt

    crawl_files(tmp_path).close()
    result = write_index(tmp_path)
    assert result.path == tmp_path / INDEX_NAME and result.lines == len(URLS)
    found = lines(result.path)
    assert {fields["url"] for _k, _s, fields in found} == set(URLS)
    for key, stamp, fields in found:
        assert key == surt.surt(fields["url"])
        assert len(stamp) == 14 and stamp.isdigit()
        assert set(fields) == {"url", "mime", "status", "digest", "length", "offset", "filename"}
        assert (fields["mime"], fields["status"]) == ("text/html", "200")
        assert fields["digest"].startswith("sha1:")


def test_surt_keys_reverse_the_host_drop_www_and_sort_the_query(tmp_path: Path):
    crawl_files(tmp_path).close()
    keys = {fields["url"]: key for key, _s, fields in lines(write_index(tmp_path).path)}
    assert keys["http://www.b.test/"] == "test,b)/"
    assert keys["http://a.test:8080/z?b=2&a=1"] == "test,a:8080)/z?a=1&b=2"
    assert keys["https://A.test/path/page.html"] == "test,a)/path/page.html"
    assert keys["http://sub.a.test/x"] == "test,a,sub)/x"


def test_lines_are_in_byte_order_across_files(tmp_path: Path):
    files = crawl_files(tmp_path, max_bytes=1)  # a file per capture
    files.close()
    assert len(files.finished) == len(URLS)
    text = write_index(tmp_path).path.read_bytes().splitlines()
    assert text == sorted(text) and len(text) == len(URLS)
    assert [line.split(b" ", 1)[0] for line in text][:3] == [
        b"test,a)/",
        b"test,a)/path/page.html",
        b"test,a)/robots.txt",
    ]


def test_every_offset_leads_to_the_record_the_line_names(tmp_path: Path):
    files = crawl_files(tmp_path, max_bytes=3000)  # a few files
    files.write(capture(URLS[2], b"<p>0</p>" * 200, previous_digest=None))
    files.close()
    found = lines(write_index(tmp_path).path)
    assert len({fields["filename"] for _k, _s, fields in found}) > 1
    for _key, _stamp, fields in found:
        with (tmp_path / fields["filename"]).open("rb") as stream:
            stream.seek(int(fields["offset"]))
            record = next(iter(ArchiveIterator(stream)))
            assert record.rec_headers.get_header("WARC-Target-URI") == fields["url"]
            assert record.rec_type == "response"
            assert record.rec_headers.get_header("WARC-Payload-Digest") == fields["digest"]
            record.content_stream().read()
        with (tmp_path / fields["filename"]).open("rb") as stream:
            stream.seek(int(fields["offset"]))
            member = stream.read(int(fields["length"]))
        reader = zlib.decompressobj(zlib.MAX_WBITS | 16)
        reader.decompress(member)
        assert reader.eof and not reader.unused_data  # the length is the record's member


def test_a_revisit_is_indexed_as_warc_revisit(tmp_path: Path):
    files = WarcFiles(tmp_path)
    first = files.write(capture(URLS[2]))
    files.write(capture(URLS[2], previous_digest=first.digest, previous_date=time.time()))
    files.close()
    mimes = sorted(fields["mime"] for _k, _s, fields in lines(write_index(tmp_path).path))
    assert mimes == ["text/html", "warc/revisit"]


def test_a_file_still_being_written_is_left_out_until_it_is_finished(tmp_path: Path):
    done = crawl_files(tmp_path)
    done.close()
    live = WarcFiles(tmp_path, prefix="live")
    live.write(capture("http://live.test/"))
    live.flush()  # on disk, as .open: a live crawl's current file
    result = write_index(tmp_path)  # this process is alive: the file is its writer's
    assert result.skipped and result.skipped[0].startswith("live-")
    assert "http://live.test/" not in result.path.read_text()
    live.close()
    again = write_index(tmp_path)
    assert not again.skipped and "http://live.test/" in again.path.read_text()


def test_an_open_file_whose_writer_is_gone_is_finished_and_indexed(tmp_path: Path):
    crashed = WarcFiles(tmp_path)
    crashed.write(capture("http://gone.test/"))
    crashed.flush()  # never closed: what a kill -9 leaves
    assert crashed._file is not None
    crashed._file.close()
    dead = crashed._path.name.replace(f"-{os.getpid()}.warc.gz", "-999999999.warc.gz")
    (tmp_path / f"{crashed._path.name}.open").rename(tmp_path / f"{dead}.open")
    result = write_index(tmp_path, alive=lambda pid: pid != 999999999)
    assert len(result.finished) == 1 and not result.skipped
    assert "http://gone.test/" in result.path.read_text()
    assert not list(tmp_path.glob("*.open"))


def test_the_same_files_give_the_same_index(tmp_path: Path):
    crawl_files(tmp_path, max_bytes=3000).close()
    first = write_index(tmp_path).path.read_bytes()
    second = write_index(tmp_path).path.read_bytes()
    assert first == second and first
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(f".{INDEX_NAME}")]


def test_a_file_cut_mid_record_keeps_its_whole_records(tmp_path: Path):
    files = WarcFiles(tmp_path)
    refs = [files.write(capture(url, b"<p>x</p>" * 300)) for url in URLS[:3]]
    files.close()
    path = tmp_path / refs[0].file
    with path.open("r+b") as stream:  # a disk that filled while the last record was written
        stream.truncate(refs[2].offset + refs[2].length // 2)
    result = write_index(tmp_path)
    assert path.name in result.damaged
    assert {fields["url"] for _k, _s, fields in lines(result.path)} == set(URLS[:2])


def test_an_empty_directory_gives_an_empty_index(tmp_path: Path):
    result = write_index(tmp_path)
    assert result.path.read_text() == "" and result.files == []


def test_the_command_writes_the_index_and_reports_it(tmp_path: Path, capsys):
    from courtier.cli import main

    crawl_files(tmp_path / "warc").close()
    assert main(["index", "--out", str(tmp_path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["lines"] == len(URLS) and len(report["files"]) == 1
    assert (tmp_path / "warc" / INDEX_NAME).exists()


def test_the_command_refuses_a_directory_without_warc_files(tmp_path: Path, capsys):
    from courtier.cli import main

    assert main(["index", "--out", str(tmp_path)]) == 2
    assert "no warc/ directory" in capsys.readouterr().err


def test_the_index_is_not_taken_for_a_warc_file(tmp_path: Path):
    crawl_files(tmp_path).close()
    write_index(tmp_path)
    assert write_index(tmp_path).files == [p.name for p in tmp_path.glob("*.warc.gz")]


def test_an_uncompressed_warc_from_another_tool_is_indexed_too(tmp_path: Path):
    import io

    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    with (tmp_path / "other.warc").open("wb") as stream:
        writer = WARCWriter(stream, gzip=False)
        http = StatusAndHeaders("200 OK", [("Content-Type", "text/plain")], protocol="HTTP/1.1")
        record = writer.create_warc_record(
            "http://other.test/", "response", payload=io.BytesIO(b"hi"), length=2, http_headers=http
        )
        writer.write_record(record)
    result = write_index(tmp_path)
    assert result.files == ["other.warc"] and not result.damaged
    ((key, _stamp, fields),) = lines(result.path)
    assert key == "test,other)/" and fields["filename"] == "other.warc"
