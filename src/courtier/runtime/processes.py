"""Whether a process still runs: how leftovers of a killed crawl (spool directories, WARC
files left open) are told from those of one that is running.

Workers of a fleet share one output directory, often each as PID 1 of its own container:
a PID alone names no process there. What a process leaves is named with its ``tag``, host
and PID, and only this host's leftovers are judged (``left_by_us``): another host's process
cannot be seen to run or not.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Callable
from functools import cache

_UNSAFE = re.compile(r"[^A-Za-z0-9_.]")


@cache
def host_tag() -> str:
    """This host's name as it goes into file names: no ``-`` (the tag's separator), never
    all digits (a PID is)."""
    name = _UNSAFE.sub("_", socket.gethostname()) or "host"
    return f"h{name}" if name.isdigit() else name


def process_tag() -> str:
    """``HOST-PID`` of this process."""
    return f"{host_tag()}-{os.getpid()}"


def parse_tag(text: str) -> tuple[str | None, int] | None:
    """(host, pid) of ``HOST-PID``, (None, pid) of a bare PID (names made before hosts were
    in them), None of anything else."""
    if text.isdigit():
        return None, int(text)
    host, _, pid = text.rpartition("-")
    if host and "-" not in host and not host.isdigit() and pid.isdigit():
        return host, int(pid)
    return None


def left_by_us(host: str | None, pid: int, *, alive: Callable[[int], bool] | None = None) -> bool:
    """Were files named (``host``, ``pid``) left by a process of this host that is gone?
    Asked before this process names any file: one naming its own host and PID was left by an
    earlier process (a container started again is PID 1 again). Another host's: never known."""
    if host is not None and host != host_tag():
        return False
    if pid == os.getpid():
        return True
    return not (alive or running)(pid)


def running(pid: int) -> bool:
    """Is there a process ``pid`` (of any user) that has not exited? A killed crawl stays a
    zombie until its parent reaps it (an init that reaps late, a shell that is gone): its
    files are left over all the same."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: it runs
        return True
    return not _exited(pid)


def _exited(pid: int) -> bool:
    """Whether ``pid`` is a zombie (exited, not reaped yet), as far as /proc tells."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rpartition(b")")[2].split()
    except OSError:  # no /proc (not Linux), or it just went: os.kill's answer stands
        return False
    return bool(fields) and fields[0] in (b"Z", b"X")
