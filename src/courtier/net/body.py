"""A response body as it arrives: decoded, cut at the body limit, spooled past a threshold.

Rules:
- The limit counts decoded bytes (``fetch.max_body_bytes``): a compression bomb stops there,
  and the decoder is never asked for more than the limit leaves (``courtier.net.decoding``).
- Past the spool's threshold the body so far, then each piece, is written to a spool file
  (``courtier.net.spool``); a threshold of 0 never spools. A spool that fails to write is no
  reason to fail the fetch: what it held is taken back and the body stays in memory.
- ``add`` returns False once the limit is reached: the caller stops reading (and closes the
  connection: the rest is never read).
"""

from __future__ import annotations

from courtier.net.decoding import IDENTITY, Decoder
from courtier.net.spool import Spool, SpooledBody, SpoolWriter


class BodySink:
    __slots__ = ("_chunks", "_limit", "_spool", "_writer", "decoder", "size", "truncated")

    def __init__(self, limit: int, spool: Spool | None = None) -> None:
        self._limit = limit
        self._spool = spool if spool is not None and spool.threshold > 0 else None
        self._writer: SpoolWriter | None = None
        self._chunks: list[bytes] = []
        self.size = 0
        """Decoded bytes kept so far."""
        self.truncated = False
        self.decoder: Decoder = IDENTITY
        """Set when the response's headers name its Content-Encoding."""

    def add(self, data: bytes) -> bool:
        """Take one piece of the body as it came off the wire; False: the limit is reached."""
        left = self._limit - self.size
        chunk = self.decoder.decode(data, left + 1)
        if not chunk:
            return True
        if len(chunk) > left:
            chunk = chunk[:left]
            self.truncated = True
        self.size += len(chunk)
        spool = self._spool
        if self._writer is None and spool is not None and self.size > spool.threshold:
            self._chunks.append(chunk)
            self._writer = spool.start(self._chunks)
            if self._writer is None:  # it failed: the body stays in memory
                self._spool = None
            return not self.truncated
        writer = self._writer
        if writer is not None and not writer.write(chunk):
            assert spool is not None
            spool.failures += 1  # the disk failed us, not the server: go on in memory
            self._chunks, self._writer, self._spool = writer.take_back(), None, None
            writer = None
        if writer is None:
            self._chunks.append(chunk)
        return not self.truncated

    def finish(self) -> tuple[bytes, SpooledBody | None]:
        """(the body, or b"" and its spool file)."""
        if self._writer is not None:
            writer, self._writer = self._writer, None
            return b"", writer.close()
        chunks = self._chunks
        return (chunks[0] if len(chunks) == 1 else b"".join(chunks)), None

    def abort(self) -> None:
        """The fetch failed: drop the spool file, if one was begun."""
        if self._writer is not None:
            self._writer.abort()
            self._writer = None
