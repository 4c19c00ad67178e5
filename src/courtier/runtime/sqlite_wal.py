"""Switching a SQLite file to write-ahead logging when other processes may open it too.

``PRAGMA journal_mode=WAL`` takes the file for itself for a moment. When another connection
opens the same new file at that instant, SQLite answers "database is locked" at once: its
busy handler (the connection's timeout) is not asked there, since waiting could deadlock.
Three processes opening one limiter file together failed this way (a CI run;
6 threads opening a new file together: 12 of 100 trials). So the switch is asked again,
with a growing pause, until the connection's patience runs out.
"""

from __future__ import annotations

import sqlite3
import time

_FIRST_PAUSE = 0.005
_LONGEST_PAUSE = 0.1


def use_wal(db: sqlite3.Connection, patience: float) -> None:
    """Put ``db``'s file in WAL mode, asking again while another connection holds it."""
    deadline = time.monotonic() + patience
    pause = _FIRST_PAUSE
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            busy = "locked" in str(exc) or "busy" in str(exc)
            if not busy or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(_LONGEST_PAUSE, pause * 2)
