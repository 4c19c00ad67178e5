"""One crawl per embedded store: a lock that names its holder and ends with it.

Rules:
- A crawl on a SQLite store holds an exclusive ``flock`` on ``<store>.lock`` for its whole
  run. A second crawl on the same store is refused at once with a message naming the
  process that holds it (pid, host, start time, command); it never runs beside it with a
  second set of clocks.
- The kernel drops the lock when its holder dies, however it dies (SIGKILL included), so a
  crashed crawl never blocks the next one.
- The lock file records ``running`` while a crawl holds it and ``stopped`` after a clean
  stop. A new crawl that finds ``running`` in an unlocked file knows the last run did not
  stop cleanly (``previous_run_crashed``): its clocks were not saved at the end, so the
  engine rebuilds them conservatively.
- ``running_crawl`` tells who runs a crawl on a store without taking the lock (a lock taken
  only to look would refuse a crawl starting at that moment): the file's ``running`` record,
  whose process still runs on this machine (another machine's cannot be checked: it counts).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import IO, Any

from courtier.runtime.processes import running


class StoreBusy(RuntimeError):
    """Another crawl holds the store."""


class StoreLock:
    def __init__(self, store_path: Path) -> None:
        self.path = store_path.with_name(store_path.name + ".lock")
        self._file: IO[str] | None = None
        self.previous_run_crashed = False

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = self.path.open("a+", encoding="utf-8")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = _read(handle.read())
            handle.close()
            raise StoreBusy(f"the store is in use by another crawl: {_describe(holder)}") from None
        handle.seek(0)
        self.previous_run_crashed = _read(handle.read()).get("state") == "running"
        self._file = handle
        self._write("running")

    def _write(self, state: str) -> None:
        assert self._file is not None
        record = {
            "state": state,
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "command": " ".join(sys.argv)[:500],
        }
        self._file.seek(0)
        self._file.truncate()
        self._file.write(json.dumps(record) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def release(self, *, clean: bool) -> None:
        """Unlock; ``clean``: the run saved its clocks (the next one may trust them)."""
        if self._file is None:
            return
        with contextlib.suppress(OSError):
            if clean:
                self._write("stopped")
        self._file.close()  # closing the descriptor drops the flock
        self._file = None


def _read(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _describe(holder: dict[str, Any]) -> str:
    if not holder:
        return "a process whose details are not recorded"
    return (
        f"pid {holder.get('pid')} on {holder.get('host')}, started {holder.get('started')} "
        f"({holder.get('command')})"
    )


def running_crawl(store_path: Path) -> str | None:
    """Who runs a crawl on the store now, as ``StoreBusy`` names it; None when no crawl
    does, as far as the lock file and this machine tell (see the module's rules)."""
    path = store_path.with_name(store_path.name + ".lock")
    try:
        holder = _read(path.read_text(encoding="utf-8"))
    except OSError:
        return None
    if holder.get("state") != "running":
        return None
    pid = holder.get("pid")
    if holder.get("host") == socket.gethostname() and (
        not isinstance(pid, int) or not running(pid)
    ):
        return None  # a crawl that did not stop cleanly: nobody holds the store now
    return _describe(holder)
