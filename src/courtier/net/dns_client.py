"""A small asyncio stub resolver: single questions, shared sockets, a TTL cache.

Why not dnspython's resolver: per query it builds a socket, a transport, a message object
graph and an answer object, about 400 microseconds of interpreter time on the crawl's event
loop. Here a question is a few callbacks: no task, no transport, one reply parse
(``bench/bench_dns.py`` measures both). dnspython still reads /etc/resolv.conf.

Rules:

- ``ask(questions)`` asks every ``(name, type)`` at once and returns, in order, a
  ``CachedReply`` or a ``QueryError`` for each; ``query(name, type)`` asks one and raises.
  Codes: ``timeout``, ``dns-error``, ``invalid-host``. Nothing else escapes (cancellation
  apart).
- Nameservers are asked in order, each at most ``TRIES_PER_NAMESERVER`` times within
  ``timeout``, so one lost datagram is retried. NOERROR and NXDOMAIN replies are answers; any
  other rcode, or a socket error, takes that nameserver out for the question. A truncated
  reply is asked again over TCP.
- A datagram is taken as the reply only when it comes from the nameserver asked, carries the
  question's random id and repeats its question; anything else (garbage included) is ignored
  and the wait goes on, as dnspython does, so a forged packet cannot end a lookup.
- Questions in flight share one UDP socket per address family, told apart by id. A socket
  takes at most ``QUERIES_PER_SOCKET`` questions and is closed as soon as none waits on it,
  so source ports keep changing (an off-path forger must guess port and id) and no socket
  outlives the burst that needed it.
- Answers (NOERROR, NXDOMAIN) are cached per (name, type): for the smallest TTL of their
  records, NXDOMAIN and answers without records for ``negative_ttl``; every TTL is capped at
  ``max_ttl`` and a TTL of 0 is not cached. At most ``max_entries`` answers, oldest out first.
  A hit reports the answer's age, so callers count TTLs down. Concurrent askers of one
  question share one exchange; one asker going away does not end it for the others.
- Caching cannot weaken the SSRF guard: the guard judges every address it is given, cached
  or not, and the fetcher connects only to the addresses the guard judged.
- Sockets are watched with ``loop.add_reader``: a selector event loop (the default on Linux,
  and uvloop) is required.
"""

from __future__ import annotations

import asyncio
import secrets
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from courtier.net.dns_wire import NOERROR, NXDOMAIN, Reply, WireError, encode_query, parse_reply

__all__ = ["QUERIES_PER_SOCKET", "TRIES_PER_NAMESERVER", "CachedReply", "DnsClient", "QueryError"]

QUERIES_PER_SOCKET = 256
"""Questions sent from one source port before a new socket takes over."""

TRIES_PER_NAMESERVER = 2
_READS_PER_WAKEUP = 64
_MAX_DATAGRAM = 65535

Server = tuple[str, int]


