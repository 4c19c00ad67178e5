"""One headless Chromium process, driven over its debugging pipe, that reaches no network.

Rules:
- Every request a page makes is paused and handed to the crawler (``Fetch`` interception,
  in ``courtier.render.page``). What interception cannot see is turned off here, and what it
  might miss goes nowhere: every host name resolves to NOTFOUND, every URL (loopback and IP
  literals included) goes to a proxy whose own name does not resolve, WebRTC may use no
  UDP of its own, and each document loses WebSocket, WebTransport, RTCPeerConnection,
  SharedWorker and ``navigator.serviceWorker`` before its first script runs
  (``NO_NETWORK_SCRIPT``).
- Background traffic (updates, sync, metrics, crash reports, safe browsing) is off by flag,
  and goes nowhere if a flag misses some.
- No GPU: pages are composited in software inside the browser process.
- A fresh temporary profile per process, removed when it is closed.
- ``--no-sandbox`` only when running as root (Chromium refuses to start otherwise); a
  warning says so once.
- The process runs under a small reaper (``_reaper.py``) in a session of its own: the reaper
  reaps every process Chromium leaves, and kills them all if the crawler dies. ``close``
  kills Chromium's process group (SIGKILL: the profile is thrown away, nothing to save) and
  reaps the reaper; no call waits on the browser without a timeout.
- Its memory is the RSS summed over the process tree (reaper, browser and descendants), read
  from /proc; file-backed pages apart, as every process maps the same executable.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from courtier.render.cdp import Connection

log = logging.getLogger(__name__)

STARTUP_TIMEOUT = 20.0
"""Seconds a browser has to answer its first command."""
REAP_TIMEOUT = 5.0
"""Seconds the reaper has to reap a killed browser before it is killed itself."""
CANDIDATES = ("chromium", "chromium-browser", "google-chrome")
_REAPER = Path(__file__).with_name("_reaper.py")
_NOWHERE_PROXY = "http://proxy.invalid:9"
"""A proxy name that resolves nowhere under ``MAP * ~NOTFOUND``: a request that would have
left through it fails before any packet is sent (an address, even 0.0.0.0, would be dialled)."""
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")

NO_NETWORK_SCRIPT = """(() => {
  const drop = (owner, name) => {
    if (!owner) return;
    try { delete owner[name]; } catch (e) {}
    try {
      Object.defineProperty(owner, name, {value: undefined, writable: false, configurable: false});
    } catch (e) {}
  };
  for (const name of ["WebSocket", "WebSocketStream", "WebTransport", "RTCPeerConnection",
                      "webkitRTCPeerConnection", "RTCDataChannel", "RTCRtpSender", "RTCRtpReceiver",
                      "RTCIceTransport", "RTCDtlsTransport", "RTCSctpTransport", "SharedWorker"]) {
    drop(globalThis, name);
  }
  if (globalThis.Navigator) drop(Navigator.prototype, "serviceWorker");
  if (globalThis.navigator) drop(navigator, "serviceWorker");
})();"""
"""Evaluated in every document before its own scripts (Page.addScriptToEvaluateOnNewDocument):
what Fetch interception cannot pause is not there to call."""

_warned_root = False


def find_chromium(configured: str | None) -> str | None:
    """The configured executable (a path, or a name on PATH), else the first of
    ``CANDIDATES`` on PATH; None when there is none."""
    if configured:
        return shutil.which(configured)
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


def chromium_flags(user_data_dir: str, *, as_root: bool) -> list[str]:
    flags = [
        "--headless=new",
        "--remote-debugging-pipe",
        f"--user-data-dir={user_data_dir}",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-default-apps",
        "--disable-extensions",
        # Debian's build starts its crash handler all the same (it double-forks out of the
        # browser's group): the reaper, whose orphan it becomes, kills and reaps it.
        "--disable-crash-reporter",
        "--disable-breakpad",
        "--disable-domain-reliability",
        "--disable-client-side-phishing-detection",
        "--disable-notifications",
        "--deny-permission-prompts",
        "--no-pings",
        "--no-service-autorun",
        "--metrics-recording-only",
        "--password-store=basic",
        "--mute-audio",
        # No GPU here: Chromium would composite every page through SwiftShader in a GPU
        # process of its own, three times the CPU of a render (bench/bench_render.py).
        "--disable-gpu",
        "--in-process-gpu",
        "--disable-software-rasterizer",
        "--disable-gpu-compositing",
        "--disable-hang-monitor",
        # A render's page is one of several windows, none in front: its timers and frames run
        # at full rate whatever Chromium makes of its visibility.
        "--disable-background-timer-throttling",
        "--disable-renderer-backgrounding",
        "--disable-backgrounding-occluded-windows",
        "--disable-features=Translate,MediaRouter,DialMediaRouteProvider,OptimizationHints,"
        "AutofillServerCommunication,CertificateTransparencyComponentUpdater,"
        "InterestFeedContentSuggestions,DnsOverHttps,"
        # The omnibox popup's WebUI: a renderer of its own in every headless browser.
        "WebUIOmniboxPopup,WebUIOmniboxAimPopup",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        f"--proxy-server={_NOWHERE_PROXY}",
        "--proxy-bypass-list=<-loopback>",  # loopback too goes to the proxy
        "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
        "--log-level=2",
    ]
    if as_root:
        flags.append("--no-sandbox")
    flags.append("about:blank")
    return flags


@dataclass(frozen=True, slots=True)
class Usage:
    rss: int
    """Resident bytes not backed by files (anonymous and shared memory), summed over the
    process tree: what the pages cost."""
    rss_files: int
    """Resident file-backed bytes, summed: mostly the one Chromium executable, which every
    process maps, so counted once per process (a dozen times)."""
    cpu_seconds: float
    """User and system CPU of the tree's live processes and of the children they reaped."""


