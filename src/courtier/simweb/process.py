"""A simulated web in a subprocess (`python -m courtier.simweb serve`), for the demo and tests.

    with SimWebProcess(workdir, WorldParams(seed=2)) as web:
        crawl(seeds=web.seeds_path, dns=web.dns, allow_net=web.allow_net)
    audit(web.log_path, web.world)

The server runs in its own process so that its event loop and CPU are not the crawler's.
When the crawler saturates the machine's cores, the server can still be kept off the run
queue for ~100 ms at a time, then stamps a burst of requests that arrived spaced as if they
came together (the request log is the audit's ground truth: a 1 s site spacing showed as
0.92 s). ``nice`` raises its priority for that (negative values need privilege; without it the
priority is left as it is): the simulated servers stand for machines of their own.
Start-up waits for the info file the server writes once it listens; stop sends SIGTERM, which
makes the server flush its request log and exit, and kills it if it does not within a timeout.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import IO

import courtier
from courtier.simweb.world import World, WorldParams, build_world

START_TIMEOUT = 60.0
SERVER_NICE = -5
"""The priority the demo and the crawl benchmarks give the server (see the module docs)."""
STOP_TIMEOUT = 15.0
_POLL = 0.05


class SimWebError(RuntimeError):
    pass


class SimWebProcess:
    def __init__(
        self,
        workdir: Path,
        params: WorldParams | None = None,
        *,
        block: int | None = None,
        port: int | None = None,
        start_timeout: float = START_TIMEOUT,
        nice: int = 0,
    ) -> None:
        self.workdir = workdir
        self.nice = nice
        self.params = params or WorldParams()
        self.block = block
        self.port_requested = port
        self.start_timeout = start_timeout
        self.info_path = workdir / "simweb-info.json"
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        self._info: dict[str, object] | None = None
        self._world: World | None = None

    # -- what the server told us -----------------------------------------------------------------

    @property
    def info(self) -> dict[str, object]:
        if self._info is None:
            raise SimWebError("the simulated web has not started")
        return self._info

    @property
    def dns(self) -> str:
        """`127.B.255.53:PORT`, the DNS server to resolve through."""
        return str(self.info["dns"])

    @property
    def allow_net(self) -> str:
        return str(self.info["allow_net"])

    @property
    def port(self) -> int:
        return int(str(self.info["port"]))

    @property
    def seeds_path(self) -> Path:
        return Path(str(self.info["seeds"]))

    @property
    def log_path(self) -> Path:
        return Path(str(self.info["log"]))

    @property
    def world(self) -> World:
        if self._world is None:
            self._world = build_world(self.params)
        return self._world

    # -- lifecycle -------------------------------------------------------------------------------

    def __enter__(self) -> SimWebProcess:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def command(self) -> list[str]:
        cmd = [
            sys.executable,
            "-m",
            "courtier.simweb",
            "serve",
            "--world",
            json.dumps(self.params.to_json()),
            "--info",
            str(self.info_path),
            "--log",
            str(self.workdir / "simweb-requests.jsonl"),
            "--seeds",
            str(self.workdir / "simweb-seeds.txt"),
        ]
        if self.block is not None:
            cmd += ["--block", str(self.block)]
        if self.port_requested is not None:
            cmd += ["--port", str(self.port_requested)]
        return cmd

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.info_path.unlink(missing_ok=True)
        self._stderr = (self.workdir / "simweb-stderr.log").open("wb")
        self._process = subprocess.Popen(
            self.command(),
            stdout=subprocess.DEVNULL,
            stderr=self._stderr,
            env=_env_with_package_on_path(),
        )
        if self.nice:
            # Unprivileged, a negative value is refused: the server keeps the caller's priority.
            with contextlib.suppress(PermissionError):
                os.setpriority(os.PRIO_PROCESS, self._process.pid, self.nice)
        deadline = time.monotonic() + self.start_timeout
        while not self.info_path.exists():
            if self._process.poll() is not None:
                self._close_stderr()
                raise SimWebError(
                    f"simweb serve exited with {self._process.returncode}: {self._stderr_tail()}"
                )
            if time.monotonic() > deadline:
                self.stop()
                raise SimWebError(f"simweb serve did not start in {self.start_timeout:g}s")
            time.sleep(_POLL)
        self._info = json.loads(self.info_path.read_text())

    def stop(self) -> int | None:
        """SIGTERM, wait for the log to be flushed; kill after STOP_TIMEOUT. The exit code."""
        process = self._process
        if process is None:
            return None
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._close_stderr()
        return process.returncode

    def _close_stderr(self) -> None:
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def _stderr_tail(self) -> str:
        text = (self.workdir / "simweb-stderr.log").read_text(errors="replace")
        return text[-2000:]


def _env_with_package_on_path() -> dict[str, str]:
    """The child must import this same courtier, installed or run from a source tree."""
    env = dict(os.environ)
    source_root = str(Path(courtier.__file__).resolve().parent.parent)
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if source_root not in paths:
        env["PYTHONPATH"] = os.pathsep.join([source_root, *paths])
    return env
