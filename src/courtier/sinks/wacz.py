"""A crawl's archive as one WACZ file (Web Archive Collection Zipped, format 1.1.1), the
package ReplayWeb.page, pywb and py-wacz open.

Rules:
- **Layout** (a ZIP, ZIP64 when it needs to be): ``archive/`` every finished WARC file of
  ``OUT/warc/``, *stored* (not deflated: a replay reads a record by its offset, with an HTTP
  range request); ``indexes/index.cdx.gz``, the CDXJ index (``courtier.sinks.cdxj``'s lines,
  SURT-sorted) as ZipNum blocks of ``BLOCK_LINES`` lines, each its own gzip member, stored;
  ``indexes/index.idx``, the first key, offset, length and sha256 of each block (webrecorder's
  ``cdxj-indexer`` writes both, as py-wacz does); ``pages/pages.jsonl``, the pages a replay
  lists; ``datapackage.json``, every other file's path, ``sha256:`` hash and size (a Frictionless
  data package, ``wacz_version`` 1.1.1); ``datapackage-digest.json``, the hash of that.
- **Only finished WARC files**, as ``courtier index``: a file a live crawl still writes
  (``.open``) is left out (named in the result), one a crashed writer left is finished first
  (``warc_orphans``). A file whose reading stopped at a damaged record keeps its whole records.
- **Pages** are the index's 200 answers of HTML (``text/html``, ``application/xhtml+xml``):
  ``url``, ``ts`` (the capture's time, RFC 3339), ``title`` from the document that names the
  record (``warc`` file and offset; documents of every segment and an older
  ``documents.jsonl``), and an ``id`` made of both (the same capture, the same id).
- **Written beside its name** and renamed into place: a reader never sees half a package.
"""

from __future__ import annotations

import hashlib
import heapq
import io
import json
import os
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Final

from courtier import __version__
from courtier.runtime.processes import running
from courtier.sinks.cdxj import finished_warcs, index_lines
from courtier.sinks.documents import read_documents
from courtier.sinks.warc_orphans import finish_orphans

WACZ_VERSION: Final = "1.1.1"
BLOCK_LINES: Final = 300
"""CDXJ lines per ZipNum block (cdxj-indexer's and py-wacz's default)."""
INDEX: Final = "indexes/index.cdx.gz"
INDEX_IDX: Final = "indexes/index.idx"
PAGES: Final = "pages/pages.jsonl"
PAGE_TYPES: Final = ("text/html", "application/xhtml+xml")
_CHUNK: Final = 1 << 20


@dataclass(slots=True)
class WaczResult:
    path: Path
    warcs: list[str] = field(default_factory=list)
    """The WARC files packaged, by name."""
    records: int = 0
    """CDXJ lines of the index (response and revisit records)."""
    pages: int = 0
    skipped: list[str] = field(default_factory=list)
    """``.open`` files left out: a live writer's."""
    damaged: dict[str, str] = field(default_factory=dict)
    """Files whose reading stopped early (name: why); their whole records are in."""
    resources: list[dict[str, Any]] = field(default_factory=list)
    """``datapackage.json``'s resources."""


class NothingToPackage(ValueError):
    """No finished WARC file: a WACZ holds at least one."""


class _Hashing:
    """A binary stream that counts and hashes (sha256) what goes through it."""

    def __init__(self, out: IO[bytes]) -> None:
        self.out, self.size, self.hasher = out, 0, hashlib.sha256()

    def write(self, data: bytes) -> int:
        self.hasher.update(data)
        self.size += len(data)
        self.out.write(data)
        return len(data)

    def resource(self, path: str) -> dict[str, Any]:
        name = path.rsplit("/", 1)[-1].lower()
        digest = "sha256:" + self.hasher.hexdigest()
        return {"name": name, "path": path, "hash": digest, "bytes": self.size}


def _entry(path: str, stored: bool) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(path, datetime.now(UTC).timetuple()[:6])
    info.compress_type = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
    return info


def _put(archive: zipfile.ZipFile, path: str, data: bytes, result: WaczResult) -> None:
    with archive.open(_entry(path, stored=False), "w") as stream:
        hashing = _Hashing(stream)
        hashing.write(data)
    result.resources.append(hashing.resource(path))


def _titles(out_dir: Path) -> dict[tuple[str, int], str]:
    """The title of each page document, by the record it names (file, offset)."""
    titles: dict[tuple[str, int], str] = {}
    for document in read_documents(out_dir):
        ref, title = document.get("warc"), document.get("title")
        if isinstance(ref, dict) and isinstance(title, str) and title:
            titles[str(ref.get("file")), int(ref.get("offset", -1))] = title
    return titles


