"""Jobs the parse pool tests send to workers, in a module of their own: a worker imports the
module of a job's function on its first such job, inside the job's time budget. The test
module imports pytest (0.1-0.3 s, more on a loaded machine); this one only what it needs."""

from __future__ import annotations

import os
import time


def sleep_on(body: bytes, seconds: float) -> int:
    time.sleep(seconds)
    return len(body)


def pid_after(seconds: float) -> int:
    time.sleep(seconds)  # long enough that two jobs sent together land on two workers
    return os.getpid()


def out_of_memory() -> None:
    raise MemoryError("as a job that outgrew its budget")
