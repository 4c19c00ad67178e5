"""Tests that must have the machine to themselves while the suite runs on pytest-xdist workers.

Some tests measure how well the crawler keeps pace with the CPU it has: two normal hosts
beside 20 MB pages and compression bombs must keep 80% of their request rate. Another
worker's crawl on the same cores takes that CPU away, and the share they measure with it.
Such a test is marked ``alone`` (a module: ``pytestmark = pytest.mark.alone``): it starts
once the test another worker is running has ended, and no other test starts until it has
ended (its setup and teardown included, so a module's shared crawl counts).

Two ``flock`` files in the directory every worker's temporary directory is in make a
readers-writer lock that prefers writers: every test holds the room shared, an ``alone``
test holds it exclusively; a waiting ``alone`` test holds the gate, which a test takes
(shared) on its way in, so the others wait at the gate instead of starving it. Without
xdist (or without ``fcntl``) tests run one at a time anyway and nothing is locked.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO

try:
    import fcntl
except ImportError:  # not POSIX: no locks, and xdist runs may measure each other
    fcntl = None  # type: ignore[assignment]


class Turns:
    def __init__(self, directory: Path) -> None:
        self._gate: IO[bytes] = open(directory / "courtier-alone.gate", "ab")  # noqa: SIM115
        self._room: IO[bytes] = open(directory / "courtier-alone.room", "ab")  # noqa: SIM115
        self._alone = False
        """This worker has the room to itself (kept from one ``alone`` test to the next)."""

    @contextlib.contextmanager
    def turn(self, *, alone: bool, next_alone: bool = False) -> Iterator[None]:
        """Hold a turn for one test; ``next_alone``: the next test of this worker is ``alone``
        too, and keeps the room (the other worker's test in between would hold both up)."""
        assert fcntl is not None
        if alone:
            if not self._alone:
                fcntl.flock(self._gate, fcntl.LOCK_EX)
                fcntl.flock(self._room, fcntl.LOCK_EX)
                self._alone = True
            try:
                yield
            finally:
                if not next_alone:
                    self._alone = False
                    fcntl.flock(self._room, fcntl.LOCK_UN)
                    fcntl.flock(self._gate, fcntl.LOCK_UN)
            return
        fcntl.flock(self._gate, fcntl.LOCK_SH)
        try:
            fcntl.flock(self._room, fcntl.LOCK_SH)
        finally:
            fcntl.flock(self._gate, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(self._room, fcntl.LOCK_UN)

    def close(self) -> None:
        self._gate.close()
        self._room.close()


def turns_for(worker_basetemp: Path | None) -> Turns | None:
    """The turns of an xdist worker whose temporary directory is ``worker_basetemp`` (the
    workers' directories share a parent); None when not on a worker or without ``fcntl``."""
    if worker_basetemp is None or fcntl is None:
        return None
    return Turns(worker_basetemp.parent)
