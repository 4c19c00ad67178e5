"""WARC files a crashed writer left open, finished when the next crawl starts.

A writer renames ``NAME.open`` to ``NAME`` when it finishes a file (``courtier.sinks.warc``).
A kill -9 leaves the ``.open`` file, while the documents already name records in it by
the finished name (a document is written after the records it names), so those references
led nowhere. Before a crawl opens files of its own, each ``.open`` file whose writer is gone
(its name's host is this one and its PID no live process: ``processes.left_by_us``) is cut
after its last whole gzip member, which drops only a record the writer died while writing (no
document names it), and renamed. A file of a live writer, or of another host's (workers of a
fleet writing into one directory, each PID 1 of its container), is left as it is, and so is
one without a single whole member (nothing in it can be named). Document segments
(``courtier.sinks.documents``: ``documents-...jsonl.gz.open``, a gzip member per flush) are
finished the same way, by the same names (``suffix``).
"""

from __future__ import annotations

import logging
import os
import re
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Final

from courtier.runtime.processes import left_by_us, running

log = logging.getLogger("courtier.sinks.warc_orphans")

_OPEN_NAME: Final = r".+-(\d{5})-(?:([^-]+)-)?(\d+)"
"""PREFIX-STAMP-SERIAL-HOST-PID (HOST: before hosts were named, none), then the suffix."""
_CHUNK: Final = 1 << 20


def finish_orphans(
    directory: Path,
    *,
    alive: Callable[[int], bool] = running,
    writing: bool = False,
    suffix: str = ".warc.gz",
) -> list[Path]:
    """Finish the ``.open`` WARC files (``NAME{suffix}.open``) in ``directory`` whose writer
    is gone; the files finished. Call it before this process opens a file there (its own PID
    is not a writer yet, so a file naming it was left by an earlier process that had the same
    PID), or with ``writing``: this process may be writing there, its own files are left
    alone."""
    finished: list[Path] = []
    if not directory.is_dir():
        return finished
    pattern = re.compile(_OPEN_NAME + re.escape(suffix + ".open"))
    for path in sorted(directory.glob(f"*{suffix}.open")):
        match = pattern.fullmatch(path.name)
        if match is None:
            continue
        host, pid = match.group(2), int(match.group(3))
        if writing and pid == os.getpid():
            continue
        if not left_by_us(host, pid, alive=alive):
            continue
        target = path.with_name(path.name.removesuffix(".open"))
        if target.exists():
            log.warning("left %s as it is: its finished name is taken", path)
            continue
        try:
            end, size = whole_members_end(path), path.stat().st_size
            if end == 0:
                log.warning("left %s as it is: no whole record in it", path)
                continue
            if end < size:
                os.truncate(path, end)
            path.rename(target)
        except OSError as exc:
            log.warning("could not finish %s: %s", path, exc)
            continue
        log.info(
            "finished %s, left open by a writer that is gone (%d bytes cut)", target, size - end
        )
        finished.append(target)
    return finished


def whole_members_end(path: Path, start: int = 0) -> int:
    """The offset just after the last whole gzip member of those from ``start`` (a member's
    first byte) in ``path`` (``start``: none); what follows it is a member cut short, or not
    gzip at all."""
    end = consumed = start
    inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
    with path.open("rb") as file:
        file.seek(start)
        while chunk := file.read(_CHUNK):
            while chunk:
                try:
                    inflater.decompress(chunk)
                except zlib.error:
                    return end
                if not inflater.eof:
                    consumed += len(chunk)
                    break
                rest = inflater.unused_data
                consumed += len(chunk) - len(rest)
                end = consumed
                inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
                chunk = rest
    return end
