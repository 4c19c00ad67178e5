"""A running simulated web: DNS server, HTTP servers and request log, in this process.

    async with SimWeb(build_world(WorldParams(seed=3)), log_path=tmp / "log.jsonl") as web:
        web.dns_address, web.allow_net, web.seed_urls()

Rules:
- The address block is chosen at random in 64..250 unless given; when a random block turns out
  to be taken (a bind fails), another is tried.
- The HTTP port is 80 when it can be bound (running as root, nothing else on it), otherwise a
  free high port found by binding the first server address to port 0; a given port is used as
  is. The same port is used on every address, the canary's included.
- The soft limit on open files is raised to the hard limit: a large world listens on thousands
  of sockets.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import random
import resource
import socket
import time
from pathlib import Path
from types import TracebackType

from courtier.simweb.dns import DnsAnswerer, start_dns
from courtier.simweb.http import Clock, SimHttp
from courtier.simweb.log import RequestLog
from courtier.simweb.network import MAX_SLOTS, Network
from courtier.simweb.stalls import LoopWatch, watch_loop
from courtier.simweb.world import CANARY_SLOT, World

log = logging.getLogger(__name__)

RANDOM_BLOCKS = (64, 250)
BLOCK_ATTEMPTS = 8
LOG_FLUSH_SECONDS = 1.0


def raise_open_file_limit() -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        return hard
    return soft


def _port_is_free(address: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((address, port))
        except OSError:
            return False
        return True


def _free_port(address: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((address, 0))
        port: int = probe.getsockname()[1]
        return port


class SimWeb:
    def __init__(
        self,
        world: World,
        *,
        block: int | None = None,
        port: int | None = None,
        log_path: Path | None = None,
        clock: Clock = time.time,
    ) -> None:
        if world.n_slots > MAX_SLOTS:
            raise ValueError(f"world needs {world.n_slots} servers; a block holds {MAX_SLOTS}")
        self.world = world
        self.log_path = log_path
        self._block = block
        self._port = port
        self._clock = clock
        self._network: Network | None = None
        self._http: SimHttp | None = None
        self._dns_transport: asyncio.DatagramTransport | None = None
        self._dns_port = 0
        self._log: RequestLog | None = None
        self._flusher: asyncio.Task[None] | None = None
        self._watcher: asyncio.Task[None] | None = None
        self.loop_watch = LoopWatch(clock())
        """The server loop's stalls, which make request stamps uncertain (``stalls``)."""

    # -- what a crawler needs to know ------------------------------------------------------------

    @property
    def network(self) -> Network:
        if self._network is None:
            raise RuntimeError("SimWeb is not running")
        return self._network

    @property
    def port(self) -> int:
        return self.network.port

    @property
    def allow_net(self) -> str:
        return self.network.allow_net

    @property
    def dns_address(self) -> tuple[str, int]:
        return self.network.dns_host, self._dns_port

    @property
    def requests_logged(self) -> int:
        return 0 if self._log is None else self._log.count

    def seed_urls(self) -> list[str]:
        return [f"{self.network.origin_url(host)}/" for host in self.world.seed_hosts]

    def address_of(self, host: str) -> str:
        """The first address the world's DNS gives `host` (rebinding: the in-net one)."""
        return self.network.address_of(self.world.sites[host].slots[0])

    def info(self) -> dict[str, object]:
        dns_host, dns_port = self.dns_address
        return {
            "dns": f"{dns_host}:{dns_port}",
            "allow_net": self.allow_net,
            "block": self.network.block,
            "port": self.port,
            "canary": self.network.canary_address,
            "log": None if self.log_path is None else str(self.log_path),
            "world": self.world.params.to_json(),
            "seed_count": len(self.world.seed_hosts),
            "started_at": None if self._http is None else self._http.started_at,
        }

    # -- lifecycle -------------------------------------------------------------------------------

    async def __aenter__(self) -> SimWeb:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    async def start(self) -> None:
        raise_open_file_limit()
        if self.log_path is not None:
            self._log = RequestLog(self.log_path)
        attempts = 1 if self._block is not None else BLOCK_ATTEMPTS
        for attempt in range(attempts):
            block = self._block if self._block is not None else random.randint(*RANDOM_BLOCKS)
            try:
                await self._start_on(block)
                break
            except OSError as exc:
                await self._close_servers()
                if attempt == attempts - 1 or exc.errno != errno.EADDRINUSE:
                    raise
                log.info("simweb: block 127.%d.0.0/16 is taken, trying another", block)
        self._flusher = asyncio.create_task(self._flush_periodically())
        self.loop_watch.woke(self._clock())  # binding thousands of sockets is no stall
        self._watcher = asyncio.create_task(watch_loop(self.loop_watch, self._clock))

    async def _start_on(self, block: int) -> None:
        first = Network(block, 80).address_of(0)
        port = self._port
        if port is None:
            port = 80 if _port_is_free(first, 80) else _free_port(first)
        network = Network(block, port)
        self._network = network
        self._http = SimHttp(self.world, network, self._log, self._clock, self.loop_watch)
        await self._http.listen([*range(self.world.n_slots), CANARY_SLOT], port)
        self._dns_transport = await start_dns(DnsAnswerer(self.world, network), network.dns_host)
        self._dns_port = self._dns_transport.get_extra_info("sockname")[1]

    async def stop(self) -> None:
        for task in (self._flusher, self._watcher):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        self._flusher = self._watcher = None
        await self._close_servers()
        if self._log is not None:
            self._log.close()

    async def _close_servers(self) -> None:
        if self._dns_transport is not None:
            self._dns_transport.close()
            self._dns_transport = None
        if self._http is not None:
            await self._http.close()
            self._http = None

    async def _flush_periodically(self) -> None:
        while True:
            await asyncio.sleep(LOG_FLUSH_SECONDS)
            if self._log is not None:
                self._log.flush()
