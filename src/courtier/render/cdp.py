"""A Chrome DevTools Protocol connection over the browser's debugging pipe.

Rules:
- Messages are JSON objects, each ended by a NUL byte, on two pipes: commands to the browser,
  responses and events from it. No TCP port: any local process could drive a port.
- ``send`` waits for its own answer (matched by ``id``) and never longer than its
  ``timeout``; an error answer raises ``CdpError``.
- When the browser's pipe closes (exit, crash, kill), every pending ``send`` raises
  ``BrowserLost`` at once, and so does every later one: no call waits on a dead browser.
- Events go to the handler registered for their session (``None``: the browser's own);
  handlers run in the reader's callback, so they only note things and start tasks.
- Writes are buffered by the event loop's transport: a browser that stops reading never
  blocks the loop.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 10.0
"""Seconds a command waits for its answer unless told otherwise."""

EventHandler = Callable[[str, dict[str, Any]], None]
"""Called with an event's method and params."""


class CdpError(Exception):
    """The browser answered a command with an error."""

    def __init__(self, method: str, code: int, message: str) -> None:
        super().__init__(f"{method}: {message} ({code})")
        self.method = method
        self.code = code
        self.message = message


class BrowserLost(Exception):
    """The browser's pipe closed: it exited, crashed or was killed."""


class _Reader(asyncio.Protocol):
    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._buffer = bytearray()

    def data_received(self, data: bytes) -> None:
        # Scan only the new bytes for the terminator: a large message (a page's DOM) comes in
        # many chunks, and rescanning from the start would be quadratic.
        start = len(self._buffer)
        self._buffer += data
        end = self._buffer.find(b"\0", start)
        while end >= 0:
            message = bytes(self._buffer[:end])
            del self._buffer[: end + 1]
            self._connection._received(message)
            end = self._buffer.find(b"\0")

    def eof_received(self) -> bool | None:
        return None  # let the transport close

    def connection_lost(self, exc: Exception | None) -> None:
        self._connection._lost()


class Connection:
    """One CDP connection: built by ``open`` on the two pipe ends (in a running event loop),
    closed by ``close``."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[asyncio.Future[dict[str, Any]], str]] = {}
        self._handlers: dict[str | None, EventHandler] = {}
        self._writer: asyncio.WriteTransport | None = None
        self._reader: asyncio.ReadTransport | None = None
        self.lost = False
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        """Done when the pipe has closed: wait on it beside anything the browser should do."""

    @classmethod
    async def open(cls, read_fd: int, write_fd: int) -> Connection:
        """Take ownership of the two pipe ends (``read_fd``: the browser's messages)."""
        loop = asyncio.get_running_loop()
        connection = cls()
        os.set_blocking(read_fd, False)
        os.set_blocking(write_fd, False)
        read_file = os.fdopen(read_fd, "rb", buffering=0)
        write_file = os.fdopen(write_fd, "wb", buffering=0)
        try:
            connection._reader, _ = await loop.connect_read_pipe(
                lambda: _Reader(connection), read_file
            )
            connection._writer, _ = await loop.connect_write_pipe(asyncio.Protocol, write_file)
        except BaseException:
            read_file.close()
            write_file.close()
            raise
        return connection

    def on(self, session_id: str | None, handler: EventHandler) -> None:
        """Route the events of ``session_id`` (``None``: the browser's) to ``handler``."""
        self._handlers[session_id] = handler

    def off(self, session_id: str | None) -> None:
        self._handlers.pop(session_id, None)

    async def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        session_id: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,  # noqa: ASYNC109 -- each command its own bound
    ) -> dict[str, Any]:
        """The command's result; ``CdpError``, ``BrowserLost`` or ``TimeoutError``."""
        if self.lost or self._writer is None:
            raise BrowserLost(method)
        message_id = next(self._ids)
        message: dict[str, Any] = {"id": message_id, "method": method, "params": params or {}}
        if session_id is not None:
            message["sessionId"] = session_id
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[message_id] = (future, method)
        try:
            self._writer.write(json.dumps(message).encode() + b"\0")
            return await asyncio.wait_for(future, timeout)
        finally:
            self._pending.pop(message_id, None)

    def close(self) -> None:
        """Close both pipe ends; pending and later commands raise ``BrowserLost``."""
        # A transport that saw the pipe close has closed itself: closing it again would fail.
        if self._writer is not None and not self._writer.is_closing():
            self._writer.abort()
        if self._reader is not None and not self._reader.is_closing():
            self._reader.close()
        self._lost()

    def _received(self, raw: bytes) -> None:
        try:
            message = json.loads(raw)
        except ValueError:
            log.warning("CDP: a message that is not JSON (%d bytes)", len(raw))
            return
        if not isinstance(message, dict):
            return
        message_id = message.get("id")
        if message_id is not None:
            entry = self._pending.get(message_id)
            if entry is None or entry[0].done():
                return  # its caller stopped waiting (timeout, cancellation)
            future, method = entry
            error = message.get("error")
            if error is not None:
                future.set_exception(
                    CdpError(method, int(error.get("code", 0)), str(error.get("message", "")))
                )
            else:
                future.set_result(message.get("result") or {})
            return
        event = message.get("method")
        handler = self._handlers.get(message.get("sessionId"))
        if handler is None or not isinstance(event, str):
            return
        try:
            handler(event, message.get("params") or {})
        except Exception:
            # A handler's bug must not stop the reader: every other session would hang.
            log.exception("CDP: the handler of %s failed", event)

    def _lost(self) -> None:
        if self.lost:
            return
        self.lost = True
        for future, method in self._pending.values():
            if not future.done():
                future.set_exception(BrowserLost(method))
        self._pending.clear()
        self.closed.set_result(None)
