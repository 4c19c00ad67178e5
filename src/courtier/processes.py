"""Whether a process still runs: how leftovers of a killed crawl (spool directories, WARC
files left open) are told from those of one that is running."""

from __future__ import annotations

import os


def running(pid: int) -> bool:
    """Is there a process ``pid`` (of any user)?"""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: it runs
        return True
    return True
