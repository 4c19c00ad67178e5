"""One HTTP/1.1 client connection: a request written, its response read within limits.

Rules:
- The response is parsed by llhttp (``httptools``) as it arrives, in the protocol's own
  callbacks: its headers, its framing (Content-Length, chunked, until the connection
  closes; no body for 1xx, 204 and 304; interim 1xx responses skipped) and its body, decoded
  and cut at the limit by a ``BodySink``. The caller awaits one future per request, resolved
  when the response is whole, cut, refused or failed: no task wakes per chunk.
- Parsing is llhttp's strict mode, with the leniencies browsers have: a bare LF ends a line,
  header values may hold any byte, spaces may follow a chunk size. Header bytes are decoded
  as UTF-8 with surrogate escapes (nothing is lost: the sinks write the bytes back).
- Limits: each header field (name and value) at most ``max_header_bytes``, at most
  ``max_headers`` fields, the whole head at most ``HEAD_LINES_ALLOWED`` fields' worth of
  bytes; a body limit counted after decoding (the sink). Breaking one is a
  ``ResponseError``; a body past its limit is cut (``truncated``) and the connection closed.
- Timeouts: the response must be whole by ``deadline`` (the fetch's total timeout) and the
  server may not be silent for ``read_timeout`` seconds in between; one timer a request.
- A connection carries one request at a time and never sends one twice: a server that hangs
  up is an error for this request (``ServerDisconnected``), not a reason to ask again. It is
  kept alive only when the response said so (HTTP/1.1, or 1.0 with keep-alive), was read to
  its end, and nothing came after it.
- A media type not in the allow-list is not downloaded: up to ``SKIPPED_BODY_BYTES`` of it
  are read past (to keep the connection), beyond that the connection is closed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httptools

from courtier.net.body import BodySink
from courtier.net.decoding import decoder_for

HEAD_LINES_ALLOWED = 8
"""The whole head may be this many ``max_header_bytes`` long (a megabyte-long head of short
lines is no page's)."""
SKIPPED_BODY_BYTES = 64 * 1024
"""Bytes of a refused media type read past, to keep the connection, before hanging up."""
_NO_BODY = (204, 304)
_TIMER_SLACK = 0.002
"""Seconds early a timeout may be declared (uvloop's clock and timers tick in milliseconds)."""


class ResponseError(ValueError):
    """The response breaks HTTP/1.1 or one of our limits."""


class ServerDisconnected(ConnectionError):
    """The server closed the connection before the response was whole."""


class ReadTimeout(TimeoutError):
    """The server was silent for longer than the read timeout."""


class TotalTimeout(TimeoutError):
    """The response was not whole within the fetch's total timeout."""


@dataclass(slots=True)
class Response:
    status: int
    headers: tuple[tuple[str, str], ...]
    headers_at: float
    """``time.perf_counter()`` when the head was read."""
    content_type: str
    location: str | None
    retry_after: str | None
    allowed: bool
    """The media type is one we read (otherwise the body was not downloaded)."""


class Http1Connection(asyncio.Protocol):
    """See the module rules. ``transport`` is set by the loop; uvloop's transports are not
    ``asyncio.Transport`` subclasses, so nothing here checks its type."""

    def __init__(self, address: str, max_header_bytes: int, max_headers: int) -> None:
        self.address = address
        self.address_known = True
        """False through a proxy that resolves the name: ``address`` is then only the
        checked address the pool keys it by, not the one the proxy connected to."""
        self.proxy: str | None = None
        """The proxy (``host:port``) whose tunnel carries the connection."""
        self.transport: Any = None
        self.peercert: dict[str, Any] | None = None
        self.peercert_der: bytes | None = None
        self.idle_since = 0.0
        """``time.monotonic()`` when it last went back to its pool."""
        self.lost = False
        self._max_field = max_header_bytes
        self._max_fields = max_headers
        self._max_head = max_header_bytes * HEAD_LINES_ALLOWED
        self._parser = httptools.HttpResponseParser(self)
        self._parser.set_dangerous_leniencies(
            lenient_headers=True,
            lenient_optional_cr_before_lf=True,
            lenient_spaces_after_chunk_size=True,
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        self._future: asyncio.Future[Response] | None = None
        self._sink: BodySink | None = None
        self._allowed: Callable[[str], bool] = _any_type
        self._timer: asyncio.TimerHandle | None = None
        self._deadline = 0.0
        self._read_timeout = 0.0
        self._heard = 0.0
        self._broken = False
        self._reset_message()

    def _reset_message(self) -> None:
        self._fields: list[tuple[bytes, bytes]] = []
        self._head_bytes = 0
        self._field_bytes = 0
        self._response: Response | None = None
        self._skipped = 0
        self._until_close = False
        self._keep_alive = False
        self._done = False

    # -- the caller's side -------------------------------------------------------------------

    def send(
        self,
        request: bytes,
        sink: BodySink,
        allowed: Callable[[str], bool],
        deadline: float,
        read_timeout: float,
    ) -> asyncio.Future[Response]:
        """Write ``request``; the future has the response once its body is in ``sink``.
        ``deadline`` is on the loop's clock."""
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        self._reset_message()
        future = self._future = loop.create_future()
        self._sink, self._allowed = sink, allowed
        now = loop.time()
        self._deadline, self._read_timeout, self._heard = deadline, read_timeout, now
        self._timer = loop.call_at(min(deadline, now + read_timeout), self._on_timer)
        self.transport.write(request)
        return future

    @property
    def reusable(self) -> bool:
        """May it carry another request (the last response was read whole, kept alive)?"""
        return self._done and self._keep_alive and not self._broken and not self.lost

    def close(self) -> None:
        self._broken = True
        if self.transport is not None:
            self.transport.close()

    def _settle(self, error: BaseException | None = None) -> None:
        """End the request: its response is whole (or cut, refused), or ``error``."""
        future, self._future = self._future, None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if future is None or future.done():
            return
        if error is not None:
            self._broken = True
            future.set_exception(error)
        else:
            assert self._response is not None
            future.set_result(self._response)

    def _fail(self, error: BaseException) -> None:
        self._settle(error)
        self.close()

    def _on_timer(self) -> None:
        self._timer = None
        loop = self._loop
        assert loop is not None
        now = loop.time() + _TIMER_SLACK  # a timer may fire a little before its time
        if now >= self._deadline:
            self._fail(TotalTimeout("the response was not whole within the total timeout"))
        elif now - self._heard >= self._read_timeout:
            self._fail(ReadTimeout(f"no data for {self._read_timeout:g} s"))
        else:
            wake = min(self._deadline, self._heard + self._read_timeout)
            self._timer = loop.call_at(wake, self._on_timer)

    # -- the transport's side ----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self._future is None:  # nothing asked for: a server talking out of turn
            self.close()
            return
        if self._response is None:
            self._head_bytes += len(data)
        loop = self._loop
        assert loop is not None
        self._heard = loop.time()
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserCallbackError as exc:
            cause = exc.__context__
            self._fail(cause if isinstance(cause, Exception) else ResponseError(str(exc)))
            return
        except httptools.HttpParserUpgrade:
            self._fail(ResponseError("the server switched protocols"))
            return
        except httptools.HttpParserError as exc:
            if self._done:  # bytes after a whole response: no keeping this connection
                self.close()
            else:
                self._fail(ResponseError(f"malformed response: {exc}"))
            return
        if self._response is None and self._head_bytes > self._max_head:
            self._fail(ResponseError(f"response head longer than {self._max_head} bytes"))

    def eof_received(self) -> bool | None:
        return None  # close the transport: connection_lost settles the request

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if self._future is None:
            return
        if self._response is not None and self._until_close and not self._done:
            self._done = True  # a body framed by the connection's end has ended
            self._settle()
        elif self._response is None:
            self._settle(ServerDisconnected("the server closed the connection without an answer"))
        else:
            self._settle(ServerDisconnected("the server closed the connection mid-body"))

    # -- llhttp's callbacks ------------------------------------------------------------------

    def on_message_begin(self) -> None:
        if self._future is None or self._done:
            raise ResponseError("a second response to one request")

    def on_header(self, name: bytes, value: bytes) -> None:
        fields = self._fields
        if len(fields) >= self._max_fields:
            raise ResponseError(f"more than {self._max_fields} header fields")
        size = len(name) + len(value)
        if size > self._max_field:
            raise ResponseError(f"a header field longer than {self._max_field} bytes")
        self._field_bytes += size
        if self._field_bytes > self._max_head:
            raise ResponseError(f"response head longer than {self._max_head} bytes")
        fields.append((name, value))

    def on_headers_complete(self) -> None:
        status = self._parser.get_status_code()
        if status < 100:
            raise ResponseError(f"a status below 100: {status}")
        if status < 200:
            self._fields = []  # an interim response (100 Continue): the answer follows
            return
        headers = tuple(
            (name.decode("utf-8", "surrogateescape"), value.decode("utf-8", "surrogateescape"))
            for name, value in self._fields
        )
        content_type = encoding = ""
        location = retry_after = None
        framed = status in _NO_BODY
        for name, value in headers:
            lower = name.lower()
            if lower == "content-type":
                content_type = content_type or value
            elif lower == "location":
                location = value if location is None else location
            elif lower == "retry-after":
                retry_after = value if retry_after is None else retry_after
            elif lower == "content-encoding":
                encoding = value
            elif lower == "content-length":
                framed = True
            elif lower == "transfer-encoding":
                framed = framed or value.rpartition(",")[2].strip().lower() == "chunked"
        allowed = self._allowed(content_type)
        self._response = Response(
            status,
            headers,
            time.perf_counter(),
            content_type,
            location,
            retry_after,
            allowed,
        )
        self._until_close = not framed
        if allowed and encoding and self._sink is not None:
            self._sink.decoder = decoder_for(encoding)

    def on_body(self, data: bytes) -> None:
        response, sink = self._response, self._sink
        if response is None or sink is None or self._future is None:
            return  # settled already (cut, or failed): the rest is not read
        if not response.allowed:
            self._skipped += len(data)
            if self._skipped > SKIPPED_BODY_BYTES:
                self._settle()
                self.close()
            return
        if not sink.add(data):  # cut at the body limit: the rest is not read
            self._settle()
            self.close()

    def on_message_complete(self) -> None:
        if self._response is None:
            return  # an interim response ended
        self._done = True
        self._keep_alive = self._parser.should_keep_alive()
        self._settle()


def _any_type(content_type: str) -> bool:
    return True
