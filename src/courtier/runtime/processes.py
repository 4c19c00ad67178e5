"""Whether a process still runs: how leftovers of a killed crawl (spool directories, WARC
files left open) are told from those of one that is running."""

from __future__ import annotations

import os


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
