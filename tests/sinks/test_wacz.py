"""WACZ packaging: the fixed layout, WARCs and the ZipNum index stored (not deflated), every
file's sha256 in datapackage.json and that file's in datapackage-digest.json, pages titled
from the documents, a live writer's file left out, and nothing to package refused."""

from __future__ import annotations

import gzip
import hashlib
import json
import time
import zipfile
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from courtier.sinks.documents import DocumentSink
from courtier.sinks.wacz import BLOCK_LINES, NothingToPackage, write_wacz
from courtier.sinks.warc import Capture, WarcFiles

URLS = [f"http://a.test/p{n}" for n in range(BLOCK_LINES + 20)] + ["http://b.test/data.json"]


def _capture(url: str) -> Capture:
    kind = "application/json" if url.endswith(".json") else "text/html; charset=utf-8"
    return Capture(
        url=url,
        fetched_at=time.time(),
        status=200,
        response_headers=(("Content-Type", kind),),
        payload=f"<title>{url}</title>".encode(),
    )


def _crawl(out: Path) -> None:
    files = WarcFiles(out / "warc", max_bytes=120_000)
    documents = DocumentSink(out)
    for url in URLS:
        ref = files.write(_capture(url))
        documents.write(
            {
                "url": url,
                "title": f"Title of {url}",
                "warc": {"file": ref.file, "offset": ref.offset},
            }
        )
    documents.close()
    files.close()


def test_the_package_has_the_wacz_layout_and_every_hash(tmp_path: Path):
    out = tmp_path / "out"
    _crawl(out)
    result = write_wacz(out, tmp_path / "crawl.wacz", title="A test")
    warcs = sorted(p.name for p in (out / "warc").glob("*.warc.gz"))
    assert len(warcs) > 1 and result.warcs == warcs and result.records == len(URLS)
    with zipfile.ZipFile(result.path) as archive:
        names = archive.namelist()
        assert names == [f"archive/{name}" for name in warcs] + [
            "indexes/index.cdx.gz", "indexes/index.idx", "pages/pages.jsonl",
            "datapackage.json", "datapackage-digest.json",
        ]  # fmt: skip
        for info in archive.infolist():
            if info.filename.startswith("archive/") or info.filename.endswith(".cdx.gz"):
                assert info.compress_type == zipfile.ZIP_STORED, info.filename
        package = json.loads(archive.read("datapackage.json"))
        assert package["wacz_version"] == "1.1.1" and package["profile"] == "data-package"
        assert package["title"] == "A test" and package["software"].startswith("courtier/")
        resources = {r["path"]: r for r in package["resources"]}
        assert sorted(resources) == sorted(names[:-2])
        for path, resource in resources.items():
            data = archive.read(path)
            assert resource["hash"] == "sha256:" + hashlib.sha256(data).hexdigest(), path
            assert resource["bytes"] == len(data)
        digest = json.loads(archive.read("datapackage-digest.json"))
        assert (
            digest["hash"]
            == "sha256:" + hashlib.sha256(archive.read("datapackage.json")).hexdigest()
        )
        # The index: CDXJ in blocks, each found where index.idx says, naming its record.
        blocks = archive.read("indexes/index.cdx.gz")
        idx = archive.read("indexes/index.idx").decode().splitlines()
        assert json.loads(idx[0].split(" ", 2)[2])["format"] == "cdxj-gzip-1.0"
        assert len(idx) == 1 + 2  # two blocks of BLOCK_LINES at most
        lines: list[str] = []
        for line in idx[1:]:
            key, text = line.split(" {", 1)
            block = json.loads("{" + text)
            data = blocks[block["offset"] : block["offset"] + block["length"]]
            assert block["digest"] == "sha256:" + hashlib.sha256(data).hexdigest()
            chunk = gzip.decompress(data).decode().splitlines()
            assert chunk[0].startswith(key.split(" ")[0])
            lines += chunk
        assert lines == sorted(lines) and len(lines) == len(URLS)
        for line in lines[:5]:
            fields = json.loads(line.split(" ", 2)[2])
            with archive.open(f"archive/{fields['filename']}") as stream:
                stream.read(int(fields["offset"]))
                record = next(iter(ArchiveIterator(stream)))
                assert record.rec_headers.get_header("WARC-Target-URI") == fields["url"]
        pages = [json.loads(line) for line in archive.read("pages/pages.jsonl").splitlines()]
    assert pages[0] == {"format": "json-pages-1.0", "id": "pages", "title": "All Pages"}
    assert result.pages == len(pages) - 1 == len(URLS) - 1  # not the JSON file
    page = next(p for p in pages[1:] if p["url"] == "http://a.test/p7")
    assert page["title"] == "Title of http://a.test/p7" and page["ts"].endswith("Z")
    assert len({p["id"] for p in pages}) == len(pages)


def test_a_file_still_written_is_left_out_and_nothing_to_package_is_refused(tmp_path: Path):
    out = tmp_path / "out"
    with pytest.raises(NothingToPackage):
        write_wacz(out, tmp_path / "none.wacz")
    _crawl(out)
    last = sorted((out / "warc").glob("*.warc.gz"))[-1]  # named by this process: a live writer
    open_file = last.rename(last.with_name(last.name + ".open"))
    result = write_wacz(out, tmp_path / "crawl.wacz")
    assert result.skipped == [open_file.name] and open_file.name not in result.warcs
    assert not list(tmp_path.glob(".crawl.wacz.*"))  # written beside, renamed into place
