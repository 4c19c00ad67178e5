"""One crawl per embedded store: the lock names its holder, dies with it, remembers a crash."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from courtier.pipeline.store_lock import StoreBusy, StoreLock

HOLD = """
import sys, time
from pathlib import Path
from courtier.pipeline.store_lock import StoreLock
lock = StoreLock(Path(sys.argv[1]))
lock.acquire()
print("held", flush=True)
time.sleep(60)
"""


def _holder(store: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(store)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "held"
    return proc


def _end(proc: subprocess.Popen[str]) -> None:
    proc.kill()
    proc.wait()
    assert proc.stdout is not None
    proc.stdout.close()


def test_a_second_crawl_is_refused_with_the_holders_pid(tmp_path: Path) -> None:
    store = tmp_path / "frontier.sqlite3"
    holder = _holder(store)
    try:
        with pytest.raises(StoreBusy, match=f"pid {holder.pid} on "):
            StoreLock(store).acquire()
    finally:
        _end(holder)


def test_a_killed_holder_frees_the_store_and_leaves_word_of_the_crash(tmp_path: Path) -> None:
    store = tmp_path / "frontier.sqlite3"
    holder = _holder(store)
    os.kill(holder.pid, signal.SIGKILL)
    _end(holder)
    lock = StoreLock(store)
    lock.acquire()  # at once: the kernel dropped the dead holder's lock
    assert lock.previous_run_crashed
    lock.release(clean=True)
    after = StoreLock(store)
    after.acquire()
    assert not after.previous_run_crashed
    after.release(clean=False)


def test_a_clean_stop_is_not_taken_for_a_crash(tmp_path: Path) -> None:
    store = tmp_path / "frontier.sqlite3"
    first = StoreLock(store)
    first.acquire()
    started = time.time()
    first.release(clean=True)
    second = StoreLock(store)
    second.acquire()
    assert not second.previous_run_crashed
    assert time.time() - started < 5
    second.release(clean=True)
