"""The worker process of a ``ParsePool``: warm up, say ready, answer jobs over a pipe.

Runs in a spawned process. A job is ``(fn, args, kwargs)`` pickled; the answer is
``("ok", result, None)`` or ``("error", exception, remote traceback)``. After a MemoryError the
worker takes no more jobs (the parent replaces it rather than keep a fragmented process) but
keeps its socket open until the parent closes it: jobs the parent sent ahead meet an open
socket, so the parent reads the MemoryError rather than a broken pipe. The optional address
space budget is set after the warm-up, so it limits what one job may add.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection


def worker_main(
    conn: Connection,
    warm_up: Callable[[], object] | None,
    max_memory_bytes: int | None,
    nice: int = 0,
) -> None:
    """A worker process: warm up, say ready, then answer jobs until the pipe closes."""
    # The parent handles Ctrl-C and stops the workers; BLAS threads are of no use here.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if nice > 0:
        with contextlib.suppress(AttributeError, OSError):  # no nice() here: run as we are
            os.nice(nice)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    try:
        if warm_up is not None:
            warm_up()
    except Exception:
        conn.send(("failed", traceback.format_exc()))
        return
    if max_memory_bytes is not None:
        _limit_address_space(max_memory_bytes)
    conn.send(("ready", os.getpid()))
    while True:
        try:
            message = conn.recv_bytes()
        except (EOFError, OSError):
            return
        try:
            fn, args, kwargs = pickle.loads(message)
            result = fn(*args, **kwargs)
        except Exception as exc:
            remote = traceback.format_exc()
            _send_error(conn, exc, remote)
            if isinstance(exc, MemoryError):
                _wait_for_close(conn)  # the parent replaces this worker
                return
            continue
        try:
            # pickle.dumps, not Connection.send's ForkingPickler (a BytesIO and a pickler
            # object a message): 13 against 17 us for a 6 KB page's answer.
            answer = pickle.dumps(("ok", result, None), pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # the result cannot be pickled
            _send_error(conn, exc, traceback.format_exc())
            continue
        conn.send_bytes(answer)


def _wait_for_close(conn: Connection) -> None:
    """Discard jobs until the parent closes the socket (it kills this process then)."""
    while True:
        try:
            conn.recv_bytes()
        except (EOFError, OSError):
            return


def _send_error(conn: Connection, exc: Exception, remote: str) -> None:
    try:
        conn.send(("error", exc, remote))
    except Exception:  # the exception itself cannot be pickled
        conn.send(("error", RuntimeError(f"{type(exc).__name__}: {exc}"), remote))


def _limit_address_space(budget: int) -> None:
    """Let this process's address space grow by ``budget`` bytes from here, no more."""
    try:
        import resource

        with open("/proc/self/statm") as statm:
            size = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = size + budget
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ImportError, OSError, ValueError):  # not Linux: no budget
        pass


def warm_up_parse(hook: str = "") -> None:
    """The default warm-up: import the readers (decoding, redaction, parser, PDF, feeds) and
    the parse hook (``[parse] hook``), read a page, load the language model (tens of MB: not
    charged to the first job's memory budget)."""
    import feedparser  # noqa: F401
    import pypdf  # noqa: F401

    from courtier.content.language import load_model
    from courtier.content.reading import ReadContext, read_page

    load_model()
    read_page(b"<title>warm-up</title><a href='/'>x</a>", "http://w.invalid/", ReadContext())
    if hook:
        from courtier.content.hook import load_hook

        load_hook(hook)
