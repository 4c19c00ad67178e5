"""The browser's parent: starts Chromium, and reaps every process it leaves behind.

Run as a script (``python -I -S _reaper.py PARENT_PID DIRECTORY EXECUTABLE ARGS...``) by
``courtier.render.browser``, never imported by the crawler.

Rules:
- It is a child subreaper: whatever Chromium forks and orphans (its zygotes, renderers,
  crash handler) is reparented here, not to PID 1, which in a container is often a process
  that never reaps (the crawler itself): killed browsers would leave zombies there.
- Chromium runs in a process group of its own (its PID); killing that group kills the
  browser. Once the browser has exited, what remains of its group and every other orphan is
  killed and reaped, then the reaper exits.
- SIGTERM, or its parent's death (``PR_SET_PDEATHSIG``: the end of the thread that started
  it, the crawler's event loop), kills Chromium's group: a crawler that dies leaves no
  browser running, and no profile: the reaper then removes the browser's DIRECTORY (the
  crawler does it otherwise, having read what it wants there).
- Chromium runs at the niceness ``COURTIER_RENDER_NICE`` asks for (taken out of its
  environment): on busy cores the crawler's fetch loop runs before a page's scripts.
- The debugging pipe (fds 3 and 4) is Chromium's alone: the reaper closes its copies, so the
  crawler sees the pipe close when the browser goes.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import sys
import time

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


def _orphans() -> list[int]:
    """The processes reparented to us (their parent died) that have not been reaped."""
    me = os.getpid()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me:
            found.append(int(name))
    return found


def _kill(pid: int, group: bool) -> None:
    try:
        if group:
            os.killpg(pid, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def main(argv: list[str]) -> int:
    parent, directory, executable, args = int(argv[0]), argv[1], argv[2], argv[2:]
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:  # the crawler died before the death signal was armed
        shutil.rmtree(directory, ignore_errors=True)
        return 1
    spawned: list[int] = []
    stopping: list[bool] = []

    def stop(_signum: int, _frame: object) -> None:
        stopping.append(True)
        for pid in spawned:
            _kill(pid, group=True)

    signal.signal(signal.SIGTERM, stop)
    nice = os.environ.pop("COURTIER_RENDER_NICE", "0")
    if nice.isdigit() and int(nice):
        os.nice(int(nice))
    browser = os.posix_spawn(executable, args, os.environ, setpgroup=0)
    spawned.append(browser)
    if stopping:  # told to stop while it was being spawned
        _kill(browser, group=True)
    os.close(3)
    os.close(4)
    while True:
        try:
            pid, _status = os.wait()
        except ChildProcessError:
            return 0
        if pid == browser:
            break
    # The browser is gone: its group's stragglers and every orphan go too. A process killed
    # here may already have been reparented, or be reparented after the scan: keep going until
    # no child is left.
    while True:
        _kill(browser, group=True)
        for orphan in _orphans():
            _kill(orphan, group=False)
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            break
        time.sleep(0.02)
    if os.getppid() != parent:
        shutil.rmtree(directory, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