class QueryError(Exception):
    """No usable reply; ``code`` is ``timeout``, ``dns-error`` or ``invalid-host``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class CachedReply:
    """A reply and how many seconds ago it arrived (0 for a fresh one)."""

    reply: Reply
    age: float


@dataclass(frozen=True, slots=True)
class _Entry:
    reply: Reply
    stored_at: float
    expires_at: float


Outcome = CachedReply | QueryError


class _Socket:
    """One UDP socket and the exchanges waiting on it, read from the loop's selector."""

    __slots__ = ("client", "family", "loop", "retired", "sent", "sock", "waiting")

    def __init__(self, client: DnsClient, loop: asyncio.AbstractEventLoop, family: int) -> None:
        self.client = client
        self.loop = loop
        self.family = family
        self.sock = socket.socket(family, socket.SOCK_DGRAM)
        self.sock.setblocking(False)
        self.waiting: dict[int, _Exchange] = {}
        self.sent = 0
        self.retired = False
        loop.add_reader(self.sock.fileno(), self._readable)

    def register(self, exchange: _Exchange) -> int:
        ident = secrets.randbits(16)
        while ident in self.waiting:
            ident = secrets.randbits(16)
        self.waiting[ident] = exchange
        self.sent += 1
        if self.sent >= QUERIES_PER_SOCKET:
            self.retired = True
        return ident

    def release(self, ident: int) -> None:
        self.waiting.pop(ident, None)
        if not self.waiting:
            # Idle: close now, so no socket outlives the burst of questions that needed it.
            self.close()

    def close(self) -> None:
        if self.sock.fileno() >= 0:
            self.loop.remove_reader(self.sock.fileno())
            self.sock.close()
        self.retired = True

    def _readable(self) -> None:
        # Several replies are usually queued by the time the loop looks: read them all.
        for _ in range(_READS_PER_WAKEUP):
            try:
                data, addr = self.sock.recvfrom(_MAX_DATAGRAM)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                continue  # an ICMP error for some earlier datagram: the timer handles it
            if len(data) < 2:
                continue
            ident = data[0] << 8 | data[1]
            exchange = self.waiting.get(ident)
            if exchange is None or (addr[0], addr[1]) != exchange.server:
                continue
            try:
                reply = parse_reply(data, ident, exchange.name, exchange.qtype)
            except Exception:  # WireError, or a parser bug: never let a packet break the loop
                continue  # unreadable: wait on, a forged or broken packet must not end it
            if reply is not None:
                exchange.answered(reply)
                if self.retired and not self.waiting:
                    return  # closed: that was the last question on this socket


