"""Bodies too big to hold in memory, kept in a spool file until their page is done.

A crawl has hundreds of requests in flight; with the body cap at 8 MiB, holding every body
in the crawl's process (and a pickled copy on its way to a parse worker) lets a few hosts of
big pages take gigabytes. So a body that grows past ``fetch.spool_bytes`` is written, chunk
by chunk as it arrives, to a file of its own, and the crawl's process holds only its name:
a ``SpooledBody``. The parse worker (or the archive's thread) reads the file itself
(``body_bytes``); the event loop never holds the bytes, and no body crosses a pipe.

Rules:
- One directory per crawl process: ``<out>/spool/<host>-<pid>`` (``processes.process_tag``:
  workers of a fleet sharing one output directory, each PID 1 of its container, never write
  into each other's), removed when the crawl ends. A directory this host's process left
  and no longer runs (a ``kill -9``) is removed when the next crawl on that output
  directory starts; another host's is left alone.
- A file lives as long as the ``SpooledBody`` its fetch made: it is unlinked when that object
  is collected (every copy sent to a worker is a name only and unlinks nothing).
- A spool that cannot be written (a full disk) is no reason to fail a fetch: the body goes
  on in memory, as it would without a spool (``Spool.failures`` counts it, with a warning).
- Nothing is computed over a body as it is written (an MD5 of every 8 MiB page would cost
  the event loop ~16 ms a page); whoever needs its digest reads the file, off the loop
  (``file_md5``).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import os
import shutil
import weakref
from pathlib import Path

from courtier.runtime.processes import left_by_us, parse_tag, process_tag

log = logging.getLogger("courtier.net.spool")


class SpooledBody:
    """A response body kept in a file: its name and size. Pickles as its name only."""

    __slots__ = ("__weakref__", "path", "size")

    def __init__(self, path: str, size: int) -> None:
        self.path = path
        self.size = size

    def read(self) -> bytes:
        with open(self.path, "rb") as file:
            return file.read()

    def __reduce__(self) -> tuple[type[SpooledBody], tuple[str, int]]:
        return (SpooledBody, (self.path, self.size))

    def __repr__(self) -> str:
        return f"SpooledBody({self.path!r}, {self.size} bytes)"


Body = bytes | SpooledBody
"""A body as the crawl's process holds it: the bytes, or the file that has them."""


def body_bytes(body: Body) -> bytes:
    """The bytes of a body (read from its file where it was spooled)."""
    return body.read() if isinstance(body, SpooledBody) else body


def body_size(body: Body) -> int:
    return body.size if isinstance(body, SpooledBody) else len(body)


def file_md5(body: SpooledBody) -> str:
    """The MD5 hex digest of a spooled body (blocking: run it in a thread; hashlib lets go
    of the GIL while it hashes)."""
    with open(body.path, "rb") as file:
        return hashlib.file_digest(file, lambda: hashlib.md5(usedforsecurity=False)).hexdigest()


def _unlink(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


class SpoolWriter:
    """One body being written to its spool file; ``close`` gives its ``SpooledBody``."""

    def __init__(self, file: io.RawIOBase, path: str) -> None:
        self._file = file
        self._path = path
        self._size = 0

    def write(self, chunk: bytes) -> bool:
        """False: the file could not be written (``take_back`` what it holds; the chunk
        counts as not written, whatever part of it reached the file)."""
        view = memoryview(chunk)
        try:
            while view:  # unbuffered: a write may take part of the chunk
                view = view[self._file.write(view) or 0 :]
        except OSError as exc:
            log.warning("spool file %s: %s; the body stays in memory", self._path, exc)
            return False
        self._size += len(chunk)
        return True

    def take_back(self) -> list[bytes]:
        """What was written, read back, and the file removed: writing failed. (A body that
        cannot be read back either ends the fetch with an error, ``OSError``.)"""
        with contextlib.suppress(OSError):
            self._file.close()
        try:
            with open(self._path, "rb") as file:
                held = file.read(self._size)
        finally:
            _unlink(self._path)
        if len(held) != self._size:
            raise OSError(f"spool file {self._path}: {len(held)} of {self._size} bytes read back")
        return [held]

    def close(self) -> SpooledBody:
        self._file.close()
        body = SpooledBody(self._path, self._size)
        weakref.finalize(body, _unlink, self._path)
        return body

    def abort(self) -> None:
        """The fetch failed: drop what was written."""
        with contextlib.suppress(OSError):
            self._file.close()
        _unlink(self._path)


class Spool:
    """Where a crawl's process keeps the bodies it spools (see the module's rules)."""

    def __init__(self, out_dir: Path, threshold: int) -> None:
        self.threshold = threshold
        """A body larger than this many bytes is spooled (0: never)."""
        self.root = out_dir / "spool"
        self.directory = self.root / process_tag()
        self._made = False
        self._count = 0
        self.failures = 0
        """Bodies kept in memory because the spool could not be written."""

    def open(self) -> SpoolWriter:
        if not self._made:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._made = True
        self._count += 1
        path = self.directory / f"{self._count}.body"
        return SpoolWriter(open(path, "wb", buffering=0), str(path))

    def start(self, held: list[bytes]) -> SpoolWriter | None:
        """A writer with ``held`` (the body so far) written, which is then emptied; None
        when the spool cannot be written (``held`` is left as it was)."""
        try:
            writer = self.open()
        except OSError as exc:
            self.failures += 1
            log.warning("spool %s: %s; bodies stay in memory", self.directory, exc)
            return None
        for chunk in held:
            if not writer.write(chunk):
                self.failures += 1
                writer.abort()
                return None
        held.clear()
        return writer

    def close(self) -> None:
        """Remove this process's spool directory (bodies still named are gone with it)."""
        if self._made:
            shutil.rmtree(self.directory, ignore_errors=True)
            self._made = False
        with contextlib.suppress(OSError):
            self.root.rmdir()  # only when no other process spools here

    def remove_orphans(self) -> None:
        """Remove the directories of this host's processes that no longer run (killed
        mid-crawl); called before this process spools anything."""
        with contextlib.suppress(OSError):
            for entry in self.root.iterdir():
                tag = parse_tag(entry.name)
                if tag is not None and entry.is_dir() and left_by_us(*tag):
                    shutil.rmtree(entry, ignore_errors=True)