def _tree(root: int) -> tuple[set[int], dict[int, list[bytes]]]:
    """``root`` and all its descendants (from /proc), with each one's stat fields."""
    parents: dict[int, int] = {}
    stats: dict[int, list[bytes]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                # The command name may hold spaces and parentheses: fields follow the last ')'.
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue  # it exited while we read
        pid = int(name)
        parents[pid] = int(fields[1])
        stats[pid] = fields
    tree = {root} if root in stats else set()
    grew = True
    while grew:
        grown = {pid for pid, parent in parents.items() if parent in tree} - tree
        tree |= grown
        grew = bool(grown)
    return tree, stats


def renice_tree(root: int, nice: int) -> None:
    """Every thread of ``root``'s tree at niceness ``nice`` at least. Chromium sets its own
    threads' priorities (as root it raises some), and starts a renderer process for each
    page: inheriting the reaper's niceness is not enough, so this is done again and again."""
    tree, _stats = _tree(root)
    for pid in tree:
        try:
            threads = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in map(int, threads):
            with contextlib.suppress(OSError):
                if os.getpriority(os.PRIO_PROCESS, tid) < nice:
                    os.setpriority(os.PRIO_PROCESS, tid, nice)


def tree_usage(root: int) -> Usage:
    """Memory and CPU of ``root`` and all its descendants, from /proc (zero when gone)."""
    tree, stats = _tree(root)
    rss = rss_files = ticks = 0
    for pid in tree:
        # After the ")": state=0 ppid=1 ... utime=11 stime=12 cutime=13 cstime=14
        ticks += sum(int(stats[pid][i]) for i in (11, 12, 13, 14))
        try:
            with open(f"/proc/{pid}/status", "rb") as status:
                for line in status:
                    if line.startswith((b"RssAnon:", b"RssShmem:")):
                        rss += int(line.split()[1]) * 1024
                    elif line.startswith(b"RssFile:"):
                        rss_files += int(line.split()[1]) * 1024
        except (OSError, IndexError, ValueError):
            continue
    return Usage(rss=rss, rss_files=rss_files, cpu_seconds=ticks / _CLOCK_TICKS)


def _children(pid: int) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError), open(f"/proc/{name}/stat", "rb") as stat:
            if int(stat.read().rsplit(b")", 1)[1].split()[1]) == pid:
                found.append(int(name))
    return found


class BrowserStartError(Exception):
    """Chromium did not start, or did not answer its first command in time."""


