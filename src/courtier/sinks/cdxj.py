"""A CDXJ index of a crawl's WARC files, as pywb and OpenWayback read one.

Rules:
- **The format.** One line per ``response`` or ``revisit`` record (what a replay looks up;
  the ``request`` records and the ``conversion`` of a rendered DOM are not):
  ``SURT TIMESTAMP {"url", "mime", "status", "digest", "length", "offset", "filename"}``,
  the lines in byte order (``LC_ALL=C sort``), ``filename`` relative to the index's own
  directory. The lines are made by webrecorder's ``cdxj-indexer`` (the indexer pywb's
  ``wb-manager`` runs, over warcio's reader; SURT keys by ``surt``), so the index is the
  one pywb would build; this module chooses the files and writes the result.
- **Only finished files.** A ``.warc.gz.open`` file is a writer's current file: a live crawl
  is still appending to it (its last record may be half written) and it will be renamed,
  so an index naming it would point at a name that soon does not exist. It is left out,
  and indexed by the next run once the writer finished it. An ``.open`` file whose writer
  is gone (a crash) is finished first, as the next crawl would (``warc_orphans``; never
  one naming this process, which may be a crawl indexing its own directory).
- **Idempotent.** The index is rebuilt from every finished file each run, written to a
  temporary file and renamed over ``index.cdxj``: the same files give the same bytes, and a
  reader never sees half an index.
- **A damaged file loses only its damaged tail.** A file whose last record is cut short (a
  disk that filled mid-write) keeps the lines of its whole records; the file is reported
  (warcio stops at such a record without a word: the gzip members from the last record
  indexed to the end of the file are walked to tell).
"""

from __future__ import annotations

import heapq
import io
import json
import logging
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from courtier.runtime.processes import running
from courtier.sinks.warc_orphans import finish_orphans, whole_members_end

log = logging.getLogger(__name__)

INDEX_NAME: Final = "index.cdxj"
WARC_SUFFIXES: Final = (".warc.gz", ".warc")


@dataclass(slots=True)
class IndexResult:
    path: Path
    """The index written."""
    files: list[str] = field(default_factory=list)
    """The WARC files indexed, by name."""
    lines: int = 0
    skipped: list[str] = field(default_factory=list)
    """``.open`` files left out: a live writer's."""
    damaged: dict[str, str] = field(default_factory=dict)
    """Files whose reading stopped early (name: why); their whole records are indexed."""
    finished: list[str] = field(default_factory=list)
    """``.open`` files of writers that are gone, finished before indexing."""


def finished_warcs(directory: Path) -> list[Path]:
    """The finished WARC files in ``directory``, by name."""
    return sorted(
        path for path in directory.iterdir() if path.is_file() and path.name.endswith(WARC_SUFFIXES)
    )


def index_lines(path: Path) -> tuple[list[str], str | None]:
    """The CDXJ lines of one WARC file, sorted, and why its reading stopped early (None: it
    was read to its end)."""
    from cdxj_indexer.main import CDXJIndexer  # imported by `courtier index` only

    out = io.StringIO()
    indexer = CDXJIndexer(output=out, inputs=[str(path)])
    error: str | None = None
    try:
        indexer.process_all()
    except Exception as exc:  # warcio raises many kinds of error on a record cut short
        error = f"{type(exc).__name__}: {exc}"[:300]
    # Each line is written whole (one write), so a failure leaves no line cut short.
    lines = sorted(line for line in out.getvalue().splitlines() if line)
    return lines, error


def _offset(line: str) -> int:
    offset: str = json.loads(line.split(" ", 2)[2])["offset"]
    return int(offset)


def _cut_short(path: Path, last: int) -> str | None:
    """Why ``path`` ends in a record cut short (warcio stops there without a word), if it
    does; ``last``: the offset of its last record indexed (the members from there are
    walked)."""
    end, size = whole_members_end(path, last), path.stat().st_size
    if end < size:
        return f"{size - end} bytes after its last whole record"
    return None


def write_index(
    directory: Path,
    *,
    alive: Callable[[int], bool] = running,
    name: str = INDEX_NAME,
    progress: Callable[[int, int, str], None] | None = None,
) -> IndexResult:
    """Index the finished WARC files of ``directory`` into ``directory/name`` (see the
    module rules). ``progress(bytes_done, bytes_total, file_name)`` is called before each
    file is read, and once at the end."""
    finished = finish_orphans(directory, alive=alive, writing=True)
    result = IndexResult(directory / name, finished=[path.name for path in finished])
    result.skipped = sorted(path.name for path in directory.glob("*.warc.gz.open"))
    per_file: list[list[str]] = []
    paths = finished_warcs(directory)
    sizes = [_size(path) for path in paths]
    done, total = 0, sum(sizes)
    for path, size in zip(paths, sizes, strict=True):
        if progress is not None:
            progress(done, total, path.name)
        done += size
        lines, error = index_lines(path)
        if error is None and path.name.endswith(".gz"):
            error = _cut_short(path, max((_offset(line) for line in lines), default=0))
        if error is not None:
            log.warning("%s: read up to a damaged record (%s)", path.name, error)
            result.damaged[path.name] = error
        result.files.append(path.name)
        result.lines += len(lines)
        per_file.append(lines)
    if progress is not None:
        progress(total, total, name)
    handle, temporary = tempfile.mkstemp(prefix=f".{name}.", dir=directory)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as out:
            for line in heapq.merge(*per_file):
                out.write(line + "\n")
        os.replace(temporary, result.path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return result


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
