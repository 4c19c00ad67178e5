"""Whether a process still runs: a killed crawl not reaped yet has exited all the same."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from courtier.runtime.processes import running


def test_a_live_process_runs_and_a_killed_unreaped_one_does_not() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert running(child.pid)
        os.kill(child.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while running(child.pid) and time.monotonic() < deadline:
            time.sleep(0.01)  # not reaped: a zombie until wait()
        assert not running(child.pid)
        assert os.path.exists(f"/proc/{child.pid}")  # still there, as a zombie
    finally:
        child.kill()
        child.wait()
    assert not running(child.pid)
    assert running(os.getpid())