class Browser:
    """A running Chromium: ``launch`` it, drive it through ``connection``, ``close`` it."""

    def __init__(self, reaper: int, connection: Connection, directory: str) -> None:
        self.reaper = reaper
        """The reaper's PID: the root of the process tree, leader of its session."""
        self.pid = 0
        """Chromium's browser process (leader of the process group ``close`` kills)."""
        self.connection = connection
        self.directory = directory
        self._closed = False

    @classmethod
    async def launch(
        cls, executable: str, *, startup_timeout: float = STARTUP_TIMEOUT, nice: int = 0
    ) -> Browser:
        as_root = os.geteuid() == 0
        _warn_root_once(as_root)
        directory = tempfile.mkdtemp(prefix="courtier-chromium-")
        profile = os.path.join(directory, "profile")
        env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
        # Whatever Chromium writes outside its profile (caches, crash database) stays in the
        # directory removed at close.
        env["XDG_CONFIG_HOME"] = env["XDG_CACHE_HOME"] = directory
        env["COURTIER_RENDER_NICE"] = str(max(0, nice))
        argv = [sys.executable, "-I", "-S", str(_REAPER), str(os.getpid()), directory, executable]
        argv += chromium_flags(profile, as_root=as_root)
        to_browser_r, to_browser_w = os.pipe()
        from_browser_r, from_browser_w = os.pipe()
        # Above fd 4, so that dup2 onto 3 and 4 cannot overwrite one end with the other.
        high_r = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD_CLOEXEC, 10)
        high_w = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD_CLOEXEC, 10)
        log_path = os.path.join(directory, "stderr.log")
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
        try:
            # Returns once the reaper is exec'd (vfork): no wait worth a thread.
            reaper = os.posix_spawn(  # noqa: ASYNC221
                sys.executable,
                argv,
                env,
                file_actions=[
                    (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                    (os.POSIX_SPAWN_OPEN, 1, log_path, flags, 0o600),
                    (os.POSIX_SPAWN_DUP2, 1, 2),
                    (os.POSIX_SPAWN_DUP2, high_r, 3),
                    (os.POSIX_SPAWN_DUP2, high_w, 4),
                ],
                setsid=True,
            )
        except OSError as error:
            for fd in (to_browser_r, to_browser_w, from_browser_r, from_browser_w):
                os.close(fd)
            shutil.rmtree(directory, ignore_errors=True)
            raise BrowserStartError(f"{executable}: {error}") from error
        finally:
            os.close(high_r)
            os.close(high_w)
        os.close(to_browser_r)
        os.close(from_browser_w)
        try:
            connection = await Connection.open(from_browser_r, to_browser_w)
        except BaseException:
            _abandon(reaper, directory)
            raise
        browser = cls(reaper, connection, directory)
        try:
            await connection.send("Browser.getVersion", timeout=startup_timeout)
        except BaseException as error:
            said = browser.stderr_tail()
            await browser.close()  # cancelled too: a browser started is a browser killed
            if isinstance(error, Exception):
                raise BrowserStartError(
                    f"{executable} did not start ({error!r}): {said}"
                ) from error
            raise
        # Chromium leads the process group the reaper gave it (anything else reparented to
        # the reaper by then, a crash handler, does not).
        for child in _children(reaper):
            with contextlib.suppress(ProcessLookupError):
                if os.getpgid(child) == child:
                    browser.pid = child
        return browser

    @property
    def alive(self) -> bool:
        return not self._closed and not self.connection.lost

    def usage(self) -> Usage:
        return tree_usage(self.reaper)

    async def close(self) -> None:
        """Kill the browser and everything it started, reap, remove its profile."""
        if self._closed:
            return
        self._closed = True
        self.connection.close()
        if self.pid:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)
        else:
            self._signal_reaper(signal.SIGTERM)
        if not await self._reaped(REAP_TIMEOUT):
            log.warning("render: browser reaper %d did not exit; killing it", self.reaper)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.reaper, signal.SIGKILL)
            if self.pid:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.pid, signal.SIGKILL)
            await self._reaped(REAP_TIMEOUT)
        await asyncio.to_thread(shutil.rmtree, self.directory, True)

    def stderr_tail(self, limit: int = 2000) -> str:
        try:
            with open(os.path.join(self.directory, "stderr.log"), "rb") as file:
                file.seek(0, os.SEEK_END)
                file.seek(max(0, file.tell() - limit))
                return file.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def _signal_reaper(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(self.reaper, signum)

    async def _reaped(self, within: float) -> bool:
        deadline = time.monotonic() + within
        delay = 0.005
        while True:
            try:
                pid, _status = os.waitpid(self.reaper, os.WNOHANG)  # noqa: ASYNC222 (WNOHANG)
            except ChildProcessError:
                return True  # reaped already (by us, or by whoever reaps every child)
            if pid:
                return True
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.1)


def _abandon(reaper: int, directory: str) -> None:
    """Stop a browser that never got a connection: rare, so a short blocking wait."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(reaper, signal.SIGTERM)  # the reaper kills Chromium's group, reaps it, exits
    deadline = time.monotonic() + REAP_TIMEOUT
    with contextlib.suppress(ChildProcessError):
        while not os.waitpid(reaper, os.WNOHANG)[0]:
            if time.monotonic() > deadline:
                os.killpg(reaper, signal.SIGKILL)
                break
            time.sleep(0.01)
    shutil.rmtree(directory, ignore_errors=True)


def _warn_root_once(as_root: bool) -> None:
    global _warned_root
    if as_root and not _warned_root:
        _warned_root = True
        log.warning(
            "render: running as root, so Chromium runs without its sandbox (--no-sandbox); "
            "run the crawler as an ordinary user to keep it"
        )