class _Exchange:
    """One question in flight: its tries, its timer, and whoever waits for the answer."""

    __slots__ = (
        "client",
        "deadline",
        "failed",
        "ident",
        "loop",
        "name",
        "packet",
        "qtype",
        "server",
        "socket",
        "timer",
        "tries",
        "waiters",
    )

    def __init__(
        self,
        client: DnsClient,
        loop: asyncio.AbstractEventLoop,
        name: str,
        qtype: int,
        packet: bytes,
    ) -> None:
        self.client = client
        self.loop = loop
        self.name = name
        self.qtype = qtype
        self.packet = packet  # the id (first two octets) is filled in per try
        self.deadline = loop.time() + client.timeout
        self.tries = [s for _ in range(TRIES_PER_NAMESERVER) for s in client.servers]
        self.failed: dict[Server, str] = {}
        self.waiters: list[asyncio.Future[Outcome]] = []
        self.server: Server = ("", 0)
        self.socket: _Socket | None = None
        self.ident = 0
        self.timer: asyncio.TimerHandle | None = None

    def send_next(self) -> None:
        """Send the next try, or end the exchange when none is left or time is up."""
        while self.tries:
            server = self.tries.pop(0)
            if server in self.failed:
                continue
            remaining = self.deadline - self.loop.time()
            if remaining <= 0:
                break
            left = 1 + sum(1 for s in self.tries if s not in self.failed)
            try:
                sock = self.client.socket_for(self.loop, server)
                self.ident = sock.register(self)
                self.socket, self.server = sock, server
                sock.sock.sendto(self.ident.to_bytes(2, "big") + self.packet, server)
            except OSError as error:
                self.forget_try()
                self.failed[server] = f"{type(error).__name__}: {error}"
                continue
            self.client.exchanges += 1
            self.timer = self.loop.call_later(remaining / left, self.timed_out)
            return
        self.fail()

    def forget_try(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.socket is not None:
            self.socket.release(self.ident)
            self.socket = None

    def timed_out(self) -> None:
        self.timer = None
        self.forget_try()
        self.send_next()

    def answered(self, reply: Reply) -> None:
        self.forget_try()
        if reply.truncated:
            task = self.loop.create_task(self._over_tcp(self.server))
            self.client.tcp_tasks.add(task)
            task.add_done_callback(self.client.tcp_tasks.discard)
        elif reply.rcode in (NOERROR, NXDOMAIN):
            self.client.finished(self, reply)
        else:
            self.failed[self.server] = f"rcode {reply.rcode}"
            self.send_next()

    async def _over_tcp(self, server: Server) -> None:
        try:
            reply = await _exchange_tcp(
                server, self.packet, self.name, self.qtype, self.deadline - self.loop.time()
            )
        except (OSError, WireError, TimeoutError, EOFError) as error:
            self.failed[server] = f"TCP: {type(error).__name__}: {error}"
            self.send_next()
            return
        if reply.rcode in (NOERROR, NXDOMAIN):
            self.client.finished(self, reply)
        else:
            self.failed[server] = f"rcode {reply.rcode}"
            self.send_next()

    def fail(self) -> None:
        if self.failed and len(self.failed) == len(self.client.servers):
            detail = "; ".join(f"{host}:{port} {why}" for (host, port), why in self.failed.items())
            error = QueryError("dns-error", f"every nameserver failed for {self.name}: {detail}")
        else:
            error = QueryError("timeout", f"no DNS answer for {self.name} in time")
        self.client.finished(self, error)

    def waiter_gone(self) -> None:
        """A waiter was cancelled: with nobody left, stop asking (and free the socket)."""
        if all(w.done() for w in self.waiters):
            self.forget_try()
            self.client.abandoned(self)


class DnsClient:
    """Asks nameservers single questions (see the module rules)."""

    def __init__(
        self,
        nameservers: Sequence[Server],
        *,
        timeout: float = 5.0,
        max_ttl: float = 3600.0,
        negative_ttl: float = 60.0,
        max_entries: int = 200_000,
        clock: Callable[[], float] = time.monotonic,
        config_error: str = "",
    ) -> None:
        if timeout <= 0 or max_entries < 1:
            raise ValueError("timeout must be > 0 and max_entries >= 1")
        self.servers = tuple(nameservers)
        self.timeout = timeout
        self._config_error = config_error or "no nameserver configured"
        self._max_ttl = max_ttl
        self._negative_ttl = negative_ttl
        self._max_entries = max_entries
        self._clock = clock
        self._cache: dict[tuple[str, int], _Entry] = {}
        self._inflight: dict[tuple[str, int], _Exchange] = {}
        self._sockets: dict[int, _Socket] = {}
        self.tcp_tasks: set[asyncio.Task[None]] = set()
        self.exchanges = 0
        """Datagrams sent to a nameserver (cache hits and shared waits send none)."""

    @property
    def has_nameservers(self) -> bool:
        return bool(self.servers)

    @property
    def config_error(self) -> str:
        """Why there is no nameserver to ask (empty when there is one)."""
        return "" if self.servers else self._config_error

    def cached(self, name: str, qtype: int) -> CachedReply | None:
        """The cached answer, if one is fresh; never asks the network."""
        entry = self._cache.get((name, qtype))
        if entry is None:
            return None
        now = self._clock()
        if now >= entry.expires_at:
            del self._cache[(name, qtype)]
            return None
        return CachedReply(entry.reply, now - entry.stored_at)

    async def query(self, name: str, qtype: int, *, fresh: bool = False) -> CachedReply:
        """The answer to one question; raises ``QueryError``."""
        (outcome,) = await self.ask(((name, qtype),), fresh=fresh)
        if isinstance(outcome, QueryError):
            raise outcome
        return outcome

    async def ask(
        self, questions: Sequence[tuple[str, int]], *, fresh: bool = False
    ) -> list[Outcome]:
        """Every question at once (see the rules); ``fresh`` skips the cache, though an
        exchange already under way is shared."""
        outcomes: list[Outcome | None] = []
        waiting: list[tuple[int, _Exchange, asyncio.Future[Outcome]]] = []
        loop: asyncio.AbstractEventLoop | None = None
        for name, qtype in questions:
            hit = None if fresh else self.cached(name, qtype)
            if hit is not None:
                outcomes.append(hit)
                continue
            loop = loop or asyncio.get_running_loop()
            exchange = self._inflight.get((name, qtype))
            new = exchange is None
            if exchange is None:
                started = self._exchange(loop, name, qtype)
                if isinstance(started, QueryError):
                    outcomes.append(started)
                    continue
                exchange = started
            future: asyncio.Future[Outcome] = loop.create_future()
            exchange.waiters.append(future)
            waiting.append((len(outcomes), exchange, future))
            outcomes.append(None)
            if new:
                exchange.send_next()  # after the waiter is in: a failure right away reaches it
        for index, _exchange, future in waiting:
            try:
                outcomes[index] = await future
            except asyncio.CancelledError:
                for _, other, other_future in waiting:
                    other_future.cancel()
                    other.waiter_gone()
                raise
        return [o for o in outcomes if o is not None]

    def _exchange(
        self, loop: asyncio.AbstractEventLoop, name: str, qtype: int
    ) -> _Exchange | QueryError:
        if not self.servers:
            return QueryError("dns-error", f"no DNS configuration: {self._config_error}")
        try:
            packet = encode_query(0, name, qtype)[2:]
        except WireError as error:
            return QueryError("invalid-host", f"{name!r} is not a DNS name: {error}")
        exchange = _Exchange(self, loop, name, qtype, packet)
        self._inflight[(name, qtype)] = exchange
        return exchange

    def socket_for(self, loop: asyncio.AbstractEventLoop, server: Server) -> _Socket:
        family = socket.AF_INET6 if ":" in server[0] else socket.AF_INET
        current = self._sockets.get(family)
        if current is None or current.retired or current.loop is not loop:
            current = _Socket(self, loop, family)
            self._sockets[family] = current
        return current

    def finished(self, exchange: _Exchange, outcome: Reply | QueryError) -> None:
        key = (exchange.name, exchange.qtype)
        if self._inflight.get(key) is exchange:
            del self._inflight[key]
        if isinstance(outcome, Reply):
            self._store(key, outcome)
            result: Outcome = CachedReply(outcome, 0.0)
            for waiter in exchange.waiters:
                if not waiter.done():
                    waiter.set_result(result)
            return
        for waiter in exchange.waiters:
            if not waiter.done():
                # A fresh exception per waiter: raising one instance piles up tracebacks.
                waiter.set_result(QueryError(outcome.code, str(outcome)))

    def abandoned(self, exchange: _Exchange) -> None:
        key = (exchange.name, exchange.qtype)
        if self._inflight.get(key) is exchange:
            del self._inflight[key]

    def _store(self, key: tuple[str, int], reply: Reply) -> None:
        ttl = self._negative_ttl
        if reply.rcode == NOERROR and reply.answer:
            ttl = min(r.ttl for r in reply.answer)
        ttl = min(ttl, self._max_ttl)
        if ttl <= 0:
            return
        now = self._clock()
        cache = self._cache
        cache.pop(key, None)
        cache[key] = _Entry(reply, now, now + ttl)
        if len(cache) > self._max_entries:
            del cache[next(iter(cache))]


async def _exchange_tcp(server: Server, packet: bytes, name: str, qtype: int, wait: float) -> Reply:
    """Ask once over TCP (after a truncated UDP reply)."""
    if wait <= 0:
        raise TimeoutError("no time left for TCP")
    ident = secrets.randbits(16)
    message = ident.to_bytes(2, "big") + packet
    async with asyncio.timeout(wait):
        reader, writer = await asyncio.open_connection(server[0], server[1])
        try:
            writer.write(len(message).to_bytes(2, "big") + message)
            length = int.from_bytes(await reader.readexactly(2), "big")
            data = await reader.readexactly(length)
        finally:
            writer.close()
    reply = parse_reply(data, ident, name, qtype)
    if reply is None or reply.truncated:
        raise WireError("the TCP reply does not answer the question")
    return reply
