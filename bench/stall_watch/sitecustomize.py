"""Loaded by the `courtier crawl` process that bench/bench_stalls.py starts (it puts this
directory on PYTHONPATH): a watchdog of the event loop's turns.

A loop timer beats every 5 ms; a thread samples the loop thread's stack whenever the beat
is over 30 ms late, and ``gc.callbacks`` time every collection. At exit each stall (its
length, when, the collections inside it and the innermost Courtier frames sampled) goes to
``$COURTIER_STALLS`` as JSON lines. Measurement only: nothing here changes what the crawl
does, but the sampling thread takes the GIL every 5 ms.
"""

from __future__ import annotations

import os
import sys

if "crawl" in sys.argv and os.environ.get("COURTIER_STALLS"):
    import asyncio
    import atexit
    import collections
    import gc
    import json
    import threading
    import time
    import traceback

    _main = threading.get_ident()
    _beat: list[float | None] = [None]
    _collections: list[tuple[float, float]] = []
    _began = [0.0]
    _stalls: list[tuple[float, float, list[str]]] = []

    def _timed(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            _began[0] = time.perf_counter()
        else:
            _collections.append((_began[0], time.perf_counter()))

    gc.callbacks.insert(0, _timed)

    def _where() -> str:
        frame = sys._current_frames().get(_main)
        if frame is None:
            return "?"
        stack = traceback.extract_stack(frame)
        ours = [f for f in stack if f"{os.sep}courtier{os.sep}" in f.filename]
        top = ours[-1] if ours else stack[-1]
        return f"{top.name} ({os.path.basename(top.filename)}:{top.lineno}) <- {stack[-1].name}"

    def _watch() -> None:
        stalled_since: float | None = None
        samples: list[str] = []
        while True:
            time.sleep(0.005)
            beat = _beat[0]
            if beat is None:
                continue
            if time.perf_counter() - beat > 0.03:
                if stalled_since != beat:
                    stalled_since, samples = beat, []
                samples.append(_where())
            elif stalled_since is not None and stalled_since != beat:
                _stalls.append((stalled_since, beat, samples))
                stalled_since = None

    threading.Thread(target=_watch, name="stall-watch", daemon=True).start()
    _run = asyncio.Runner.run

    def _run_watched(self: asyncio.Runner, coro: object, **kwargs: object) -> object:
        loop = self.get_loop()

        def beat() -> None:
            _beat[0] = time.perf_counter()
            loop.call_later(0.005, beat)

        loop.call_soon(beat)
        return _run(self, coro, **kwargs)  # type: ignore[arg-type]

    asyncio.Runner.run = _run_watched  # type: ignore[method-assign]

    def _dump() -> None:
        first = _stalls[0][0] if _stalls else 0.0
        with open(os.environ["COURTIER_STALLS"], "w") as out:
            for start, end, samples in _stalls:
                in_gc = sum(max(0.0, min(end, e) - max(start, s)) for s, e in _collections)
                record = {
                    "at_s": round(start - first, 3),
                    "ms": round(1000 * (end - start), 1),
                    "gc_ms": round(1000 * in_gc, 1),
                    "where": collections.Counter(samples).most_common(3),
                }
                out.write(json.dumps(record) + "\n")

    atexit.register(_dump)