def _iso(stamp: str) -> str:
    """A CDXJ timestamp (14 digits) as RFC 3339 UTC."""
    return f"{stamp[0:4]}-{stamp[4:6]}-{stamp[6:8]}T{stamp[8:10]}:{stamp[10:12]}:{stamp[12:14]}Z"


def _page(line: str, titles: dict[tuple[str, int], str]) -> dict[str, Any] | None:
    _key, stamp, text = line.split(" ", 2)
    fields = json.loads(text)
    mime = str(fields.get("mime", "")).split(";")[0].strip().lower()
    if mime not in PAGE_TYPES or str(fields.get("status")) != "200":
        return None
    url = fields["url"]
    ts = _iso(stamp)
    page: dict[str, Any] = {
        "id": hashlib.sha256(f"{ts} {url}".encode()).hexdigest()[:32],
        "url": url,
        "ts": ts,
    }
    title = titles.get((fields.get("filename", ""), int(fields.get("offset", -1))))
    if title is not None:
        page["title"] = title
    return page


def _index_lines(warcs: list[Path], result: WaczResult) -> Iterator[str]:
    per_file: list[list[str]] = []
    for path in warcs:
        lines, error = index_lines(path)
        if error is not None:
            result.damaged[path.name] = error
        per_file.append(lines)
    return heapq.merge(*per_file)


def _write_index(
    archive: zipfile.ZipFile,
    lines: Iterator[str],
    titles: dict[tuple[str, int], str],
    result: WaczResult,
) -> list[dict[str, Any]]:
    """The ZipNum index and its .idx; the pages seen on the way."""
    from cdxj_indexer.main import CompressedWriter  # imported by `courtier wacz` only

    pages: list[dict[str, Any]] = []
    idx = io.StringIO()
    with archive.open(_entry(INDEX, stored=True), "w", force_zip64=True) as stream:
        hashing = _Hashing(stream)
        writer = CompressedWriter(
            idx,
            data_out=hashing,
            num_lines=BLOCK_LINES,
            data_out_name=INDEX.rsplit("/", 1)[-1],
            digest_records=True,
        )
        for line in lines:
            writer.write(line + "\n")
            result.records += 1
            page = _page(line, titles)
            if page is not None:
                pages.append(page)
        if writer.block:
            writer.flush()
    result.resources.append(hashing.resource(INDEX))
    _put(archive, INDEX_IDX, idx.getvalue().encode(), result)
    return pages


def write_wacz(
    out_dir: Path,
    target: Path,
    *,
    title: str | None = None,
    alive: Callable[[int], bool] = running,
) -> WaczResult:
    """Package ``out_dir``'s finished WARC files as ``target`` (see the module rules); raises
    ``NothingToPackage`` without one."""
    directory = out_dir / "warc"
    finish_orphans(directory, alive=alive, writing=True)
    warcs = finished_warcs(directory) if directory.is_dir() else []
    if not warcs:
        raise NothingToPackage(f"{directory}: no finished WARC file")
    result = WaczResult(target)
    result.skipped = sorted(path.name for path in directory.glob("*.warc.gz.open"))
    titles = _titles(out_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, partial = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    os.close(handle)
    try:
        with zipfile.ZipFile(partial, "w", allowZip64=True) as archive:
            for path in warcs:
                name = f"archive/{path.name}"
                with (
                    path.open("rb") as source,
                    archive.open(_entry(name, stored=True), "w", force_zip64=True) as out,
                ):
                    hashing = _Hashing(out)
                    while chunk := source.read(_CHUNK):
                        hashing.write(chunk)
                result.resources.append(hashing.resource(name))
                result.warcs.append(path.name)
            pages = _write_index(archive, _index_lines(warcs, result), titles, result)
            header = {"format": "json-pages-1.0", "id": "pages", "title": "All Pages"}
            body = "".join(json.dumps(p, ensure_ascii=False) + "\n" for p in [header, *pages])
            _put(archive, PAGES, body.encode(), result)
            result.pages = len(pages)
            package = {
                "profile": "data-package",
                "resources": result.resources,
                "created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "wacz_version": WACZ_VERSION,
                "software": f"courtier/{__version__}",
                **({"title": title} if title else {}),
            }
            data = json.dumps(package, indent=2).encode()
            archive.writestr(_entry("datapackage.json", stored=False), data)
            digest = {
                "path": "datapackage.json",
                "hash": "sha256:" + hashlib.sha256(data).hexdigest(),
            }
            archive.writestr(
                _entry("datapackage-digest.json", stored=False),
                json.dumps(digest, indent=2).encode(),
            )
        os.replace(partial, target)
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise
    return result
