"""WARC files left open by a writer that died are finished by the next crawl."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from courtier.runtime.processes import running
from courtier.sinks.warc import Capture, WarcFiles, compress_member
from courtier.sinks.warc_orphans import finish_orphans, whole_members_end

HTML = b"<html><title>t</title>" + b"<p>hello world</p>" * 500


def capture(payload: bytes) -> Capture:
    return Capture("http://a.test/p", time.time(), 200, (("Content-Type", "text/html"),), payload)


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _crashed_writer(directory: Path, pid: int, *, torn: bytes = b"") -> tuple[Path, list]:
    """A writer's file as a kill -9 leaves it: flushed records, maybe half of another one,
    named with ``pid``."""
    files = WarcFiles(directory)
    refs = [files.write(capture(payload=HTML + bytes([n]))) for n in range(3)]
    files.flush()
    assert files._file is not None
    files._file.write(torn)
    files._file.close()  # no rename: the writer is gone
    opened = directory / f"{refs[0].file}.open"
    named = opened.with_name(opened.name.replace(f"-{os.getpid()}.", f"-{pid}."))
    opened.rename(named)
    return named, refs


def _read_at(path: Path, offset: int) -> bytes:
    with path.open("rb") as stream:
        stream.seek(offset)
        return next(iter(ArchiveIterator(stream))).content_stream().read()


def test_a_dead_writers_file_is_cut_after_its_last_whole_record_and_renamed(tmp_path: Path):
    torn = compress_member(b"WARC/1.1\r\n" + b"x" * 5000, 3)[:-40]
    opened, refs = _crashed_writer(tmp_path, _dead_pid(), torn=torn)
    whole = opened.stat().st_size - len(torn)
    assert whole_members_end(opened) == whole
    (finished,) = finish_orphans(tmp_path)
    assert finished == opened.with_name(opened.name.removesuffix(".open"))
    assert not opened.exists() and finished.stat().st_size == whole
    for n, ref in enumerate(refs):
        assert _read_at(finished, ref.offset) == HTML + bytes([n])
    with finished.open("rb") as stream:  # every record reads to the end
        assert len(list(ArchiveIterator(stream))) == 1 + 2 * len(refs)


def test_garbage_after_the_last_record_is_cut_too(tmp_path: Path):
    garbage = b"\x1f\x8b\x08 not gzip at all"
    opened, refs = _crashed_writer(tmp_path, _dead_pid(), torn=garbage)
    size = opened.stat().st_size
    (finished,) = finish_orphans(tmp_path)
    assert finished.stat().st_size == size - len(garbage)
    assert _read_at(finished, refs[-1].offset) == HTML + bytes([2])


def test_a_live_writers_file_and_files_of_no_writer_are_left_alone(tmp_path: Path):
    opened, _ = _crashed_writer(tmp_path, 1)  # pid 1 is alive
    stranger = tmp_path / "notes.warc.gz.open"
    stranger.write_bytes(b"not ours")
    empty = tmp_path / f"courtier-20260101000000000-00000-{_dead_pid()}.warc.gz.open"
    empty.write_bytes(b"\x1f\x8b")  # not one whole record
    assert finish_orphans(tmp_path) == []
    assert opened.exists() and stranger.exists() and empty.exists()
    assert finish_orphans(tmp_path / "nowhere") == []


def test_a_file_naming_this_process_is_an_earlier_process_s(tmp_path: Path):
    opened, _ = _crashed_writer(tmp_path, os.getpid())
    assert finish_orphans(tmp_path, alive=lambda pid: True) == [
        opened.with_name(opened.name.removesuffix(".open"))
    ]


def test_running():
    assert running(os.getpid()) and running(1)
    assert not running(_dead_pid())


def test_only_this_hosts_dead_writers_are_judged(tmp_path: Path):
    """Workers of a fleet share one directory, each as PID 1 of its own container: a file
    of another host is never this process's to finish, whatever its PID; one naming this
    host and this very PID was left by an earlier process (a container started again)."""
    from courtier.runtime.processes import host_tag

    theirs, _ = _crashed_writer(tmp_path, _dead_pid())
    elsewhere = theirs.with_name(theirs.name.replace(f"-{host_tag()}-", "-otherhost-"))
    theirs.rename(elsewhere)
    earlier, _ = _crashed_writer(tmp_path / "again", os.getpid())
    assert finish_orphans(tmp_path) == []
    assert elsewhere.exists()
    (finished,) = finish_orphans(tmp_path / "again")
    assert finished == earlier.with_name(earlier.name.removesuffix(".open"))
